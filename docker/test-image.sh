#!/usr/bin/env bash
# Runs the image the way an operator would and checks what they rely on:
#   - it runs as a non-root user, with its data in the /data volume;
#   - it starts with no network at all (model and runtime are in the image), creates its
#     admin token from a secret file, and its HEALTHCHECK passes;
#   - a repository mounted into the container is registered, indexed and searched through
#     the server's API (the CLI's --server mode, inside the container);
#   - SIGTERM stops it cleanly (exit 0) within the grace period, and a new container on
#     the same volume still answers from the index.
#
#   docker/test-image.sh [TAG]          (default localhost/sextant:dev; build it first with
#                                        docker/build-local.sh)
# Needs podman (root here). Prints "image: ok" when every check passed.
set -euo pipefail
cd "$(dirname "$0")/.."
tag="${1:-localhost/sextant:dev}"
# shellcheck source=docker/podman-env.sh
. docker/podman-env.sh

podman image exists "$tag" || { echo "image: no image $tag (run docker/build-local.sh)" >&2; exit 2; }
fail() { echo "image: FAILED: $*" >&2; podman logs "$name" 2>&1 | tail -20 >&2 || true; exit 1; }

name="sextant-test-$$"
volume="sextant-test-data-$$"
work=$(mktemp -d)
cleanup() {
  podman rm -f "$name" >/dev/null 2>&1 || true
  podman volume rm -f "$volume" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "== image configuration"
user=$(podman image inspect "$tag" --format '{{.Config.User}}')
[ "$user" = sextant ] || fail "runs as '$user', not the sextant user"
podman image inspect "$tag" --format '{{json .Config.Volumes}}' | grep -q '"/data"' || fail "no /data volume"
podman image inspect "$tag" --format '{{json .Config.Healthcheck}}' | grep -q 'health' || fail "no HEALTHCHECK"
echo "   user $user, volume /data, healthcheck, $(podman image inspect "$tag" --format '{{.Size}}' | awk '{printf "%.0f MB", $1/1e6}')"

mkdir -p "$work/repo/src"
cat >"$work/repo/src/auth.ts" <<'TS'
import { decode } from './jwt';

/** Checks a bearer token before a request is served. */
export function validateToken(token: string): boolean {
  return decode(token) === 3;
}
TS
cat >"$work/repo/src/jwt.ts" <<'TS'
export function decode(token: string): number {
  return token.split('.').length;
}
TS
chmod -R a+rX "$work/repo"
openssl rand -hex 32 >"$work/admin-token" 2>/dev/null || python3 -c 'import secrets; print(secrets.token_hex(32))' >"$work/admin-token"
chmod a+r "$work/admin-token"
token=$(cat "$work/admin-token")
podman volume create "$volume" >/dev/null

start() {
  podman run -d --name "$name" --network none \
    -v "$volume:/data" \
    -v "$work/repo:/repos/demo:ro" \
    -v "$work/admin-token:/run/secrets/admin-token:ro" \
    -e SEXTANT_ADMIN_TOKEN_FILE=/run/secrets/admin-token \
    -e SEXTANT_ALLOWED_ROOTS=/repos \
    "$tag" >/dev/null
  local started
  started=$(date +%s)
  until podman healthcheck run "$name" >/dev/null 2>&1; do
    [ $(( $(date +%s) - started )) -lt 120 ] || fail "not healthy after 120 s"
    podman ps --filter "name=$name" --format '{{.Status}}' | grep -q Up || fail "the container exited"
    sleep 1
  done
  echo "   healthy after $(( $(date +%s) - started )) s, offline (--network none)"
}
cli() { podman exec -e SEXTANT_SERVER=http://127.0.0.1:7878 -e SEXTANT_TOKEN="$token" "$name" sextant "$@"; }

echo "== start"
start
[ "$(podman exec "$name" id -u)" = 10001 ] || fail "the server's uid is not 10001"

echo "== register, index, search (inside the container, through the API)"
cli repo add /repos/demo --name demo >"$work/add.log" 2>&1 || { cat "$work/add.log" >&2; fail "repo add"; }
cli search "where is the bearer token checked" >"$work/search.txt" 2>&1 || { cat "$work/search.txt" >&2; fail "search"; }
grep -q validateToken "$work/search.txt" || { cat "$work/search.txt" >&2; fail "search did not find validateToken"; }
echo "   found validateToken"

echo "== SIGTERM"
stop_start=$(date +%s%N)
podman stop -t 30 "$name" >/dev/null
stopped_ms=$(( ($(date +%s%N) - stop_start) / 1000000 ))
code=$(podman inspect "$name" --format '{{.State.ExitCode}}')
[ "$code" = 0 ] || fail "exit code $code after SIGTERM"
[ "$stopped_ms" -lt 20000 ] || fail "took ${stopped_ms} ms to stop"
echo "   stopped in ${stopped_ms} ms, exit 0"
podman logs "$name" 2>&1 | grep -q stopping || fail "no 'stopping' line in the log"

echo "== restart on the same volume"
podman rm "$name" >/dev/null
start
cli search "where is the bearer token checked" >"$work/search2.txt" 2>&1 || fail "search after restart"
grep -q validateToken "$work/search2.txt" || fail "the index did not survive the restart"
echo "   the index survived"

echo "image: ok"
