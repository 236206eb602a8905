#!/usr/bin/env python3
"""The question files of the 1M-line latency runs (docs/BENCHMARKS.md, "Files read once
for their rows' code; questions asked once; allocators").

    python3 tools/scale/latency_sets.py OUT_DIR

writes OUT_DIR/repeated.jsonl (the 30 questions of queries-c1m.jsonl twelve times over,
each with its own id: time the last 300 of 360 searches) and OUT_DIR/asked-once.jsonl
(25 questions of each hand-written set under tools/rankset, which the background load of
the held table finishes under, then the 30 once: time the last 30). Then, per file Q:

    SEXTANT_LOG_SPANS=1 RUST_LOG=sextant=debug,warn sextant --data-dir D \\
      --embed-provider static --max-file-bytes 1048576 eval --corpus c1m \\
      --queries Q --out r.jsonl 2> spans.log
"""
import glob
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
WARM_UP_PER_SET = 25
ROUNDS = 12


def read(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def write(path, questions):
    with open(path, "w") as f:
        for q in questions:
            f.write(json.dumps(q) + "\n")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    c1m = [{"id": q["id"], "query": q["query"]} for q in read(os.path.join(HERE, "queries-c1m.jsonl"))]
    repeated = [
        {"id": f"{q['id']}r{r}", "query": q["query"]} for r in range(ROUNDS) for q in c1m
    ]
    warm = []
    for path in sorted(glob.glob(os.path.join(HERE, "..", "rankset", "queries-*.jsonl"))):
        for q in read(path)[:WARM_UP_PER_SET]:
            warm.append({"id": f"warm:{q['id']}", "query": q["query"]})
    write(os.path.join(out, "repeated.jsonl"), repeated)
    write(os.path.join(out, "asked-once.jsonl"), warm + c1m)
    print(f"{len(repeated)} repeated, {len(warm)} warm-up + {len(c1m)} asked once")


if __name__ == "__main__":
    main()
