#!/usr/bin/env bash
# Runs both ranking sets (jest, mocha) with one embedding model and scores them.
#
#   tools/rankset/run.sh TAG MODEL [sextant eval arguments…]
#
# Corpora: git archives of the fetched repositories in $CORPORA/{jest,mocha}
# (default ~/.cache/sextant/corpora). Each model indexes into its own data directory
# ($RANK_DATA/<repo>-<model>, default /tmp/rankset-data), so a second run only
# searches. Results and logs go to $RANK_OUT (default /tmp/rankset-out); the scores
# are printed. SEXTANT names the binary (default: the debug build in CARGO_TARGET_DIR).
set -euo pipefail
TAG=$1; MODEL=$2; shift 2
HERE=$(cd "$(dirname "$0")" && pwd)
CORPORA=${CORPORA:-$HOME/.cache/sextant/corpora}
DATA=${RANK_DATA:-/tmp/rankset-data}
OUT=${RANK_OUT:-/tmp/rankset-out}
SEXTANT=${SEXTANT:-${CARGO_TARGET_DIR:-$HERE/../../target}/debug/sextant}
mkdir -p "$OUT"
for SET in jest mocha; do
  "$SEXTANT" --data-dir "$DATA/$SET-$MODEL" --embed-model "$MODEL" eval \
    --corpus "$CORPORA" --queries "$HERE/queries-$SET.jsonl" \
    --out "$OUT/$TAG-$SET.jsonl" "$@" 2> "$OUT/$TAG-$SET.log" \
    || { echo "sextant eval failed on $SET; see $OUT/$TAG-$SET.log" >&2; exit 1; }
  grep -h "p50" "$OUT/$TAG-$SET.log" >&2 || true
done
python3 "$HERE/score.py" "$OUT/$TAG-jest.jsonl" "$OUT/$TAG-mocha.jsonl" \
  --queries "$HERE/queries-jest.jsonl" "$HERE/queries-mocha.jsonl"
