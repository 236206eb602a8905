#!/usr/bin/env bash
# Lays out the six ranking sets' corpora under one folder, as `sextant eval --corpus DIR
# --queries tools/rankset/queries-<set>.jsonl` reads them (DIR/<set>/…), at the versions
# the specs name.
#
#   tools/rankset/corpora.sh DIR
#
# jest, mocha and afero come from clones of their repositories (JEST_REPO, MOCHA_REPO,
# AFERO_REPO: any clone holding the commits below); oauthlib from its PyPI sdist (pip),
# petgraph from the cargo registry (a build of Sextant has it; `cargo fetch` otherwise),
# junit4 from its Debian source package as tools/scale/c1m.sh expects it.
set -euo pipefail
DIR=$1
CACHE=${CACHE:-$HOME/.cache/sextant/corpora}
mkdir -p "$DIR"
archive() { # REPO COMMIT NAME
  [ -d "$DIR/$3" ] && return
  mkdir -p "$DIR/$3"
  git -C "$1" archive "$2" | tar -x -C "$DIR/$3"
}
archive "${JEST_REPO:?a clone of jestjs/jest}" 52db46e5 jest
archive "${MOCHA_REPO:?a clone of mochajs/mocha}" e6b9ee77 mocha
archive "${AFERO_REPO:?a clone of spf13/afero}" 993a85a afero
if [ ! -d "$DIR/oauthlib" ]; then
  tmp=$(mktemp -d)
  python3 -m pip download -q --no-deps --no-binary :all: oauthlib==3.2.2 -d "$tmp"
  tar -xzf "$tmp/oauthlib-3.2.2.tar.gz" -C "$tmp"
  mkdir -p "$DIR/oauthlib" && cp -r "$tmp/oauthlib-3.2.2/oauthlib" "$DIR/oauthlib/"
  rm -rf "$tmp"
fi
if [ ! -d "$DIR/petgraph" ]; then
  crate=$(ls "$HOME"/.cargo/registry/cache/*/petgraph-0.8.3.crate | head -1)
  mkdir -p "$DIR/petgraph" && tar -xzf "$crate" -C "$DIR/petgraph" --strip-components=1
fi
if [ ! -d "$DIR/junit4" ]; then
  src="$CACHE/debian-src-junit4/junit4-r4.13.2"
  [ -d "$src" ] || { echo "missing junit4: in $CACHE/debian-src-junit4, apt-get source --download-only junit4=4.13.2 and unpack only its .orig tarball (junit4-r4.13.2/; the test suite fetches it so)" >&2; exit 1; }
  cp -r "$src" "$DIR/junit4"
fi
for set in jest mocha oauthlib afero petgraph junit4; do
  echo "$set: $(find "$DIR/$set" -type f | wc -l) files"
done
