#!/usr/bin/env bash
# Assembles the scale corpora of docs/BENCHMARKS.md (issue 44) under OUT:
#   OUT/c100 = junit4 4.13.2 + lodash-es 4.17.21 + BurntSushi toml 1.2.0 + attrs 24.2.0
#   OUT/c300 = c100 + jest (52db46e5)
#   OUT/c1m  = c300 + prometheus (d15adb9a) + SQLAlchemy's lib/, examples/, tools/ (f35da7e2)
# Sources: the Debian and PyPI source packages (apt-get source / pip download), npm's
# registry, and git snapshots of the three repositories (JEST, PROMETHEUS, SQLALCHEMY:
# their git directories, e.g. from the library's `fetch`). Index with
# `--max-file-bytes 1048576` (files over 1 MB are left out, as recorded).
set -euo pipefail
OUT=${1:?usage: c1m.sh OUT}
CACHE=${CORPORA:-$HOME/.cache/sextant/corpora}
JEST=${JEST:-/work/.mirror/jestjs+jest/repo}
PROMETHEUS=${PROMETHEUS:-/work/.mirror/prometheus+prometheus/repo}
SQLALCHEMY=${SQLALCHEMY:-/work/.mirror/sqlalchemy+sqlalchemy/repo}
mkdir -p "$OUT"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

part() { # NAME DIR: copy DIR into every corpus from the first that includes it
  local name=$1 src=$2; shift 2
  for c in "$@"; do mkdir -p "$OUT/$c/$name" && cp -a "$src/." "$OUT/$c/$name/"; done
}
archive() { # GITDIR COMMIT DEST [PATHS...]: the commit's files under 1 MB (a snapshot may lack larger blobs)
  local git=$1 commit=$2 dest=$3; shift 3
  mkdir -p "$dest"
  python3 - "$git" "$commit" "$dest" "$@" <<'PY'
import os, subprocess, sys
git, commit, dest, paths = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
tree = subprocess.run(["git", "--git-dir", git, "ls-tree", "-r", "-l", "-z", commit, "--", *paths],
                      check=True, capture_output=True).stdout.split(b"\0")
wanted = []
for entry in filter(None, tree):
    meta, path = entry.split(b"\t", 1)
    mode, kind, oid, size = meta.split()
    if kind == b"blob" and mode != b"120000" and size.isdigit() and int(size) < 1 << 20:
        wanted.append((oid, path.decode()))
cat = subprocess.Popen(["git", "--git-dir", git, "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
for oid, path in wanted:
    cat.stdin.write(oid + b"\n"); cat.stdin.flush()
    header = cat.stdout.readline().split()
    if header[-1] == b"missing":
        continue
    data = cat.stdout.read(int(header[2])); cat.stdout.read(1)
    target = os.path.join(dest, path)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target, "wb") as f:
        f.write(data)
PY
}
[ -d "$CACHE/debian-src-junit4/junit4-r4.13.2" ] || { echo "missing junit4: in $CACHE/debian-src-junit4, apt-get source --download-only junit4=4.13.2 (deb-src enabled) and unpack only its .orig tarball (junit4-r4.13.2/; the test suite fetches it so)" >&2; exit 1; }
[ -d "$CACHE/debian-src-golang-toml/golang-toml-1.2.0" ] || { echo "missing toml: apt-get source golang-toml=1.2.0-2 (deb-src enabled) into $CACHE/debian-src-golang-toml" >&2; exit 1; }
[ -d "$CACHE/pypi-attrs-24.2.0/attrs-24.2.0" ] || { echo "missing attrs: pip download --no-binary :all: attrs==24.2.0, unpacked into $CACHE/pypi-attrs-24.2.0" >&2; exit 1; }
(cd "$work" && npm pack --silent lodash-es@4.17.21 >/dev/null && mkdir lodash-es && tar -xzf lodash-es-4.17.21.tgz -C lodash-es --strip-components=1)

part junit4 "$CACHE/debian-src-junit4/junit4-r4.13.2" c100 c300 c1m
part lodash-es "$work/lodash-es" c100 c300 c1m
part toml "$CACHE/debian-src-golang-toml/golang-toml-1.2.0" c100 c300 c1m
part attrs "$CACHE/pypi-attrs-24.2.0/attrs-24.2.0" c100 c300 c1m
archive "$JEST" 52db46e5 "$work/jest"
part jest "$work/jest" c300 c1m
archive "$PROMETHEUS" d15adb9a "$OUT/c1m/prometheus"
archive "$SQLALCHEMY" f35da7e2 "$OUT/c1m/sqlalchemy" lib examples tools
for c in c100 c300 c1m; do
  echo "$c: $(find "$OUT/$c" -type f | wc -l) files"
done
