#!/usr/bin/env bash
# Rebuilds models/sextant-code-static-v1: the static model distilled from Sextant's code
# model, then fitted to its vectors of real code (tools/train/static_fit.py).
#
#   tools/train/static_fit.sh WORK_DIR
#
# Needs: a data directory whose models/ and runtime/ hold sextant-code-small-v1-int8 and
# ONNX Runtime ($SEXTANT_DATA_DIR; `sextant --data-dir D model fetch` makes one), the
# corpora below (c1m's prometheus and sqlalchemy from tools/scale/c1m.sh under $C1M,
# apache/commons-io, and the crates in ~/.cargo/registry from a build of Sextant), python3
# with numpy, scipy and safetensors. ~25 min on 2 cores, most of it the transformer.
# Every corpus is outside ../shared/eval/RESERVED.txt and the development and ranking
# sets (rxjs, lodash-es, jest, mocha, oauthlib, attrs, afero, BurntSushi/toml, petgraph,
# junit4).
set -euo pipefail
WORK=$1
HERE=$(cd "$(dirname "$0")/../.." && pwd)
C1M=${C1M:-/tmp/scale/c1m}
: "${SEXTANT_DATA_DIR:?a data directory holding the code model}"
SEXTANT=${SEXTANT:-${CARGO_TARGET_DIR:-$HERE/target}/debug/sextant}
EXAMPLE=${EXAMPLE:-${CARGO_TARGET_DIR:-$HERE/target}/debug/examples/static_fit_data}
REGISTRY=$(ls -d "$HOME"/.cargo/registry/src/*/ | head -1)
mkdir -p "$WORK"
export LC_ALL=C

# The npm packages: the first 80 of model v1's list, permissive licences only.
mkdir -p "$WORK/npm"
head -80 "$HERE/tools/train/packages.txt" | while read -r spec; do
  dir="$WORK/npm/$(echo "$spec" | tr '/@' '__')"
  [ -d "$dir" ] && continue
  (cd "$WORK" && tgz=$(npm pack --silent "$spec" | tail -1) && mkdir -p "$dir" \
    && tar -xzf "$tgz" -C "$dir" --strip-components=1 && rm -f "$tgz")
  licence=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); l=d.get('license'); print(l if isinstance(l,str) else '')" "$dir/package.json")
  case "$licence" in MIT|ISC|0BSD|BSD-2-Clause|BSD-3-Clause|Apache-2.0|"(MIT OR CC0-1.0)") ;; *) rm -rf "$dir";; esac
done
# apache/commons-io's main sources (Java), at the commit recorded in the model card.
if [ ! -d "$WORK/java" ]; then
  mkdir -p "$WORK/java/commons-io"
  git -C "${COMMONS_IO:?a clone of apache/commons-io}" archive "${COMMONS_IO_COMMIT:-HEAD}" src/main \
    | tar -x -C "$WORK/java/commons-io"
fi

"$SEXTANT" --data-dir "$SEXTANT_DATA_DIR" model distill --from-local --out "$WORK/distilled"
export STATIC_MODEL_DIR=$WORK/distilled
"$EXAMPLE" "$WORK/a.bin" 8000 "$C1M/prometheus" "$C1M/sqlalchemy" "$WORK/npm" "$WORK/java"
"$EXAMPLE" "$WORK/b.bin" 700 $(for c in hyper-1.12.0 reqwest-0.13.5 rustls-0.23.46 h2-0.4.20 \
  sqlx-core-0.9.0 object_store-0.14.2 clap_builder-4.6.7 opentelemetry_sdk-0.33.1 \
  arrow-array-58.4.1 candle-core-0.11.1 git2-0.21.0 tower-0.5.3 rmcp-3.11.0; do echo "$REGISTRY$c"; done)
python3 "$HERE/tools/train/static_fit.py" "$WORK/a.bin" "$WORK/b.bin" --init "$WORK/distilled" \
  --out "$WORK/sextant-code-static-v1" --iters 40 --half
sha256sum "$WORK/sextant-code-static-v1"/*
