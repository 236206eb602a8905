#!/bin/bash
# Runs a command and appends "seconds VmRSS-kB" to $RSS_OUT every 0.5 s until it ends
# (docs/BENCHMARKS.md, "Memory at 1M lines"): RSS_OUT=rss.txt tools/scale/rss.sh sextant …
set -u
"$@" &
pid=$!
start=$(date +%s.%N)
while kill -0 "$pid" 2>/dev/null; do
  rss=$(awk '/VmRSS/{print $2}' "/proc/$pid/status" 2>/dev/null)
  echo "$(echo "$(date +%s.%N) - $start" | bc) ${rss:-0}" >> "$RSS_OUT"
  sleep 0.5
done
wait "$pid"
