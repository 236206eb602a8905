#!/usr/bin/env python3
"""A symbol set from a tools/langset corpus: each documented struct, enum, trait,
interface or type whose name no other candidate has, asked for by its bare name, with its
own definition as the gold (the question an agent types when it names a type).

Usage: python3 tools/rankset/names.py LANGSET_DIR LABEL
  reads LANGSET_DIR/candidates-LABEL.jsonl, writes LANGSET_DIR/queries-names-LABEL.jsonl;
  then `sextant eval --corpus LANGSET_DIR --queries …` and tools/rankset/score.py.
"""
import collections
import json
import os
import sys

KINDS = {"struct", "enum", "trait", "interface", "type"}


def main():
    root, label = sys.argv[1:3]
    with open(os.path.join(root, f"candidates-{label}.jsonl"), encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    names = collections.Counter(r["symbol"] for r in rows)
    out = []
    for r in rows:
        if r["kind"] in KINDS and names[r["symbol"]] == 1 and "::" not in r["symbol"] and "." not in r["symbol"]:
            out.append({"id": f"{label}:name:{len(out) + 1:03d}", "set": "name", "repo": label, "corpus": label,
                        "query": r["symbol"], "kind": "symbol", "gold_mode": "any",
                        "gold": [{k: r[k] for k in ("path", "symbol", "start_line", "end_line")}],
                        "files": [r["path"]]})
    dest = os.path.join(root, f"queries-names-{label}.jsonl")
    with open(dest, "w", encoding="utf-8") as f:
        for o in out:
            f.write(json.dumps(o) + "\n")
    print(f"{len(out)} name questions in {dest}", file=sys.stderr)


if __name__ == "__main__":
    main()
