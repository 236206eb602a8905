#!/usr/bin/env python3
"""Contrastive fine-tuning of the code-search embedder on mined (description, code) pairs,
then export to int8 ONNX for Sextant.

Recipe: bge-small-en-v1.5 (float weights recovered by base.py), CLS pooling, queries with
bge's instruction prefix (as Sextant sends them), InfoNCE over in-batch negatives
(temperature 0.05) in batches that mix at most 8 pairs per package, so same-package code
serves as hard negatives (`--hard-negatives` adds the miner's explicit one per pair, at
twice the cost; `--mine-negatives LO HI` draws it from the starting model's ranks LO..HI
over all training code), embeddings and the lowest 4 layers frozen, bf16 autocast (on a GPU,
or a CPU that computes in bf16), AdamW, linear
warm-up and decay, fixed seed, CPU threads pinned. 2 % of the pairs (whole packages) are
held out: the script reports retrieval on them before and after training, and the cosine
agreement of the int8 export with the float model on them.

Usage:
  python3 tools/train/train.py --pairs ~/.cache/sextant/train/pairs.jsonl \
      --base-onnx-dir ~/.cache/sextant/models/bge-small-en-v1.5-int8 --out /tmp/sextant-model \
      --steps 700
Writes OUT/float (PyTorch), OUT/model.onnx (int8), OUT/tokenizer.json, OUT/config.json and
OUT/metrics.json.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from tokenizers import Tokenizer
from transformers import BertModel

sys.path.insert(0, str(Path(__file__).resolve().parent))
import base  # noqa: E402

QUERY_PREFIX = "Represent this sentence for searching relevant passages: "


def load_pairs(path: Path) -> list[dict]:
    return [json.loads(l) for l in path.open() if l.strip()]


def split(pairs: list[dict], share: float, seed: int) -> tuple[list[dict], list[dict]]:
    """Held-out pairs are whole packages, so no file is on both sides."""
    packages = sorted({p["package"] for p in pairs})
    random.Random(seed).shuffle(packages)
    held, n = set(), 0
    for pkg in packages:
        if n >= share * len(pairs):
            break
        held.add(pkg)
        n += sum(1 for p in pairs if p["package"] == pkg)
    return [p for p in pairs if p["package"] not in held], [p for p in pairs if p["package"] in held]


class Encoder:
    def __init__(self, tokenizer_path: Path, max_len: int):
        self.tok = Tokenizer.from_file(str(tokenizer_path))
        self.tok.enable_truncation(max_length=max_len)
        self.tok.enable_padding(pad_id=0, pad_token="[PAD]")

    def __call__(self, texts: list[str], device: str = "cpu") -> dict[str, torch.Tensor]:
        enc = self.tok.encode_batch(texts)
        ids = torch.tensor([e.ids for e in enc], dtype=torch.long, device=device)
        mask = torch.tensor([e.attention_mask for e in enc], dtype=torch.long, device=device)
        return {"input_ids": ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(ids)}


def package_batches(pairs: list[dict], size: int, per_package: int, seed: int) -> list[list[dict]]:
    """Batches of `size` pairs with at most `per_package` from one package, so that every
    pair meets same-package code (the hard negatives: same style, same vocabulary) and code
    from other packages among its in-batch negatives. Deterministic for a seed."""
    rng = random.Random(seed)
    by_pkg: dict[str, list[dict]] = {}
    for p in pairs:
        by_pkg.setdefault(p["package"], []).append(p)
    groups = []
    for members in by_pkg.values():
        rng.shuffle(members)
        groups += [members[i : i + per_package] for i in range(0, len(members), per_package)]
    rng.shuffle(groups)
    flat = [p for g in groups for p in g]
    return [flat[i : i + size] for i in range(0, len(flat) - size + 1, size)]


def embed(model: BertModel, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    return F.normalize(model(**batch).last_hidden_state[:, 0], dim=-1)


@torch.no_grad()
def encode_all(model: BertModel, enc: Encoder, texts: list[str], device: str, size: int = 256) -> torch.Tensor:
    """Normalised embeddings of `texts`, in batches, on `device`."""
    model.eval()
    return torch.cat([embed(model, enc(texts[i : i + size], device)).float() for i in range(0, len(texts), size)])


@torch.no_grad()
def retrieval(q: torch.Tensor, d: torch.Tensor) -> dict:
    """Query i's gold is code i: recall@1/10 and MRR@10 against every code."""
    ranks = (q @ d.T).argsort(dim=1, descending=True)
    gold = torch.arange(len(q), device=q.device).unsqueeze(1)
    pos = (ranks == gold).float().argmax(dim=1)
    return {
        "pairs": len(q),
        "r@1": float((pos < 1).float().mean()),
        "r@10": float((pos < 10).float().mean()),
        "mrr@10": float(torch.where(pos < 10, 1.0 / (pos + 1).float(), torch.zeros_like(pos, dtype=torch.float)).mean()),
    }


