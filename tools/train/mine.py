#!/usr/bin/env python3
"""Mine (description, code) pairs from permissively licensed npm packages.

Steps (each a subcommand; `all` runs them in order):

  select   most-downloaded packages from a registry listing (name, version, downloads
           TSV) -> tools/train/packages.txt (name@version, one a line). Reserved
           packages (../shared/eval/RESERVED.txt) and our own development corpora are
           never listed.
  mine     for each name@version: `npm pack`, SHA-256 of the tarball, licence from its
           package.json (only MIT / Apache-2.0 / BSD / ISC kept), unpack, run Sextant's own
           parser and chunker over it (`cargo run --example mine_pairs`), deduplicate
           (same code, near-identical description), cap pairs per package, attach one hard
           negative from the same file or package, and write
             OUT/pairs.jsonl               {"package","path","breadcrumb","kind","description","code","negative"}
             tools/train/manifest.tsv      package@version, licence, tarball sha256, files, pairs (committed)
           The manifest's first line names the commit of the chunker that mined the pairs
           (`# chunker: <commit>`, `+dirty` when src/, examples/ or Cargo.* had changes).
           A tarball whose SHA-256 differs from the one the existing manifest records is
           refused, and nothing is written (`--accept-new-tarballs` when the package list
           changed on purpose).

Usage:
  python3 tools/train/mine.py select --listing npm.tsv --top 600
  python3 tools/train/mine.py mine --out ~/.cache/sextant/train
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import subprocess
import sys
import tarfile
import tempfile
from concurrent.futures import ThreadPoolExecutor
from multiprocessing import Pool
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
RESERVED = REPO.parent / "shared" / "eval" / "RESERVED.txt"

#: Licences whose code may be learned from and whose model may be shipped.
ALLOWED_LICENCES = {
    "MIT", "MIT-0", "ISC", "0BSD", "APACHE-2.0", "BSD-2-CLAUSE", "BSD-3-CLAUSE", "BSD",
}

#: Our own development and ranking corpora: measured on, never trained on.
DEV_CORPORA = ["lodash", "lodash-es", "lodash.", "jest", "@jest/", "mocha", "eslint", "@eslint/"]

#: Most pairs kept from one package, so that a few huge ones do not dominate.
MAX_PAIRS_PER_PACKAGE = 400

#: Larger tarballs are bundles or binaries, not source worth reading.
MAX_TARBALL_BYTES = 15 * 1024 * 1024

#: A package whose chunking takes longer than this is skipped (a few ship megabyte-sized
#: generated files that are not worth learning from).
MINE_TIMEOUT_S = 120


def read_reserved(path: Path = RESERVED) -> list[str]:
    """The reserved package names and prefixes, one per non-comment line."""
    if not path.exists():
        sys.exit(f"mine: {path} is missing: the reserved list must be read before mining")
    return [
        line.strip()
        for line in path.read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]


def is_excluded(name: str, reserved: list[str]) -> bool:
    """Whether `name` is reserved, bundles a reserved package, or is a development corpus.

    A reserved entry excludes the package itself and every package whose name starts
    with it (`rxjs-compat`, `@trpc/server`, `zod-to-json-schema`), as RESERVED.txt says.
    """
    lowered = name.lower()
    for entry in reserved + DEV_CORPORA:
        e = entry.lower()
        if lowered == e or lowered.startswith(e):
            return True
        # Scoped packages of a reserved project (`@rxjs/...`) and ones named after it.
        if lowered.startswith("@") and lowered[1:].split("/", 1)[0] == e.rstrip("/"):
            return True
    return False


def npm_reserved(path: Path = RESERVED) -> list[str]:
    """The reserved names that can appear in JavaScript code: the list's entries before
    its "Other languages" section, lower-cased, scope marks removed."""
    names = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if line.startswith("#") and "other languages" in line.lower():
            break
        if line and not line.startswith("#"):
            name = line.strip("@/").lower()
            if name not in names:
                names.append(name)
    return names


def identifier_words(text: str) -> set[str]:
    """Every identifier of `text` split at camelCase, `_`, `-` and digits, lower-cased
    (`ZodString2` -> zod, string; `date-fns` -> date, fns, and the whole `date-fns`)."""
    words = set()
    for token in re.findall(r"[A-Za-z][A-Za-z0-9_-]*", text):
        words.add(token.lower())
        for part in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+", token):
            words.add(part.lower())
    return words


def drop_vendored(pairs: list[dict], reserved_names: list[str]) -> tuple[list[dict], int]:
    """Drops every pair of a file whose pairs name a reserved package as a word (a bundled
    or vendored copy, like a `ZodString` class inside a utilities bundle, or code written
    against it). Returns the kept pairs and how many files were dropped."""
    flagged = set()
    for p in pairs:
        words = identifier_words(p["path"] + " " + p["code"])
        if any(name in words for name in reserved_names):
            flagged.add(p["path"])
    return [p for p in pairs if p["path"] not in flagged], len(flagged)


def licence_ok(package_json: dict) -> tuple[bool, str]:
    """Whether the package's declared licence is one we keep, and the licence as read.

    Reads `license` (an SPDX id or expression, or the old `{ "type": … }` object) and the
    older `licenses` array. An `OR` expression is kept when one side is allowed, an `AND`
    expression only when every part is; anything else (missing, `UNLICENSED`,
    `SEE LICENSE IN …`, copyleft) is refused.
    """
    raw = package_json.get("license")
    if isinstance(raw, dict):
        raw = raw.get("type")
    if raw is None and isinstance(package_json.get("licenses"), list):
        types = [
            (l.get("type") if isinstance(l, dict) else l) for l in package_json["licenses"]
        ]
        raw = " OR ".join(t for t in types if isinstance(t, str))
    if not isinstance(raw, str) or not raw.strip():
        return False, ""
    text = raw.strip()
    return expression_allowed(text, ALLOWED_LICENCES), text


def expression_allowed(text: str, allowed: set[str]) -> bool:
    """An SPDX-like licence expression: `OR` (or `/`) needs one allowed side, `AND`
    needs every part allowed; names are compared upper-cased."""
    expr = text.strip().strip("()").upper()
    if not expr:
        return False
    if " AND " in expr:
        return all(part.strip(" ()") in allowed for part in expr.split(" AND "))
    return any(part.strip(" ()") in allowed for part in re.split(r"\s+OR\s+|/", expr))


def normalise_description(text: str) -> str:
    """Lower case letters and digits only: near-identical descriptions compare equal."""
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def code_key(code: str) -> str:
    """Hash of the code body (after the preamble) with whitespace removed."""
    body = code.split("\n---\n", 1)[-1]
    return hashlib.sha256(re.sub(r"\s+", "", body).encode()).hexdigest()


def deduplicate(pairs: list[dict], seen_code: set[str], seen_desc: set[str]) -> list[dict]:
    """Drops pairs whose code (in the same register) or normalised description was already
    kept (across packages): a function both documented and tested keeps both pairs."""
    kept = []
    for p in pairs:
        ck = p.get("register", "doc") + ":" + code_key(p["code"])
        dk = normalise_description(p["description"])
        if ck in seen_code or dk in seen_desc:
            continue
        seen_code.add(ck)
        seen_desc.add(dk)
        kept.append(p)
    return kept


#: Most pairs kept from one package, per register: doc comments as before (model v2's
#: cap), then files' own docs with their outlines, and test descriptions with the function
#: they exercise.
REGISTER_CAPS = {"doc": MAX_PAIRS_PER_PACKAGE, "module": 100, "test": 150}


#: A file's leading comment that says where the file came from, not what it does.
PROVENANCE = re.compile(
    r"https?://|\b(copied|taken|imported|adapted|ported|forked|derived) from\b|\bauthors?\b|"
    r"\blocale configuration\b|\bgenerated\b",
    re.IGNORECASE,
)


def describes_purpose(pair: dict) -> bool:
    """False for a module pair whose description is provenance (a URL, "copied from …", an
    author line, a locale file's header): such a file doc says nothing of what the file
    does. Doc and test pairs are kept as they are."""
    return pair.get("register", "doc") != "module" or not PROVENANCE.search(pair["description"])


def cap_by_register(pairs: list[dict], rng: random.Random) -> list[dict]:
    """A random sample of at most `REGISTER_CAPS[register]` pairs of each register, in
    (path, breadcrumb) order; module pairs that only say where a file came from are
    dropped first (`describes_purpose`)."""
    kept = []
    pairs = [p for p in pairs if describes_purpose(p)]
    for register, cap in REGISTER_CAPS.items():
        members = [p for p in pairs if p.get("register", "doc") == register]
        rng.shuffle(members)
        kept += members[:cap]
    return sorted(kept, key=lambda p: (p["path"], p["breadcrumb"], p.get("register", "doc")))


def attach_negatives(pairs: list[dict], rng: random.Random) -> None:
    """Gives each pair the code of another pair of the same package as a hard negative,
    from the same file when the file has one."""
    by_file: dict[str, list[int]] = {}
    for i, p in enumerate(pairs):
        by_file.setdefault(p["path"], []).append(i)
    for i, p in enumerate(pairs):
        same_file = [j for j in by_file[p["path"]] if j != i]
        pool = same_file or [j for j in range(len(pairs)) if j != i]
        p["negative"] = pairs[rng.choice(pool)]["code"] if pool else None


def select(listing: Path, top: int, out: Path) -> None:
    reserved = read_reserved()
    rows = []
    with listing.open() as f:
        next(f)
        for line in f:
            cols = line.rstrip("\n").split("\t")
            if len(cols) < 3 or not cols[2].isdigit():
                continue
            name, version, downloads = cols[0], cols[1], int(cols[2])
            if name.startswith("@types/") or is_excluded(name, reserved):
                continue
            rows.append((downloads, name, version))
    rows.sort(reverse=True)
    out.write_text("".join(f"{n}@{v}\n" for _, n, v in rows[:top]))
    print(f"select: {min(top, len(rows))} packages -> {out}", file=sys.stderr)


def mine_pairs_binary() -> list[str]:
    """The command that runs Sextant's chunker over a directory (built once)."""
    subprocess.run(["cargo", "build", "--quiet", "--example", "mine_pairs"], cwd=REPO, check=True)
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    return [str(target / "debug" / "examples" / "mine_pairs")]


def split_spec(spec: str) -> tuple[str, str]:
    at = spec.rindex("@")
    return spec[:at], spec[at + 1 :]


def pack(spec: str, tarballs: Path) -> Path | None:
    """`npm pack SPEC` into `tarballs` (kept there, so a second run downloads nothing)."""
    name, version = split_spec(spec)
    tgz = tarballs / f"{name.replace('/', '+')}-{version}.tgz"
    if tgz.exists():
        return tgz
    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run(
            ["npm", "pack", spec, "--silent", "--pack-destination", tmp],
            capture_output=True, text=True,
        )
        got = list(Path(tmp).glob("*.tgz"))
        if r.returncode != 0 or not got:
            print(f"mine: {spec}: npm pack failed: {r.stderr.strip()[:200]}", file=sys.stderr)
            return None
        got[0].rename(tgz)
    return tgz


def fetch_all(specs: list[str], reserved: list[str], tarballs: Path) -> dict[str, Path]:
    """Downloads every non-excluded package, eight at a time (the network is the slow part)."""
    wanted = [s for s in specs if not is_excluded(split_spec(s)[0], reserved)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        paths = list(pool.map(lambda s: pack(s, tarballs), wanted))
    print(f"mine: {sum(p is not None for p in paths)} of {len(wanted)} tarballs", file=sys.stderr)
    return {s: p for s, p in zip(wanted, paths) if p is not None}


def chunker_commit() -> str:
    """The commit of the chunker that mines (this checkout's HEAD), `+dirty` when the code
    that reads packages has uncommitted changes."""
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True)
    if head.returncode != 0:
        sys.exit(f"mine: cannot read the chunker's commit (git rev-parse HEAD): {head.stderr.strip()}")
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--", "src", "examples", "Cargo.toml", "Cargo.lock"],
        cwd=REPO, capture_output=True, text=True,
    ).stdout.strip()
    return head.stdout.strip() + ("+dirty" if dirty else "")


