#!/usr/bin/env python3
"""A file-name question set, built mechanically: each question is one lowercase word that
is a source file's name (`acyclic` for src/acyclic.rs, `signature` for signature.py), and
its gold is that file. It measures the held-out benchmark's pattern "a one-word question
that is a file's name puts the package's entry file first" (issue 39) and is scored at file
level only.

  filenames.py LABEL CORPUS_DIR EXT [EXT…] > queries-files-LABEL.jsonl
  sextant eval --corpus PARENT --queries queries-files-LABEL.jsonl --out R.jsonl
  python3 tools/rankset/score.py R.jsonl --queries queries-files-LABEL.jsonl   (file columns)

LABEL is the corpus's folder name under PARENT. Tests, examples, benches and fixtures are
left out, and so are names that several files share, entry files (`mod`, `index`,
`__init__`, `lib`, `main`), names shorter than five letters and names with `_`, `-` or
capitals (those read as identifiers, which the definition tier answers).
"""
import collections
import json
import os
import re
import sys

SKIP_DIRS = r"(^|/)(tests?|__tests__|e2e|examples?|benches|fixtures?)(/|$)"
SKIP_FILES = r"(_test\.|\.test\.|\.spec\.|Test\.java$|(^|/)test_)"
ENTRY = {"mod", "index", "__init__", "lib", "main"}


def main():
    label, root, exts = sys.argv[1], sys.argv[2], tuple(sys.argv[3:])
    files = []
    for d, _, names in os.walk(root):
        for f in names:
            p = os.path.relpath(os.path.join(d, f), root)
            if f.endswith(exts) and not re.search(SKIP_DIRS, p) and not re.search(SKIP_FILES, p):
                files.append(p)
    stem = lambda p: os.path.splitext(os.path.basename(p))[0]  # noqa: E731
    counts = collections.Counter(stem(p).lower() for p in files)
    n = 0
    for p in sorted(files):
        s = stem(p)
        if counts[s.lower()] != 1 or s in ENTRY or len(s) < 5 or not (s.isalpha() and s.islower()):
            continue
        n += 1
        print(json.dumps({"id": f"{label}:file:{n:03d}", "set": "file", "repo": label, "corpus": label,
                          "query": s, "kind": "filename", "gold_mode": "any",
                          "gold": [{"path": p, "start_line": 1, "end_line": 1}], "files": [p]}))


if __name__ == "__main__":
    main()
