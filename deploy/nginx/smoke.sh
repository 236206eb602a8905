#!/usr/bin/env bash
# Smoke test of deploy/nginx/sextant.conf: a real nginx in front of a real `sextant serve`
# on loopback ports, checked the way a team's clients use it: health, 401 without a
# token, the OpenAPI document's server URL, the docs page, the web console's page and
# script under the prefix, registering a directory,
# its sync progress streamed over SSE through the proxy, a search, an MCP session
# (initialize, then a tool call), and the Host allowlist.
#
#   deploy/nginx/smoke.sh [path/to/sextant] [extra global flags, e.g. --model-dir DIR]
#
# Needs nginx and curl (Debian: apt-get install nginx-light curl). Everything runs in a
# temporary directory and is stopped on exit; prints "smoke: ok" when every check passed.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-sextant}
shift || true
"$bin" --version >/dev/null 2>&1 || { echo "smoke: cannot run '$bin': pass the path to the sextant binary (e.g. target/debug/sextant)" >&2; exit 2; }
command -v nginx >/dev/null || { echo "smoke: nginx is not installed (apt-get install nginx-light)" >&2; exit 2; }
command -v curl >/dev/null || { echo "smoke: curl is not installed" >&2; exit 2; }

work=$(mktemp -d)
cleanup() {
    [ -f "$work/nginx.pid" ] && nginx -c "$work/nginx.conf" -s stop 2>/dev/null || true
    [ -n "${serve_pid:-}" ] && kill "$serve_pid" 2>/dev/null || true
    [ -n "${sse_pid:-}" ] && kill "$sse_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "smoke: FAILED: $*" >&2; exit 1; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
app_port=$(free_port)
proxy_port=$(free_port)
host=code.example.com

mkdir -p "$work/ws/src"
printf 'export function validateToken(token: string): boolean {\n  return token.startsWith("Bearer ");\n}\n' \
    > "$work/ws/src/auth.ts"
token=$("$bin" "$@" --data-dir "$work/data" token create --scope admin --name smoke 2>/dev/null | head -n 1)
"$bin" "$@" --data-dir "$work/data" serve --bind "127.0.0.1:$app_port" --base-path /sextant \
    --trust-forwarded --allowed-host "$host" > "$work/serve.log" 2>&1 &
serve_pid=$!

# The production site with a plain-HTTP loopback listener and this run's upstream port.
sed -e "s/listen 443 ssl;/listen 127.0.0.1:$proxy_port;/" \
    -e "s/server 127.0.0.1:7878;/server 127.0.0.1:$app_port;/" \
    "$here/sextant.conf" > "$work/site.conf"
cat > "$work/nginx.conf" <<EOF
worker_processes 1;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 64; }
http {
    access_log $work/nginx-access.log;
    client_body_temp_path $work/body; proxy_temp_path $work/proxy;
    fastcgi_temp_path $work/fcgi; uwsgi_temp_path $work/uwsgi; scgi_temp_path $work/scgi;
    include $work/site.conf;
}
EOF
nginx -c "$work/nginx.conf"

base="http://127.0.0.1:$proxy_port/sextant"
h=(-H "Host: $host")
auth=(-H "Host: $host" -H "Authorization: Bearer $token")
for _ in $(seq 1 100); do
    curl -sf "${h[@]}" "$base/healthz" >/dev/null 2>&1 && break
    sleep 0.2
done
curl -sf "${h[@]}" "$base/healthz" | grep -q '"ok"' || fail "healthz through the proxy ($(tail -3 "$work/serve.log"))"
code=$(curl -s -o /dev/null -w '%{http_code}' "${h[@]}" "$base/api/v1/repositories")
[ "$code" = 401 ] || fail "no token: expected 401, got $code"
curl -sf "${auth[@]}" "$base/openapi.json" | grep -q "\"url\":\"http://$host/sextant\"" \
    || fail "openapi.json servers URL is not http://$host/sextant"
curl -sf -o /dev/null "${auth[@]}" "$base/docs/" || fail "docs page"
# The web console: its page names the base path its script and the API are under.
curl -sf "${h[@]}" "$base/" | grep -q '<base href="/sextant/">' || fail "console page under /sextant/"
curl -sf "${h[@]}" "$base/console/app.js" | grep -q "Sextant's web console" || fail "console script"
# /sextant without its slash: nginx sends the browser to /sextant/.
redirect=$(curl -s -o /dev/null -w '%{http_code} %{redirect_url}' "${h[@]}" "$base" || true)
case "$redirect" in 301\ */sextant/) ;; *) fail "console page at /sextant (no slash): $redirect" ;; esac
curl -sf "${auth[@]}" "$base/api/v1/me" | grep -q '"scope":"admin"' || fail "GET /api/v1/me through the proxy"

curl -sN "${auth[@]}" "$base/api/v1/events" > "$work/sse.txt" &
sse_pid=$!
sleep 0.5
curl -sf "${auth[@]}" -H 'Content-Type: application/json' \
    -d "{\"path\": \"$work/ws\", \"name\": \"ws\"}" "$base/api/v1/repositories" >/dev/null \
    || fail "register a directory"
for _ in $(seq 1 300); do
    grep -q '"phase":"done"' "$work/sse.txt" && break
    sleep 0.2
done
grep -q '"phase":"done"' "$work/sse.txt" || fail "no 'done' progress event over SSE through the proxy"

curl -sf "${auth[@]}" -H 'Content-Type: application/json' \
    -d '{"query": "where is the bearer token validated?"}' "$base/api/v1/search" \
    | grep -q '"breadcrumb":"validateToken"' || fail "search through the proxy"

mcp=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream')
curl -sf -D "$work/mcp-headers" "${auth[@]}" "${mcp[@]}" \
    -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"smoke","version":"0"}}}' \
    "$base/mcp" | grep -q '"serverInfo":{"name":"sextant"' || fail "MCP initialize"
session=$(grep -i '^mcp-session-id:' "$work/mcp-headers" | tr -d '\r' | awk '{print $2}')
[ -n "$session" ] || fail "MCP session id header did not pass the proxy"
curl -sf -o /dev/null "${auth[@]}" "${mcp[@]}" -H "Mcp-Session-Id: $session" \
    -d '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$base/mcp" || fail "MCP initialized"
curl -sf "${auth[@]}" "${mcp[@]}" -H "Mcp-Session-Id: $session" \
    -d '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"codebase_search","arguments":{"query":"validate bearer token"}}}' \
    "$base/mcp" | grep -q 'validateToken' || fail "MCP codebase_search"

code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: evil.example.net' \
    -H "Authorization: Bearer $token" "$base/api/v1/repositories")
[ "$code" = 403 ] || fail "foreign Host: expected 403, got $code"
echo "smoke: ok (nginx $(nginx -v 2>&1 | sed 's/.*\///'), sextant on :$app_port behind :$proxy_port)"