def recorded_hashes(manifest: Path) -> dict[str, str]:
    """package@version -> tarball SHA-256, as an earlier run recorded them (empty when there
    is no manifest yet)."""
    if not manifest.exists():
        return {}
    hashes = {}
    for line in manifest.read_text().splitlines():
        cols = line.split("\t")
        if line.startswith("#") or cols[0] == "package" or len(cols) < 3 or not cols[2]:
            continue
        hashes[cols[0]] = cols[2]
    return hashes


def hash_mismatches(rows: list[tuple], recorded: dict[str, str]) -> list[str]:
    """The packages whose tarball's SHA-256 differs from the recorded one, described."""
    return [
        f"{spec}: {sha} (manifest.tsv has {recorded[spec]})"
        for spec, _, sha, *_ in rows
        if spec in recorded and sha and sha != recorded[spec]
    ]


def read_package(job: tuple[str, Path, list[str]]) -> tuple[str, str, str, list[dict], str]:
    """One package: (spec, licence, tarball SHA-256, pairs, why it gave none or "")."""
    spec, tgz, runner = job
    data = tgz.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    if len(data) > MAX_TARBALL_BYTES:
        return spec, "", sha, [], "tarball over 15 MB (bundles and binaries)"
    with tempfile.TemporaryDirectory() as tmp:
        try:
            with tarfile.open(tgz) as tar:
                tar.extractall(tmp, filter="data")
        except (tarfile.TarError, OSError) as e:
            return spec, "", sha, [], f"unreadable tarball: {e}"
        root = Path(tmp) / "package"
        try:
            pj = json.loads((root / "package.json").read_text())
        except (OSError, ValueError):
            pj = {}
        ok, licence = licence_ok(pj)
        if not ok:
            return spec, licence, sha, [], "licence refused"
        try:
            r = subprocess.run(runner + [str(root)], capture_output=True, text=True, timeout=MINE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return spec, licence, sha, [], f"chunking took over {MINE_TIMEOUT_S} s (huge generated files)"
        return spec, licence, sha, [json.loads(l) for l in r.stdout.splitlines() if l.strip()], ""


def mine(packages: Path, out: Path, manifest: Path, seed: int, accept_new_tarballs: bool = False) -> None:
    reserved = read_reserved()
    recorded = recorded_hashes(manifest)
    commit = chunker_commit()
    out.mkdir(parents=True, exist_ok=True)
    tarballs = out / "tarballs"
    tarballs.mkdir(exist_ok=True)
    runner = mine_pairs_binary()
    rng = random.Random(seed)
    seen_code: set[str] = set()
    seen_desc: set[str] = set()
    specs = [l.strip() for l in packages.read_text().splitlines() if l.strip()]
    fetched = fetch_all(specs, reserved, tarballs)
    reserved_names = npm_reserved()
    rows, total, dropped_files = [], 0, 0
    jobs = [(spec, fetched[spec], runner) for spec in specs if spec in fetched]
    with (out / "pairs.jsonl.tmp").open("w") as sink, Pool(processes=os.cpu_count() or 2) as pool:
        for n, (spec, licence, sha, found, note) in enumerate(pool.imap(read_package, jobs), 1):
            if note:
                rows.append((spec, licence or "none", sha, 0, 0, note))
                continue
            found, vendored = drop_vendored(found, reserved_names)
            dropped_files += vendored
            files = len({p["path"] for p in found})
            for p in found:
                p["package"] = spec
            found = deduplicate(found, seen_code, seen_desc)
            found = cap_by_register(found, rng)
            attach_negatives(found, rng)
            for p in found:
                sink.write(json.dumps(p) + "\n")
            total += len(found)
            rows.append((spec, licence, sha, files, len(found), ""))
            print(f"mine: [{n}/{len(jobs)}] {spec}: {len(found)} pairs (total {total})", file=sys.stderr)
    changed = hash_mismatches(rows, recorded)
    if changed and not accept_new_tarballs:
        (out / "pairs.jsonl.tmp").unlink()
        sys.exit(
            "mine: tarballs differ from the SHA-256 that manifest.tsv records (nothing written):\n  "
            + "\n  ".join(changed)
            + "\nThe registry served other bytes for a pinned version: find out why before "
            "training on them, or pass --accept-new-tarballs if the change is intended."
        )
    (out / "pairs.jsonl.tmp").rename(out / "pairs.jsonl")
    with manifest.open("w") as f:
        f.write(f"# chunker: {commit}\n")
        f.write("package\tlicence\ttarball_sha256\tfiles_with_pairs\tpairs\tnote\n")
        for row in rows:
            f.write("\t".join(str(c) for c in row) + "\n")
    print(f"mine: {dropped_files} files naming a reserved package dropped", file=sys.stderr)
    print(f"mine: {total} pairs from {sum(1 for r in rows if r[4])} packages -> {out / 'pairs.jsonl'}", file=sys.stderr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("select")
    s.add_argument("--listing", type=Path, required=True)
    s.add_argument("--top", type=int, default=600)
    s.add_argument("--packages", type=Path, default=HERE / "packages.txt")
    m = sub.add_parser("mine")
    m.add_argument("--packages", type=Path, default=HERE / "packages.txt")
    m.add_argument("--out", type=Path, default=Path.home() / ".cache" / "sextant" / "train")
    m.add_argument("--manifest", type=Path, default=HERE / "manifest.tsv")
    m.add_argument("--seed", type=int, default=13)
    m.add_argument("--accept-new-tarballs", action="store_true",
                   help="write even when a tarball's SHA-256 differs from the manifest's")
    a = ap.parse_args()
    if a.cmd == "select":
        select(a.listing, a.top, a.packages)
    else:
        mine(a.packages, a.out, a.manifest, a.seed, a.accept_new_tarballs)


if __name__ == "__main__":
    main()