@torch.no_grad()
def evaluate(model: BertModel, qenc: Encoder, denc: Encoder, held: list[dict], device: str = "cpu") -> dict:
    """Each held description against every held code (recall@1/10, MRR@10), and the same
    within each register (descriptions of one register against that register's code)."""
    q = encode_all(model, qenc, [QUERY_PREFIX + p["description"] for p in held], device)
    d = encode_all(model, denc, [p["code"] for p in held], device)
    out = retrieval(q, d)
    registers = sorted({p.get("register", "doc") for p in held})
    if len(registers) > 1:
        for r in registers:
            idx = torch.tensor([i for i, p in enumerate(held) if p.get("register", "doc") == r], device=q.device)
            out[r] = retrieval(q[idx], d[idx])
    return out


@torch.no_grad()
def mine_negatives(model: BertModel, qenc: Encoder, denc: Encoder, pairs: list[dict], device: str,
                   lo: int, hi: int, seed: int) -> int:
    """Sets each pair's `negative` to a code the starting model ranks high for its
    description: one drawn at random from ranks `lo`..`hi` among all training codes,
    skipping the pair's own code and any code equal to it (whitespace aside). The first
    ranks are left out: among them are the unlabelled true answers. Returns how many
    pairs got one."""
    rng = random.Random(seed)
    key = [hash("".join(p["code"].split())) for p in pairs]
    q = encode_all(model, qenc, [QUERY_PREFIX + p["description"] for p in pairs], device)
    d = encode_all(model, denc, [p["code"] for p in pairs], device)
    got = 0
    for start in range(0, len(pairs), 1024):
        top = (q[start : start + 1024] @ d.T).topk(hi + 4, dim=1).indices.tolist()
        for i, row in zip(range(start, start + len(top)), top):
            ranked = [j for j in row if key[j] != key[i]][lo:hi]
            pairs[i]["negative"] = pairs[rng.choice(ranked)]["code"] if ranked else None
            got += bool(ranked)
    return got


