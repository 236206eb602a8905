#!/usr/bin/env python3
"""How many real tokens Sextant's answers hold against the budget asked for.

Asks a running server (`sextant serve`) every question of a query set (JSON lines with
`query`) at each budget, over REST, and counts each answer's content items with the
reference tokenizers (count.cjs: tiktoken's o200k_base and cl100k_base, Claude's public
encoding). Prints, per budget and encoding, the answers over budget and the largest ratio.

Usage: measure.py BASE_URL QUERIES.jsonl [--budgets 1000,2500,8000] [--tokenizer claude]
  TIKTOKEN and CLAUDE name the unpacked npm packages tiktoken@1.0.22 and
  @anthropic-ai/tokenizer@0.0.4 (`npm pack NAME@VERSION && tar xzf …`).
"""
import argparse
import json
import os
import subprocess
import sys
import urllib.request

ENCODINGS = ["claude", "o200k", "cl100k"]


def ask(base, body):
    req = urllib.request.Request(f"{base}/api/v1/search", data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req) as r:
        return json.load(r)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("base")
    ap.add_argument("queries")
    ap.add_argument("--budgets", default="1000,2500,8000")
    ap.add_argument("--tokenizer", help="sent with each request (omit for servers without it)")
    a = ap.parse_args()
    questions = [json.loads(l)["query"] for l in open(a.queries, encoding="utf-8") if l.strip()]
    budgets = [int(b) for b in a.budgets.split(",")]
    answers, render_ms = [], {}
    for budget in budgets:
        for q in questions:
            body = {"query": q, "maxTokenBudget": budget}
            if a.tokenizer:
                body["tokenizer"] = a.tokenizer
            got = ask(a.base, body)
            items = [c["text"] for c in got["content"]]
            answers.append((budget, got["response"]["tokensUsed"], items))
            render_ms.setdefault(budget, []).append(got["response"]["timings"].get("renderMs", 0.0))
    texts = [t for _, _, items in answers for t in items]
    here = os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run(["node", os.path.join(here, "count.cjs")], input=json.dumps(texts),
                         capture_output=True, text=True, check=True)
    counts = iter(json.loads(out.stdout))
    rows = {}
    for budget, used, items in answers:
        total = [0, 0, 0]
        for _ in items:
            c = next(counts)
            total = [x + y for x, y in zip(total, c)]
        rows.setdefault(budget, []).append((used, total))
    print(f"{len(questions)} questions; tokenizer sent: {a.tokenizer or '(none)'}")
    print("| budget | encoding | answers over budget | largest answer / budget | mean answer / budget | mean tokensUsed / budget |")
    print("|---|---|---|---|---|---|")
    for budget, rs in rows.items():
        for i, enc in enumerate(ENCODINGS):
            ratios = [t[i] / budget for _, t in rs]
            over = sum(1 for r in ratios if r > 1)
            used = sum(u for u, _ in rs) / len(rs) / budget
            print(f"| {budget:,} | {enc} | {over} of {len(rs)} | {max(ratios):.2f} | {sum(ratios)/len(ratios):.2f} | {used:.2f} |")
    print()
    for budget, ms in render_ms.items():
        ms = sorted(ms)
        print(f"render at {budget:,}: p50 {ms[len(ms) // 2]:.1f} ms, p95 {ms[int(len(ms) * 0.95)]:.1f} ms")


if __name__ == "__main__":
    sys.exit(main())
