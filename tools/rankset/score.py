#!/usr/bin/env python3
"""Score results against the ranking sets (queries-<repo>.jsonl), per question kind.

Function level uses ../../../shared/eval/score.py's rule (a result hits a gold item when the
paths are equal and the gold start lies inside the result, or the result inside the gold),
with one change: a result longer than max(SPAN, the gold's own length) lines is ignored, so a
whole-file answer never counts as finding a function, while a 2,000-line class asked for by
name still can. File level ranks the distinct files of the results in order of first
appearance (or, when the results line has `files`, in that order: `sextant eval` ranks files
with their outlines there, and leaves outlines out of the function-level results); a file
gains when it is one of the question's gold files.

Metrics over the first 10 results: fn-NDCG@10 (binary, one gold needed: "any"), R@10,
MRR@10; file-NDCG@10 (binary, ideal = min(gold files, 10)), file-R@10 (a gold file in the
first 10 distinct files).

Usage: python3 tools/rankset/score.py RESULTS.jsonl [RESULTS2.jsonl …] --queries Q.jsonl [Q2 …]
       [--span 400] [--per-query OUT.jsonl] [--json]
"""
import argparse
import json
import math
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                 "..", "..", "..", "shared", "eval")))
from score import is_hit  # noqa: E402  (the shared hit rule)

METRICS = ["fn_ndcg@10", "r@10", "mrr@10", "file_ndcg@10", "file_r@10"]


def score(q, results, span, ranked_files=None):
    gold = q["gold"]
    first = None
    for rank, r in enumerate(results[:10], 1):
        length = int(r["end_line"]) - int(r["start_line"]) + 1
        if any(is_hit(r, g) and length <= max(span, g["end_line"] - g["start_line"] + 1) for g in gold):
            first = rank
            break
    # `sextant eval` lists the ranked files (file outlines included) as `files`; older
    # results files only have function-level results.
    files = list(ranked_files or [])[:10]
    if ranked_files is None:
        for r in results:
            if r["path"] not in files:
                files.append(r["path"])
            if len(files) == 10:
                break
    want = set(q["files"])
    dcg = sum(1 / math.log2(i + 2) for i, f in enumerate(files) if f in want)
    idcg = sum(1 / math.log2(i + 2) for i in range(min(len(want), 10)))
    return {
        "fn_ndcg@10": 1 / math.log2(first + 1) if first else 0.0,
        "r@10": 1.0 if first else 0.0,
        "mrr@10": 1 / first if first else 0.0,
        "file_ndcg@10": dcg / idcg if idcg else 0.0,
        "file_r@10": 1.0 if want & set(files) else 0.0,
        "first_hit_rank": first,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="+")
    ap.add_argument("--queries", nargs="+", required=True)
    ap.add_argument("--span", type=int, default=400)
    ap.add_argument("--per-query")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    results = {}
    ranked_files = {}
    for path in a.results:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    r = json.loads(line)
                    results[r["query_id"]] = r.get("results", [])
                    ranked_files[r["query_id"]] = r.get("files")
    groups = defaultdict(list)
    per_query = []
    missing = 0
    for path in a.queries:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    continue
                q = json.loads(line)
                missing += q["id"] not in results
                s = score(q, results.get(q["id"], []), a.span, ranked_files.get(q["id"]))
                per_query.append({"query_id": q["id"], "kind": q["kind"], "query": q["query"], **s})
                for key in ("ALL", q["kind"], f"{q['repo']}", f"{q['repo']}/{q['kind']}"):
                    groups[key].append(s)
    order = ["ALL", "symbol", "semantic", "architecture"] + sorted(k for k in groups if k not in
                                                                   ("ALL", "symbol", "semantic", "architecture"))
    summary = {k: {"n": len(groups[k]), **{m: sum(r[m] for r in groups[k]) / len(groups[k]) for m in METRICS}}
               for k in order if groups[k]}
    if a.per_query:
        with open(a.per_query, "w", encoding="utf-8") as f:
            for r in per_query:
                f.write(json.dumps(r) + "\n")
    if a.json:
        print(json.dumps({"missing": missing, "span": a.span, "groups": summary}, indent=2))
        return
    hdr = f"{'group':<20}{'n':>4}" + "".join(f"{m:>14}" for m in METRICS)
    print(hdr)
    print("-" * len(hdr))
    for k, s in summary.items():
        print(f"{k:<20}{s['n']:>4}" + "".join(f"{s[m]:>14.3f}" for m in METRICS))
    if missing:
        print(f"\n{missing} questions had no results line (scored as misses)", file=sys.stderr)


if __name__ == "__main__":
    main()