def train(args) -> None:
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    base_dir = out / "base"
    if not (base_dir / "model.safetensors").exists():
        base.build(args.base_onnx_dir, base_dir)
    device = args.device if args.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
    model = BertModel.from_pretrained(str(base_dir), add_pooling_layer=False).to(device)
    qenc = Encoder(base_dir / "tokenizer.json", args.query_len)
    denc = Encoder(base_dir / "tokenizer.json", args.code_len)
    pairs = load_pairs(args.pairs)
    train_set, held = split(pairs, 0.02, args.seed)
    held = held[: args.held]
    for spec in args.repeat:
        register, times = spec.split("=")
        extra = [p for p in train_set if p.get("register", "doc") == register]
        train_set += extra * (int(times) - 1)
        print(f"train: {len(extra)} {register} pairs taken {times} times", file=sys.stderr)
    print(f"train: {len(train_set)} training pairs, {len(held)} held out", file=sys.stderr)
    metrics = {"base": evaluate(model, qenc, denc, held, device), "device": device}
    print(f"train: base {metrics['base']}", file=sys.stderr)
    if args.mix_only:
        # Re-export an earlier run's float weights at another --interpolate, no training.
        metrics.update(json.loads((out / "metrics.json").read_text()))
        trained = BertModel.from_pretrained(str(out / "float"), add_pooling_layer=False)
        finish(model.cpu(), trained, out, base_dir, held, qenc, denc, metrics, args)
        return

    if args.mine_negatives:
        lo, hi = args.mine_negatives
        got = mine_negatives(model, qenc, denc, train_set, device, lo, hi, args.seed)
        args.hard_negatives = True
        metrics["mined_negatives"] = {"pairs": got, "ranks": [lo, hi]}
        print(f"train: {got} of {len(train_set)} pairs given a negative from ranks {lo}-{hi}", file=sys.stderr)
    for module in [model.embeddings, *model.encoder.layer[: args.frozen_layers]]:
        for param in module.parameters():
            param.requires_grad = False
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trainable, lr=args.lr, weight_decay=0.01)
    warm = max(1, args.steps // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warm, max(0.0, (args.steps - s) / max(1, args.steps - warm)))
    )
    batches = package_batches(train_set, args.batch, args.per_package, args.seed)
    # bf16 autocast only where the CPU computes in bf16 (AVX512-BF16, AMX): emulated, it
    # is some 10x slower than float32 (measured on a 2-core AVX2 machine).
    bf16 = args.precision == "bf16" or (
        args.precision == "auto" and (device == "cuda" or (
            torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported()))
    )
    print(f"train: {'bf16 autocast' if bf16 else 'float32'}", file=sys.stderr)
    model.train()
    started = time.time()
    for step in range(args.steps):
        batch = batches[step % len(batches)]
        codes = [p["code"] for p in batch]
        if args.hard_negatives:
            codes += [p["negative"] or p["code"] for p in batch]
        with torch.autocast(device, dtype=torch.bfloat16, enabled=bf16):
            q = embed(model, qenc([QUERY_PREFIX + p["description"] for p in batch], device)).float()
            d = embed(model, denc(codes, device)).float()
        logits = q @ d.T / args.temperature
        # The same code twice in one batch (a negative equal to another positive) is no negative.
        dup = torch.tensor([[c == p["code"] and j != i for j, c in enumerate(codes)] for i, p in enumerate(batch)], device=device)
        logits = logits.masked_fill(dup, -1e4)
        loss = F.cross_entropy(logits, torch.arange(len(batch), device=device))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trainable, 1.0)
        opt.step()
        sched.step()
        opt.zero_grad()
        if step % 10 == 0 or step == args.steps - 1:
            el = time.time() - started
            print(f"train: step {step + 1}/{args.steps} loss {loss.item():.4f} {el / (step + 1):.2f} s/step, {el / 60:.1f} min", file=sys.stderr, flush=True)
    metrics["trained"] = evaluate(model, qenc, denc, held, device)
    metrics["train_minutes"] = round((time.time() - started) / 60, 1)
    print(f"train: trained {metrics['trained']}", file=sys.stderr)
    model = model.cpu()
    model.save_pretrained(str(out / "float"))
    metrics["training_pairs"] = len(train_set)
    metrics["registers"] = sorted({p.get("register", "doc") for p in train_set})
    base_model = BertModel.from_pretrained(str(base_dir), add_pooling_layer=False)
    finish(base_model, model, out, base_dir, held, qenc, denc, metrics, args)


def finish(base_model: BertModel, trained: BertModel, out: Path, base_dir: Path, held: list[dict],
           qenc: Encoder, denc: Encoder, metrics: dict, args) -> None:
    """Exports `base + interpolate × (trained − base)` (weight-space ensembling: below 1 the
    model keeps more of what the base knew outside the training register) and writes the
    metrics."""
    model = trained
    if args.interpolate != 1.0:
        a = args.interpolate
        base = base_model.state_dict()
        mixed = {k: base[k] + a * (v - base[k]) for k, v in trained.state_dict().items()}
        base_model.load_state_dict(mixed)
        model = base_model
        metrics["interpolated"] = evaluate(model, qenc, denc, held)
        print(f"train: interpolated {a}: {metrics['interpolated']}", file=sys.stderr)
    metrics["interpolate"] = args.interpolate
    export(model, out, base_dir, held, denc, metrics)
    if not args.mix_only:
        metrics.update({k: v for k, v in vars(args).items() if k in ("steps", "batch", "lr", "temperature", "seed", "code_len", "query_len", "per_package", "frozen_layers", "hard_negatives", "mine_negatives", "repeat")})
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")


