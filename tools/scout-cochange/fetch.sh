#!/usr/bin/env bash
# Fetches versions of an npm package that ships its TypeScript sources, for the Scout
# co-change benchmark (benches/scout_cochange.rs): each version's `src/` goes to
# <cache>/<package, / as +>/<version>/src. Never use a package listed in
# ../shared/eval/RESERVED.txt.
#
#   tools/scout-cochange/fetch.sh @tanstack/query-core 5.0.0 5.10.0 5.20.0 …
set -euo pipefail
pkg="$1"; shift
cache="${SEXTANT_COCHANGE_CACHE:-$HOME/.cache/sextant/corpora/cochange}"
dir="$cache/${pkg//\//+}"
mkdir -p "$dir"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
for version in "$@"; do
  if [ -d "$dir/$version/src" ]; then continue; fi
  if ! (cd "$tmp" && npm pack --silent "$pkg@$version" >/dev/null); then
    echo "cannot fetch $pkg@$version (see npm view $pkg versions)" >&2
    exit 1
  fi
  mkdir -p "$dir/$version"
  tar -xzf "$tmp"/*.tgz -C "$tmp"
  mv "$tmp/package/src" "$dir/$version/src"
  rm -rf "$tmp"/*
  echo "$pkg@$version → $dir/$version/src"
done
