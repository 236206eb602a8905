"""Offline measurement: ColBERT (answerai-colbert-small-v1, int8 ONNX) MaxSim re-scoring
of Sextant's top candidates, replayed from a `sextant eval --top N` results file.

    python3 tools/colbert/maxsim_rerank.py --results R.jsonl --queries Q.jsonl \
        --corpus ~/.cache/sextant/corpora/eval-corpus --model DIR --out OUT.jsonl [--alpha A]

For each query the candidates' source lines are read from the corpus, embedded token by
token (documents once, cached), and scored by MaxSim against the query's token vectors
(L2-normalised). The new score is `alpha * maxsim_minmax + (1 - alpha) * fused_minmax`
(alpha = 1: ColBERT alone). Output has the same shape as the input, for score.py.
"""
import argparse
import json
import os

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--results", required=True)
    p.add_argument("--queries", required=True)
    p.add_argument("--corpus", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--alpha", type=float, default=1.0)
    p.add_argument("--max-doc-tokens", type=int, default=256)
    a = p.parse_args()

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    session = ort.InferenceSession(os.path.join(a.model, "model.onnx"), opts)
    tok = Tokenizer.from_file(os.path.join(a.model, "tokenizer.json"))
    tok.no_padding()

    def encode(text, marker, limit):
        tok.enable_truncation(limit)
        e = tok.encode(f"{marker} {text}")
        ids = np.array([e.ids], dtype=np.int64)
        mask = np.array([e.attention_mask], dtype=np.int64)
        out = session.run(None, {"input_ids": ids, "attention_mask": mask,
                                 "token_type_ids": np.zeros_like(ids)})[0][0]
        out = out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)
        return out

    corpus_of = {}
    for line in open(a.queries, encoding="utf-8"):
        q = json.loads(line)
        corpus_of[q["id"]] = (q["query"], q.get("corpus") or q.get("repo"))

    doc_cache = {}
    out = open(a.out, "w", encoding="utf-8")
    for line in open(a.results, encoding="utf-8"):
        r = json.loads(line)
        query, corpus = corpus_of[r["query_id"]]
        qv = encode(query, "[unused0]", 32)
        maxsim = []
        for res in r["results"]:
            key = (corpus, res["path"], res["start_line"], res["end_line"])
            if key not in doc_cache:
                path = os.path.join(a.corpus, corpus, res["path"])
                try:
                    lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
                except OSError:
                    lines = []
                text = "\n".join(lines[res["start_line"] - 1:res["end_line"]])
                doc_cache[key] = encode(text, "[unused1]", a.max_doc_tokens)
            dv = doc_cache[key]
            maxsim.append(float((qv @ dv.T).max(axis=1).sum()))

        def minmax(xs):
            lo, hi = min(xs), max(xs)
            return [(x - lo) / (hi - lo) if hi > lo else 0.0 for x in xs]

        fused = minmax([res["score"] for res in r["results"]]) if r["results"] else []
        ms = minmax(maxsim) if maxsim else []
        for res, f, m in zip(r["results"], fused, ms):
            res["score"] = a.alpha * m + (1 - a.alpha) * f
        r["results"].sort(key=lambda x: -x["score"])
        r["results"] = r["results"][:10]
        out.write(json.dumps(r) + "\n")
    out.close()


if __name__ == "__main__":
    main()