def export(model: BertModel, out: Path, base_dir: Path, held: list[dict], denc: Encoder, metrics: dict) -> None:
    """float ONNX -> 8-bit (dynamic, per channel), and the cosine agreement between them."""
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model.eval()
    sample = denc(["function add(a, b) { return a + b; }"])
    f32 = out / "model-f32.onnx"
    names = dict(
        input_names=["input_ids", "attention_mask", "token_type_ids"], output_names=["last_hidden_state"],
        dynamic_axes={n: {0: "batch", 1: "sequence"} for n in ["input_ids", "attention_mask", "token_type_ids", "last_hidden_state"]},
        opset_version=17,
    )
    inputs = (sample["input_ids"], sample["attention_mask"], sample["token_type_ids"])
    try:
        torch.onnx.export(model, inputs, str(f32), dynamo=False, **names)
    except Exception as e:  # a PyTorch without the TorchScript exporter
        print(f"train: TorchScript export failed ({e}); exporting with dynamo", file=sys.stderr)
        torch.onnx.export(model, inputs, str(f32), dynamo=True, external_data=False, **names)
    # Unsigned 8-bit weights: with signed ones ONNX Runtime's x86 kernels (u8 activations
    # times s8 weights) saturate on AVX2 machines, and the export agreed with the float
    # model at cosine 0.918 (min 0.861) for model v2 against 0.995 (min 0.989) unsigned,
    # for 8 % more time per text (docs/BENCHMARKS.md, "Model v2").
    quantize_dynamic(str(f32), str(out / "model.onnx"), weight_type=QuantType.QUInt8, per_channel=True)
    shutil.copy(base_dir / "tokenizer.json", out / "tokenizer.json")
    shutil.copy(base_dir / "config.json", out / "config.json")
    sess = ort.InferenceSession(str(out / "model.onnx"))
    cos = []
    with torch.no_grad():
        for i in range(0, len(held), 16):
            enc = denc([p["code"] for p in held[i : i + 16]])
            ref = embed(model, enc)
            got = sess.run(None, {k: v.numpy() for k, v in enc.items()})[0][:, 0]
            got = F.normalize(torch.from_numpy(got), dim=-1)
            cos.extend((ref * got).sum(-1).tolist())
    metrics["int8_cosine"] = {"mean": float(np.mean(cos)), "min": float(np.min(cos))}
    print(f"train: int8 cosine agreement {metrics['int8_cosine']}", file=sys.stderr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=Path, required=True)
    ap.add_argument("--base-onnx-dir", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--steps", type=int, default=700)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=3e-5)
    ap.add_argument("--temperature", type=float, default=0.05)
    ap.add_argument("--code-len", type=int, default=128)
    ap.add_argument("--query-len", type=int, default=32)
    ap.add_argument("--held", type=int, default=500)
    ap.add_argument("--per-package", type=int, default=8)
    ap.add_argument("--frozen-layers", type=int, default=4)
    ap.add_argument("--hard-negatives", action="store_true", help="also one mined negative per pair (twice the code passes)")
    ap.add_argument("--mine-negatives", type=int, nargs=2, metavar=("LO", "HI"),
                    help="give each pair a negative the starting model ranks between LO and HI among all training codes (implies --hard-negatives)")
    ap.add_argument("--repeat", action="append", default=[], metavar="REGISTER=N",
                    help="take the training pairs of a register N times (test=3: the scarce registers weigh more)")
    ap.add_argument("--device", default="auto", help="cpu, cuda, or auto (cuda where there is one)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--precision", choices=["auto", "bf16", "fp32"], default="auto",
                    help="bf16 autocast where the CPU supports bf16 (auto), always, or never")
    ap.add_argument("--interpolate", type=float, default=1.0,
                    help="export base + A x (trained - base); 1 exports the trained weights")
    ap.add_argument("--mix-only", action="store_true",
                    help="no training: re-export OUT/float at --interpolate")
    train(ap.parse_args())


if __name__ == "__main__":
    main()
