#!/usr/bin/env bash
# Object-storage benchmark (issue 41): the same corpus indexed and searched with the
# chunk store on local disk and on a local S3 server, the metadata store on PostgreSQL.
# Prints, for each: indexing time, search p50/p95 (`sextant eval`'s latencies), S3
# requests per synced file and per search (counted by the server: its "resolved route"
# log lines, by operation), PostgreSQL statements per search (the server's statement log).
#
#   tools/s3-bench/bench.sh SEXTANT CORPUS QUERIES [global flags…]
#
# SEXTANT: the binary; CORPUS: a directory; QUERIES: an eval query file (gold may be
# empty); the flags go before the command (e.g. --embed-provider static). Needs s3s-fs
# (~/.cache/sextant/tools/bin, as .ci/run installs it) and PostgreSQL's server binaries
# (run as the `postgres` user when root). Everything lives in a temporary directory.
set -euo pipefail
bin=$(realpath "$1"); corpus=$(realpath "$2"); queries=$(realpath "$3"); shift 3
s3s=${S3S_FS:-$HOME/.cache/sextant/tools/bin/s3s-fs}
pgbin=$(pg_config --bindir 2>/dev/null || ls -d /usr/lib/postgresql/*/bin | tail -1)
work=$(mktemp -d /tmp/s3-bench.XXXXXX)
chmod 1777 "$work"  # the postgres user writes its log here
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
cleanup() {
  [ -n "${s3_pid:-}" ] && kill "$s3_pid" 2>/dev/null || true
  # S3_BENCH_LOG=FILE keeps the S3 server's request log (which objects each search reads).
  [ -n "${S3_BENCH_LOG:-}" ] && cp "$work/s3.log" "$S3_BENCH_LOG" 2>/dev/null || true
  as_pg "$pgbin/pg_ctl" -D "$work/pg" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

pgport=$(port); s3port=$(port)
mkdir -p "$work/pg" && chown postgres "$work/pg" 2>/dev/null || true
as_pg "$pgbin/initdb" -D "$work/pg" -U postgres --auth=trust --no-sync >/dev/null
as_pg "$pgbin/pg_ctl" -D "$work/pg" -l "$work/pg.log" -w \
  -o "-p $pgport -k $work/pg -c listen_addresses=127.0.0.1 -c log_statement=all" start >/dev/null
pg_url="postgres://postgres@127.0.0.1:$pgport/postgres"

mkdir -p "$work/s3/sextant"
RUST_LOG=s3s=debug "$s3s" --host 127.0.0.1 --port "$s3port" --access-key bench \
  --secret-key bench-secret-0123456789 "$work/s3" >"$work/s3.log" 2>&1 &
s3_pid=$!
export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench-secret-0123456789 \
  AWS_REGION=us-east-1 AWS_ENDPOINT="http://127.0.0.1:$s3port" AWS_ALLOW_HTTP=true
for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$s3port") 2>/dev/null && break; sleep 0.1; done

s3_ops() { grep -c "resolved route, op:" "$work/s3.log" || true; }
pg_statements() { grep -cE "LOG:  (statement|execute)" "$work/pg.log" || true; }
n_queries=$(grep -c . "$queries")
head -1 "$queries" >"$work/one.jsonl"

run() { # label, lance uri, database name
  local label=$1 uri=$2 db=$3; shift 3
  as_pg "$pgbin/psql" -q -h 127.0.0.1 -p "$pgport" -U postgres -c "CREATE DATABASE $db" >/dev/null
  local url="postgres://postgres@127.0.0.1:$pgport/$db"
  local flags=(--data-dir "$work/data-$label" --database-url "$url" --lance-uri "$uri" "$@")
  local o0 p0 o1 t0 t1 files
  o0=$(s3_ops); t0=$(date +%s.%N)
  "$bin" "${flags[@]}" index "$corpus" --name corpus >"$work/index-$label.log" 2>&1
  t1=$(date +%s.%N); o1=$(s3_ops)
  files=$("$bin" "${flags[@]}" repo show corpus 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["files"]["indexed"])')
  # Search costs: one eval of all the questions minus one of a single question (the
  # difference is what the extra searches cost, without start-up and the freshness sync).
  local a0 b0 a1 b1 a2 b2 line
  # A first eval registers and indexes its own copy of the corpus: a warm-up, not counted.
  "$bin" "${flags[@]}" eval --corpus "$corpus" --queries "$queries" --out "$work/warm-$label.jsonl" >/dev/null 2>&1
  a0=$(s3_ops); b0=$(pg_statements)
  "$bin" "${flags[@]}" eval --corpus "$corpus" --queries "$work/one.jsonl" --out "$work/one-$label.jsonl" >/dev/null 2>&1
  a1=$(s3_ops); b1=$(pg_statements)
  "$bin" "${flags[@]}" eval --corpus "$corpus" --queries "$queries" --out "$work/all-$label.jsonl" >"$work/eval-$label.log" 2>&1
  a2=$(s3_ops); b2=$(pg_statements)
  line=$(grep -n "resolved route, op:" "$work/s3.log" | sed -n "$((a1 + 1))p" | cut -d: -f1 || true)
  local extra=$((n_queries - 1))
  echo "== $label ($uri)"
  printf '   index: %.1f s, %s files; S3 requests %d (%s per file)\n' "$(echo "$t1 - $t0" | bc)" "$files" \
    $((o1 - o0)) "$(echo "scale=1; ($o1 - $o0) / $files" | bc)"
  grep -E "p50 .* ms, p95" "$work/eval-$label.log" | sed 's/^/   search: /'
  printf '   per search: S3 requests %s, PostgreSQL statements %s\n' \
    "$(echo "scale=1; (($a2 - $a1) - ($a1 - $a0)) / $extra" | bc)" \
    "$(echo "scale=1; (($b2 - $b1) - ($b1 - $b0)) / $extra" | bc)"
  if [ -n "$line" ]; then
    echo "   S3 requests of the $n_queries-question eval, by operation:"
    tail -n "+$line" "$work/s3.log" | grep -oE "resolved route, op: [A-Za-z]+" | sort | uniq -c \
      | sort -rn | sed 's/resolved route, op: //; s/^/     /'
  fi
}

run disk "$work/lance-disk" bench_disk "$@"
run s3 "s3://sextant/bench" bench_s3 "$@"
