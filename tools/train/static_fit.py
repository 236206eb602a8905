#!/usr/bin/env python3
"""Fits a static model's table to the transformer's document vectors.

A static model's vector for a text is the mean of its tokens' rows, normalised. Distilled
the model2vec way (`sextant model distill --from-local`), each row is the transformer's
vector of its token read alone; code read in context says more. This fits the rows so
that the mean of a chunk's rows is the transformer's vector of the whole chunk, over
chunks of real code (`examples/static_fit_data.rs` writes them), by ridge regression:

    minimise ||A E - T||^2 + lam * ||E - E0 W||^2

A is chunks x vocabulary (a row holds 1/n for each of the chunk's n tokens), T the
transformer's vectors reduced by PCA to the table's width, E0 the distilled table and
W the linear map that best carries E0's means onto T (so that rows no chunk holds keep
their distilled meaning, in the new space). Solved by conjugate gradients, every column
at once; the result is then blended with E0 W (`--blend`, half and half by default:
sextant-code-static-v1's choice, docs/BENCHMARKS.md). numpy, scipy and safetensors only;
`check_static_fit.py` tests it.

    python3 tools/train/static_fit.py DATA.bin... --init DIR --out DIR [--lam X] [--blend B] [--half]

The output folder is the initial one's tokenizer and config with the fitted table.
"""

import argparse
import json
import shutil
import struct
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from safetensors.numpy import load_file, save_file


def read_records(paths):
    """Token rows and teacher vectors of every record in the files."""
    ids, vectors = [], []
    for path in paths:
        data = Path(path).read_bytes()
        if data[:4] != b"SFD1":
            sys.exit(f"{path}: not a static_fit_data file")
        (dims,) = struct.unpack_from("<I", data, 4)
        at = 8
        while at < len(data):
            (n,) = struct.unpack_from("<I", data, at)
            at += 4
            ids.append(np.frombuffer(data, dtype="<u4", count=n, offset=at))
            at += 4 * n
            vectors.append(np.frombuffer(data, dtype="<f4", count=dims, offset=at))
            at += 4 * dims
    return ids, np.vstack(vectors).astype(np.float64)


def mean_matrix(ids, vocab):
    """Chunks x vocabulary: each row averages its chunk's tokens."""
    rows, cols, vals = [], [], []
    for i, row in enumerate(ids):
        if len(row) == 0:
            continue
        rows.append(np.full(len(row), i))
        cols.append(row.astype(np.int64))
        vals.append(np.full(len(row), 1.0 / len(row)))
    a = sp.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
        shape=(len(ids), vocab),
    )
    a.sum_duplicates()
    return a


def block_cg(op, b, x, diag, iters):
    """Conjugate gradients for every column of `b` at once (Jacobi-preconditioned)."""
    r = b - op(x)
    z = r / diag[:, None]
    p = z.copy()
    rz = (r * z).sum(axis=0)
    start = np.linalg.norm(r)
    for i in range(iters):
        ap = op(p)
        alpha = rz / np.maximum((p * ap).sum(axis=0), 1e-30)
        x += p * alpha
        r -= ap * alpha
        z = r / diag[:, None]
        rz_new = (r * z).sum(axis=0)
        p = z + p * (rz_new / np.maximum(rz, 1e-30))
        rz = rz_new
        if i % 10 == 0:
            print(f"cg {i}: residual {np.linalg.norm(r) / start:.4f}", flush=True)
    return x


def normalise(m):
    return m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("data", nargs="+")
    p.add_argument("--init", required=True, help="the distilled static model's folder")
    p.add_argument("--out", required=True)
    p.add_argument("--lam", type=float, default=0.05, help="ridge weight, relative to the mean token's")
    p.add_argument("--iters", type=int, default=60)
    p.add_argument("--blend", type=float, default=0.5, help="weight of the fitted table against the distilled one (carried by W)")
    p.add_argument("--half", action="store_true", help="write the table in half precision")
    p.add_argument("--center", action="store_true", help="remove the teacher vectors' mean before PCA")
    args = p.parse_args()

    init = Path(args.init)
    e0 = load_file(str(init / "model.safetensors"))["embeddings"].astype(np.float64)
    vocab, dims = e0.shape
    ids, teacher = read_records(args.data)
    teacher = normalise(teacher)
    print(f"{len(ids)} chunks, vocabulary {vocab}, table width {dims}, teacher width {teacher.shape[1]}")

    mean = teacher.mean(axis=0) if args.center else np.zeros(teacher.shape[1])
    _, s, vt = np.linalg.svd(teacher - mean, full_matrices=False)
    kept = (s[:dims] ** 2).sum() / (s**2).sum()
    target = (teacher - mean) @ vt[:dims].T
    print(f"PCA to {dims}: {kept:.3f} of the variance kept")

    a = mean_matrix(ids, vocab)
    # W: the distilled table's means, carried onto the target space.
    s0 = a @ e0
    w, *_ = np.linalg.lstsq(s0, target, rcond=None)
    prior = e0 @ w
    cos = lambda x: (normalise(x) * normalise(target)).sum(axis=1).mean()
    print(f"mean cosine to the transformer: distilled {cos(s0 @ w):.4f}")

    diag = np.asarray(a.multiply(a).sum(axis=0)).ravel()
    lam = args.lam * diag[diag > 0].mean()
    at = a.T.tocsr()
    table = block_cg(lambda x: at @ (a @ x) + lam * x, at @ target + lam * prior, prior.copy(), diag + lam, args.iters)
    table = args.blend * table + (1.0 - args.blend) * prior
    print(f"mean cosine to the transformer: fitted {cos(a @ table):.4f} (lam {args.lam}, blend {args.blend})")
    seen = (diag > 0).sum()
    print(f"{seen} of {vocab} tokens seen in the chunks")

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(init / "tokenizer.json", out / "tokenizer.json")
    config = json.loads((init / "config.json").read_text()) if (init / "config.json").exists() else {}
    config.update({"hidden_dim": dims, "normalize": True, "fitted_to_chunks": len(ids), "ridge": args.lam, "blend": args.blend})
    (out / "config.json").write_text(json.dumps(config, indent=2))
    dtype = np.float16 if args.half else np.float32
    save_file({"embeddings": table.astype(dtype)}, str(out / "model.safetensors"))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
