#!/usr/bin/env bash
# A worktree of a local repository tracked as a ref (issue 40): index a clone, add a
# worktree whose uncommitted work changes 10 files, track it and sync it, then sync both
# again unchanged. Prints the times and the data directory's size (docs/BENCHMARKS.md).
#
#   tools/refs-bench/worktree.sh SEXTANT CLONE WORKDIR STATIC_MODEL_DIR
set -euo pipefail
S=$1 CLONE=$(realpath "$2") WORK=$3 MODEL=$4
mkdir -p "$WORK"
D=$WORK/data WT=$WORK/feature
M=(--data-dir "$D" --embed-provider static --static-model-dir "$MODEL")
rm -rf "$D" "$WT"
git -C "$CLONE" worktree prune
git -C "$CLONE" branch -D sextant-bench-feature 2>/dev/null || true
/usr/bin/time -f "index: %e s, %M KB" "$S" "${M[@]}" index "$CLONE" --name r | tail -2
du -sm "$D"
git -C "$CLONE" worktree add -q "$WT" -b sextant-bench-feature
for f in $(git -C "$WT" ls-files 'packages/*/src/*.ts' | grep -v __tests__ | head -10); do
    printf '\nexport function addedOnFeature%s() { return %s; }\n' "$RANDOM" "$RANDOM" >> "$WT/$f"
done
echo "changed on the worktree: $(git -C "$WT" status --short | wc -l) files"
"$S" "${M[@]}" repo ref add r sextant-bench-feature
/usr/bin/time -f "ref sync: %e s, %M KB" "$S" "${M[@]}" repo sync r@sextant-bench-feature
du -sm "$D"
/usr/bin/time -f "ref sync, unchanged: %e s" "$S" "${M[@]}" repo sync r@sextant-bench-feature
/usr/bin/time -f "repository sync, unchanged: %e s" "$S" "${M[@]}" repo sync r
