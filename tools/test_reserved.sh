#!/usr/bin/env bash
# Tests of tools/reserved.sh against the real ../shared/eval/RESERVED.txt: every entry form
# is refused, in the names a folder, a Debian source package or a fork would carry, and
# ordinary names pass. Run by .ci/run.
set -uo pipefail
cd "$(dirname "$0")/.."
. tools/reserved.sh
failures=0
check() { # expected (refused|passes), name
  local got
  if (refuse_reserved test "$2") 2>/dev/null; then got=passes; else got=refused; fi
  if [ "$got" != "$1" ]; then echo "test_reserved: $2: expected $1, got $got" >&2; failures=$((failures + 1)); fi
}
# Package names, their prefixes and words.
for name in rxjs rxjs-compat RxJS zod-to-json-schema requests python-requests rust-tokio \
            tokio-util serde_json @hono/node-server hono @trpc/server pydantic-core model2vec; do
  check refused "$name"
done
# Repository paths: the path and its last element.
for name in github.com/spf13/cobra cobra golang-github-spf13-cobra gin golang-github-gin-gonic-gin \
            golang-github-go-chi-chi; do
  check refused "$name"
done
# Java group ids and Maven coordinates: the group's last element, the artifact.
for name in com.google.code.gson gson google-gson commons-lang3 libcommons-lang3-java \
            org.apache.commons:commons-lang3 jackson-databind Jackson-Databind; do
  check refused "$name"
done
# Ordinary names pass (a reserved word inside another word is not a match).
for name in jest mocha lodash-es junit4 golang-toml attrs regex-syntax commons-io semver rich urfave-cli \
            chalk libxml2 sky decobrand nonzod; do
  check passes "$name"
done
if [ "$failures" -gt 0 ]; then echo "test_reserved: $failures failed" >&2; exit 1; fi
echo "test_reserved: ok"
