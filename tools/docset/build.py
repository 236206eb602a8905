#!/usr/bin/env python3
"""The jest documentation question set: "how do I configure / where is it documented"
questions whose answers are sections of jest's docs (docs/*.md), written by hand from the
headings (questions-jest-docs.toml), with gold computed from the files (a section runs from its heading to the next
heading of its level or above; fenced code is not a heading). The same section in
website/versioned_docs/*/ is gold too (gold_mode "any"): the docs site keeps a copy per
release, and any copy answers the question.

Usage: python3 tools/docset/build.py ~/.cache/sextant/corpora/jest > tools/docset/queries-jest-docs.jsonl
"""
import glob
import json
import os
import re
import sys
import tomllib

HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^ {0,3}(```|~~~)")


def sections(path):
    """(level, title, start, end) of every ATX heading's section, 1-based lines."""
    lines = open(path, encoding="utf-8").read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    heads, fence = [], None
    for i, line in enumerate(lines):
        m = FENCE.match(line)
        if m:
            fence = None if fence == m.group(1) else (fence or m.group(1))
            continue
        if fence:
            continue
        h = HEADING.match(line)
        if h:
            heads.append((len(h.group(1)), h.group(2), i + 1))
    out = []
    for k, (level, title, start) in enumerate(heads):
        end = len(lines)
        for level2, _, start2 in heads[k + 1:]:
            if level2 <= level:
                end = start2 - 1
                break
        while end > start and not lines[end - 1].strip():
            end -= 1
        out.append((level, title, start, end))
    return out


def main():
    root = sys.argv[1]
    copies = sorted(glob.glob(os.path.join(root, "website", "versioned_docs", "*")))
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "questions-jest-docs.toml"), "rb") as f:
        questions = tomllib.load(f)["question"]
    for n, q in enumerate(questions, 1):
        question, wanted = q["text"], q["sections"]
        gold = []
        for name, title in wanted:
            found_in_docs = False
            for folder in [os.path.join(root, "docs")] + copies:
                path = os.path.join(folder, name)
                if not os.path.exists(path):
                    continue
                for _, t, start, end in sections(path):
                    if t == title:
                        rel = os.path.relpath(path, root)
                        gold.append({"path": rel, "symbol": title, "start_line": start, "end_line": end})
                        found_in_docs |= folder.endswith("docs") and "versioned" not in folder
            if not found_in_docs:
                sys.exit(f"question {n}: no section {title!r} in docs/{name}")
        print(json.dumps({
            "id": f"jest:docs:{n:02d}", "set": "docs", "repo": "jest", "corpus": "jest",
            "query": question, "kind": "docs", "gold_mode": "any", "gold": gold,
            "files": sorted({g["path"] for g in gold}),
        }))


if __name__ == "__main__":
    main()
