#!/usr/bin/env python3
"""Resolve the hand-written ranking questions (spec-<repo>.toml) into queries-<repo>.jsonl.

Gold line ranges come from ../../../shared/eval/tools/locate.js (TypeScript compiler API;
declarations) and, for CommonJS assignments it cannot name, from locate_assign.js; for a spec
with lang = "rust", from locate_rust.py; with lang = "python", from locate_py.py;
with lang = "go", from locate_go.py; with lang = "java", from locate_java.py.
Usage: TS_MODULE=/abs/node_modules/typescript python3 tools/rankset/build.py REPO CORPUS_DIR
  REPO: jest | mocha | petgraph | oauthlib | afero | junit4 (the spec to read); CORPUS_DIR: the repository's checkout.
"""
import argparse
import json
import os
import subprocess
import sys
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.normpath(os.path.join(HERE, "..", "..", "..", "shared", "eval"))


def reserved():
    names = []
    with open(os.path.join(SHARED, "RESERVED.txt"), encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                names.append(line)
    return names


def locate(corpus, path, symbol, lang="typescript"):
    if lang == "rust":
        tools = [["python3", os.path.join(HERE, "locate_rust.py")]]
    elif lang == "java":
        tools = [["python3", os.path.join(HERE, "locate_java.py")]]
    elif lang == "go":
        tools = [["python3", os.path.join(HERE, "locate_go.py")]]
    elif lang == "python":
        tools = [["python3", os.path.join(HERE, "locate_py.py")]]
    else:
        tools = [["node", os.path.join(SHARED, "tools", "locate.js")], ["node", os.path.join(HERE, "locate_assign.js")]]
    for tool in tools:
        out = subprocess.run(tool + [corpus, path, symbol], capture_output=True, text=True)
        rows = [json.loads(l) for l in out.stdout.splitlines() if l.startswith("{")]
        if out.returncode == 0 and len(rows) == 1:
            return rows[0]
        if len(rows) > 1:
            sys.exit(f"ambiguous symbol {path} {symbol}: {rows}")
    sys.exit(f"cannot locate {path} {symbol}")


def load_spec(repo):
    """The questions of `spec-<repo>.toml`: `repo`, `lang` (default typescript) and a list of
    `question` tables (`text`, `kind`, `gold` as [path, symbol] pairs, optional `extra` files)."""
    with open(os.path.join(HERE, f"spec-{repo}.toml"), "rb") as f:
        spec = tomllib.load(f)
    spec.setdefault("lang", "typescript")
    if spec.get("repo") != repo:
        sys.exit(f"spec-{repo}.toml names repo {spec.get('repo')!r}")
    return spec


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("repo")
    ap.add_argument("corpus")
    ap.add_argument("--out")
    a = ap.parse_args()
    if any(a.repo == r or a.repo.startswith(r.rstrip("/")) for r in reserved()):
        sys.exit(f"{a.repo} is reserved for evaluation ({SHARED}/RESERVED.txt)")
    spec = load_spec(a.repo)
    rows = []
    for i, q in enumerate(spec["question"], 1):
        text, kind = q["text"], q["kind"]
        gold = [locate(a.corpus, path, symbol, spec["lang"]) for path, symbol in q["gold"]]
        files = sorted({g["path"] for g in gold} | set(q.get("extra", [])))
        for f in files:
            if not os.path.isfile(os.path.join(a.corpus, f)):
                sys.exit(f"no such file in the corpus: {f}")
        rows.append({"id": f"{a.repo}:rank:{i:02d}", "set": "rank", "repo": a.repo, "corpus": a.repo,
                     "query": text, "kind": kind, "gold_mode": "any", "gold": gold, "files": files})
    out = a.out or os.path.join(HERE, f"queries-{a.repo}.jsonl")
    with open(out, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    kinds = {}
    for r in rows:
        kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
    print(f"wrote {len(rows)} questions to {out} ({kinds})", file=sys.stderr)


if __name__ == "__main__":
    main()
