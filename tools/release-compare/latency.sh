#!/usr/bin/env bash
# Search latency of one `sextant` binary over HTTP, for comparing build profiles.
#
#   tools/release-compare/latency.sh BINARY DATA_DIR CORPUS QUERIES.jsonl [ROUNDS]
#
# Serves DATA_DIR with BINARY (the static embedder, so the model's own time does not
# drown the difference), registers CORPUS once (name `corpus`) and waits for its sync,
# then sends every query of QUERIES.jsonl ROUNDS times (default 3) one after another
# and prints p50 / p95 / mean of the whole request in milliseconds, and the sync time.
set -euo pipefail
bin=$1 data=$2 corpus=$3 queries=$4 rounds=${5:-3}
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$bin" --data-dir "$data" --embed-provider static serve --bind "127.0.0.1:$port" 2>"$data.serve.log" &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do curl -sf "localhost:$port/readyz" >/dev/null && break; sleep 0.5; done
base="http://127.0.0.1:$port/api/v1"
if ! curl -sf "$base/repositories/corpus" >/dev/null; then
  start=$(date +%s.%N)
  job=$(curl -sf -XPOST "$base/repositories" -H 'content-type: application/json' \
        -d "{\"path\": \"$corpus\", \"name\": \"corpus\"}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["job"]["id"])')
  until curl -sf "$base/jobs/$job" | grep -q '"state":"succeeded"'; do sleep 0.5; done
  echo "sync: $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s"
fi
python3 - "$base" "$queries" "$rounds" <<'PY'
import json, statistics, sys, time, urllib.request
base, path, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
queries = [json.loads(l)["query"] for l in open(path) if l.strip()]
times = []
for _ in range(rounds):
    for q in queries:
        body = json.dumps({"query": q}).encode()
        req = urllib.request.Request(base + "/search", body, {"content-type": "application/json"})
        t = time.perf_counter()
        urllib.request.urlopen(req).read()
        times.append((time.perf_counter() - t) * 1000)
times.sort()
p = lambda q: times[min(len(times) - 1, int(q * len(times)))]
print(f"{len(times)} searches: p50 {p(0.5):.1f} ms, p95 {p(0.95):.1f} ms, mean {statistics.mean(times):.1f} ms")
PY
