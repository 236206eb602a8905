#!/usr/bin/env bash
# Builds a second JSDoc development set the way ../shared/eval builds rxjs's, from any
# non-reserved npm package: the corpus (plain and JSDoc-stripped), the candidate list and
# a deterministic sample of N queries whose gold is the documented symbol.
#
#   tools/devset/build.sh PKG VERSION LABEL [DEST] [N]
#   e.g. tools/devset/build.sh lodash 4.17.21 lodash ~/.cache/sextant/corpora/devset-lodash 150
#
# Then: sextant eval --corpus DEST --queries DEST/queries-LABEL.jsonl --out R.jsonl
#       python3 ../shared/eval/score.py --results R.jsonl --max-span 400
# Refuses packages listed in ../shared/eval/RESERVED.txt.
set -euo pipefail
PKG=$1; VERSION=$2; LABEL=$3
DEST=${4:-$HOME/.cache/sextant/corpora/devset-$LABEL}
N=${5:-150}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
EVAL=$(cd "$HERE/../shared/eval" && pwd)
export LC_ALL=C

# shellcheck source=../reserved.sh
. "$HERE/tools/reserved.sh"
refuse_reserved devset "$PKG"

mkdir -p "$DEST"; DEST=$(cd "$DEST" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack "$PKG@$VERSION" --loglevel=error > pack.out)
tgz=$(tail -n 1 "$tmp/pack.out")
mkdir -p "$tmp/x"; tar -xzf "$tmp/$tgz" -C "$tmp/x" --no-same-owner
src="$tmp/x/package"
( cd "$src" && find . -type f | sed 's|^\./||' | sort ) \
  | grep -E '(\.(ts|tsx|mts|cts|js|mjs|cjs)$|(^|/)package\.json$|(^|/)tsconfig[^/]*\.json$)' \
  | grep -vE '(^|/)(node_modules|dist|build|out|coverage|bundles|\.next)/' \
  | grep -vE '\.(min|d)\.[cm]?[jt]s$' > "$tmp/files.list"
rm -rf "${DEST:?}/$LABEL" "${DEST:?}/$LABEL-stripped"
mkdir -p "$DEST/$LABEL"
( cd "$src" && tar -cf - -T "$tmp/files.list" ) | tar -xf - -C "$DEST/$LABEL" --no-same-owner
echo "devset: $LABEL: $(wc -l < "$tmp/files.list") files" >&2

if [ -z "${TS_MODULE:-}" ]; then
  npm install --prefix "$tmp/ts" --no-save --no-package-lock --no-audit --no-fund --ignore-scripts \
    --loglevel=error typescript@5.9.3 > "$tmp/ts.log" 2>&1 || { cat "$tmp/ts.log" >&2; exit 1; }
  export TS_MODULE="$tmp/ts/node_modules/typescript"
fi
node "$EVAL/tools/extract_jsdoc.js" "$DEST/$LABEL" "$LABEL" "$DEST/candidates-$LABEL.jsonl" "$DEST/$LABEL-stripped"
python3 "$EVAL/tools/sample_jsdoc.py" --corpus-dir "$DEST" "$DEST/queries-$LABEL.jsonl" \
  "$DEST/candidates-$LABEL.jsonl" --n "$N"
# The queries run against the stripped corpus (no JSDoc to match word for word).
python3 - "$DEST/queries-$LABEL.jsonl" "$LABEL" <<'PY'
import json, sys
path, label = sys.argv[1], sys.argv[2]
rows = [json.loads(l) for l in open(path, encoding="utf-8")]
with open(path, "w", encoding="utf-8") as f:
    for r in rows:
        r.setdefault("corpus", label + "-stripped")
        f.write(json.dumps(r) + "\n")
PY
echo "devset: $(wc -l < "$DEST/queries-$LABEL.jsonl") queries in $DEST/queries-$LABEL.jsonl" >&2
