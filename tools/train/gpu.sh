#!/usr/bin/env bash
# Trains model v3's two candidates on a GPU machine and exports them to int8 ONNX:
#   bash tools/train/gpu.sh DIR OUT
# DIR holds pairs-all.jsonl.gz (mine.py + sources.py output, concatenated) and base/
# (bge-small-en-v1.5-int8: model.onnx, config.json, tokenizer.json). Needs python3 with
# torch, transformers, tokenizers, onnx and onnxruntime (the GPU image has them). Writes
# OUT/{a,b}.onnx.part-* (each model.onnx split in 15 MB pieces: `cat` them back) and
# OUT/meta.tgz (both runs' metrics.json and logs).
#   a: model v2's recipe (300 steps of 32, lowest 6 layers frozen, lr 3e-5, seed 13) on
#      the three registers, each pair with a negative mined by the starting model (ranks 3-30);
#   b: the same for 1,200 steps of 64, the test and module pairs taken three times each.
set -euo pipefail
DIR=$1; OUT=$2
HERE=$(cd "$(dirname "$0")" && pwd)
export PYTHONUNBUFFERED=1
gunzip -c "$DIR/pairs-all.jsonl.gz" > /tmp/pairs-all.jsonl
python3 -c 'import torch, transformers, onnx, onnxruntime; print("torch", torch.__version__, "cuda", torch.cuda.is_available(), "transformers", transformers.__version__, "onnxruntime", onnxruntime.__version__)'
run() {
  local name=$1; shift
  python3 "$HERE/train.py" --pairs /tmp/pairs-all.jsonl --base-onnx-dir "$DIR/base" --out "/tmp/run-$name" \
    --frozen-layers 6 --mine-negatives 3 30 --threads 8 "$@" 2>&1 | tee "/tmp/log-$name" | grep -v "step [0-9]*[1-9]/" || true
  cp "/tmp/run-$name/metrics.json" "/tmp/metrics-$name.json" 2>/dev/null || true
  [ -f "/tmp/run-$name/model.onnx" ] && split -b 15000000 -d "/tmp/run-$name/model.onnx" "$OUT/$name.onnx.part-"
}
run a --steps 300 --batch 32
run b --steps 1200 --batch 64 --repeat test=3 --repeat module=3
(cd /tmp && tar czf "$OUT/meta.tgz" metrics-*.json log-*)
ls -la "$OUT"
