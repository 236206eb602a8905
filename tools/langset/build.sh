#!/usr/bin/env bash
# Builds a docstring-derived development set for a Python, Go, Rust or Java corpus the way
# ../shared/eval builds rxjs's JSDoc set: the corpus (plain and documentation-stripped),
# the candidate list and a deterministic sample of N queries whose gold is the documented
# symbol (tools/langset/extract.py; sampling by ../shared/eval/tools/sample_jsdoc.py).
#
#   tools/langset/build.sh LANG SOURCE_DIR LABEL [DEST] [N]
#   e.g. tools/langset/build.sh python ~/src/rich-13.9.4 rich ~/.cache/sextant/corpora/langset 150
#
# Then: sextant eval --corpus DEST --queries DEST/queries-LABEL.jsonl --out R.jsonl
#       python3 ../shared/eval/score.py --results R.jsonl --queries DEST/queries-LABEL.jsonl
# Needs python3 with venv (py-tree-sitter and the four grammars come from PyPI into a
# cache). Refuses corpora listed in ../shared/eval/RESERVED.txt (by label or folder name).
set -euo pipefail
LANG_NAME=$1; SOURCE=$2; LABEL=$3
DEST=${4:-$HOME/.cache/sextant/corpora/langset}
N=${5:-150}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
EVAL=$(cd "$HERE/../shared/eval" && pwd)
export LC_ALL=C

# shellcheck source=../reserved.sh
. "$HERE/tools/reserved.sh"
# The label and the source folder's name without its version (`cobra-1.8.0` → `cobra`).
SOURCE_NAME=$(basename "$SOURCE"); SOURCE_NAME=${SOURCE_NAME%%-[0-9]*}
refuse_reserved langset "$LABEL"
refuse_reserved langset "${LABEL%%-[0-9]*}"
refuse_reserved langset "$SOURCE_NAME"

case "$LANG_NAME" in
  python) EXT='\.py$';; go) EXT='\.go$';; rust) EXT='\.rs$';; java) EXT='\.java$';;
  *) echo "langset: LANG is python, go, rust or java, not $LANG_NAME" >&2; exit 2;;
esac

VENV=${LANGSET_VENV:-$HOME/.cache/sextant/langset-venv}
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q tree-sitter==0.26.1 tree-sitter-python==0.25.0 \
    tree-sitter-go==0.25.0 tree-sitter-rust==0.24.2 tree-sitter-java==0.23.5
fi

mkdir -p "$DEST"; DEST=$(cd "$DEST" && pwd)
rm -rf "${DEST:?}/$LABEL" "${DEST:?}/$LABEL-stripped"
mkdir -p "$DEST/$LABEL"
( cd "$SOURCE" && find . -type f | sed 's|^\./||' | { grep -E "$EXT" || true; } \
    | { grep -vE '(^|/)(\.git|vendor|target|node_modules|build|dist)/' || true; } | sort ) > "$DEST/$LABEL.files"
if [ ! -s "$DEST/$LABEL.files" ]; then
  echo "langset: no $LANG_NAME files under $SOURCE (is it the corpus's root folder?)" >&2; exit 1
fi
( cd "$SOURCE" && tar -cf - -T "$DEST/$LABEL.files" ) | tar -xf - -C "$DEST/$LABEL" --no-same-owner
echo "langset: $LABEL: $(wc -l < "$DEST/$LABEL.files") files" >&2

"$VENV/bin/python" "$HERE/tools/langset/extract.py" "$LANG_NAME" "$DEST/$LABEL" "$LABEL" \
  "$DEST/candidates-$LABEL.jsonl" "$DEST/$LABEL-stripped"
python3 "$EVAL/tools/sample_jsdoc.py" --corpus-dir "$DEST" "$DEST/queries-$LABEL.jsonl" \
  "$DEST/candidates-$LABEL.jsonl" --n "$N"
echo "langset: $(wc -l < "$DEST/queries-$LABEL.jsonl") queries in $DEST/queries-$LABEL.jsonl" >&2
