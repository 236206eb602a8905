#!/usr/bin/env python3
"""Puts a trained model where Sextant ships it: models/<name>/ (model.onnx, tokenizer.json,
config.json) and its built-in manifest src/embed/manifests/<name>.json with every file's
SHA-256. Also writes RUN/manifest.json, so the run folder can be tried first with
`sextant --model-dir RUN …` before anything is copied.

Every field Sextant reads is written, `score_spread` included: how much wider the model's
similarities spread than bge-small-en-v1.5's (the ranking priors are scaled by it, so a
manifest without it would silently change ranking). It is measured, not derived: index a
ranking set with both models and compare the spread of their first ten scores
(tools/rankset/run.sh; docs/BENCHMARKS.md, "Ranking priors in the model's units").

Usage:
  python3 tools/train/ship.py RUN --score-spread 1.4 [--name sextant-code-small-v1-int8] [--dry-run]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
FILES = ["model.onnx", "tokenizer.json", "config.json"]
#: Sextant's model folders are at most this large (the issue's budget for a clone).
MAX_BYTES = 40 * 1024 * 1024


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def manifest(name: str, run: Path, score_spread: float) -> dict:
    if not (0.1 <= score_spread <= 10):
        raise SystemExit(f"ship: --score-spread {score_spread} must be from 0.1 to 10 (1.0 = bge-small's spread)")
    metrics = json.loads((run / "metrics.json").read_text())
    # Model v2 learnt from doc comments alone (its metrics name no registers).
    registers = metrics.get("registers", ["doc"])
    v2 = registers == ["doc"]
    kinds = "(doc comment sentence, code)" if v2 else "(description, code)"
    sources = "" if v2 else "descriptions from doc comments, test names (with the function the test calls) and files' own docs (with the file's outline), "
    return {
        "name": name,
        "description": (
            "Sextant's code-search model: bge-small-en-v1.5 fine-tuned on "
            f"{metrics.get('training_pairs', '?')} {kinds} pairs in TypeScript, "
            "JavaScript, Python, Go, Rust and Java from permissively licensed packages, "
            f"{sources}"
            "8-bit-quantised ONNX (384 dims, CLS pooling)"
        ),
        "kind": "embedding",
        "format": "onnx",
        "licence": "MIT (base model bge-small-en-v1.5); fine-tuned weights MIT",
        "source": {"repository": f"models/{name}"},
        "files": {f: sha256(run / f) for f in FILES},
        "pooling": "cls",
        "max_tokens": 256,
        "limit_tokens": 512,
        "dims": 384,
        "query_prefix": "Represent this sentence for searching relevant passages: ",
        "document_prefix": "",
        "score_spread": score_spread,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", type=Path)
    ap.add_argument("--name", default="sextant-code-small-v2-int8")
    ap.add_argument("--score-spread", type=float, required=True,
                    help="the model's measured score spread relative to bge-small (1.4 for v1)")
    ap.add_argument("--dry-run", action="store_true", help="only write RUN/manifest.json")
    a = ap.parse_args()
    m = manifest(a.name, a.run, a.score_spread)
    total = sum((a.run / f).stat().st_size for f in FILES)
    if total > MAX_BYTES:
        raise SystemExit(f"ship: {total} bytes, over the {MAX_BYTES}-byte budget")
    (a.run / "manifest.json").write_text(json.dumps(m, indent=2) + "\n")
    if a.dry_run:
        print(f"ship: {a.run / 'manifest.json'} written ({total} bytes of model files)")
        return
    dest = REPO / "models" / a.name
    dest.mkdir(parents=True, exist_ok=True)
    for f in FILES:
        shutil.copy(a.run / f, dest / f)
    shutil.copy(a.run / "metrics.json", dest / "metrics.json")
    (REPO / "src" / "embed" / "manifests" / f"{a.name}.json").write_text(json.dumps(m, indent=2) + "\n")
    print(f"ship: {dest} and src/embed/manifests/{a.name}.json written ({total} bytes)")


if __name__ == "__main__":
    main()
