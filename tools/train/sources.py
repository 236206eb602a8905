#!/usr/bin/env python3
"""Mine (description, code) pairs in Python, Go, Rust and Java, for model v2.

Where `mine.py` reads npm tarballs, this reads the other registries this machine reaches,
each source pinned in `sources.tsv` (language, kind, spec):

  crate   NAME@VERSION   a crate of Sextant's own Cargo.lock, from cargo's registry cache
                         (`cargo fetch` brings it); licence from its Cargo.toml
  pypi    NAME==VERSION  `pip download --no-deps` (a wheel or an sdist); licence from its
                         metadata
  deb     PACKAGE        a Debian binary package (`apt-get download`; Go libraries ship
                         their source under /usr/share/gocode); licence from its copyright
  debsrc  PACKAGE        a Debian source package (`apt-get source --download-only`, needs a
                         deb-src line); licence from debian/copyright

Each source is unpacked, filtered by licence (MIT, Apache-2.0, BSD, ISC and the like;
Debian's "Expat" is MIT) and by RESERVED.txt (a reserved name, or a name that starts with
one, is never read; a vendored copy inside another source, a folder named after a reserved
package, is dropped), and run through Sextant's own parser and chunker
(`examples/mine_pairs.rs`, which reads every language's doc comments). Pairs are
deduplicated across all sources (mine.py's rules), capped per source, given a hard
negative from the same file, and written to OUT/pairs-sources.jsonl; `sources-manifest.tsv`
records the chunker's commit and each archive's SHA-256.

Usage:
  python3 tools/train/sources.py --out ~/.cache/sextant/train
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mine  # noqa: E402

HERE = Path(__file__).resolve().parent
REGISTRY = Path.home() / ".cargo" / "registry"

#: Licence names as Cargo, Python metadata and Debian write them, upper-cased.
ALLOWED = mine.ALLOWED_LICENCES | {
    "EXPAT", "MIT LICENSE", "BSD LICENSE", "APACHE", "APACHE-2", "APACHE 2.0",
    "APACHE SOFTWARE LICENSE", "APACHE LICENSE 2.0", "APACHE LICENSE, VERSION 2.0",
    "BSD-3-CLAUSE-CLEAR", "ZLIB", "UNLICENSE", "PSF-2.0", "PYTHON SOFTWARE FOUNDATION LICENSE",
    "BOOST-1.0", "CC0-1.0", "PUBLIC-DOMAIN",
}



def licence_allowed(text: str) -> bool:
    """Whether a licence as Cargo, Python metadata or Debian writes it is one we keep."""
    return mine.expression_allowed(text, ALLOWED)


def crate_source(spec: str, work: Path) -> tuple[Path, str, str]:
    """(directory, licence, sha256 of the .crate) for NAME@VERSION."""
    name, version = spec.split("@", 1)
    crates = list(REGISTRY.glob(f"cache/*/{name}-{version}.crate"))
    if not crates:
        raise RuntimeError(f"{name}-{version}.crate is not in cargo's cache: run `cargo fetch`")
    data = crates[0].read_bytes()
    with tarfile.open(crates[0]) as tar:
        tar.extractall(work, filter="data")
    root = work / f"{name}-{version}"
    toml = (root / "Cargo.toml").read_text(errors="replace")
    m = re.search(r'^license\s*=\s*"([^"]+)"', toml, re.M)
    return root, m.group(1) if m else "", hashlib.sha256(data).hexdigest()


def pypi_source(spec: str, work: Path) -> tuple[Path, str, str]:
    dl = work / "dl"
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", str(dl), spec],
        check=True, capture_output=True,
    )
    archive = next(dl.iterdir())
    data = archive.read_bytes()
    root = work / "src"
    if archive.suffix in (".whl", ".zip"):
        with zipfile.ZipFile(archive) as z:
            z.extractall(root)
    else:
        with tarfile.open(archive) as tar:
            tar.extractall(root, filter="data")
    licence = ""
    for meta in list(root.rglob("METADATA")) + list(root.rglob("PKG-INFO")):
        text = meta.read_text(errors="replace")
        m = re.search(r"^License-Expression:\s*(.+)$", text, re.M)
        if m:
            licence = m.group(1).strip()
            break
        classifiers = re.findall(r"^Classifier: License :: OSI Approved :: (.+)$", text, re.M)
        if classifiers:
            licence = " OR ".join(c.replace(" License", "").strip() for c in classifiers)
            break
        m = re.search(r"^License:\s*(.+)$", text, re.M)
        if m and len(m.group(1)) < 60:
            licence = m.group(1).strip()
            break
    return root, licence, hashlib.sha256(data).hexdigest()


def debian_licence(copyright_file: Path) -> str:
    """The licence of the `Files: *` stanza of a machine-readable debian/copyright."""
    text = copyright_file.read_text(errors="replace") if copyright_file.exists() else ""
    for stanza in re.split(r"\n\s*\n", text):
        if re.search(r"^Files:\s*\*\s*$", stanza, re.M):
            m = re.search(r"^License:\s*(.+)$", stanza, re.M)
            if m:
                return m.group(1).strip()
    return ""


def deb_source(spec: str, work: Path) -> tuple[Path, str, str]:
    subprocess.run(["apt-get", "download", "-q", spec], cwd=work, check=True, capture_output=True)
    deb = next(work.glob("*.deb"))
    data = deb.read_bytes()
    root = work / "x"
    subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
    licence = debian_licence(root / "usr" / "share" / "doc" / spec / "copyright")
    code = root / "usr" / "share" / "gocode" / "src"
    return (code if code.exists() else root), licence, hashlib.sha256(data).hexdigest()


def debsrc_source(spec: str, work: Path) -> tuple[Path, str, str]:
    subprocess.run(["apt-get", "source", "-q", spec], cwd=work, check=True, capture_output=True)
    dsc = next(work.glob("*.dsc"))
    root = next(p for p in work.iterdir() if p.is_dir())
    licence = debian_licence(root / "debian" / "copyright")
    return root, licence, hashlib.sha256(dsc.read_bytes()).hexdigest()


FETCH = {"crate": crate_source, "pypi": pypi_source, "deb": deb_source, "debsrc": debsrc_source}


def source_name(kind: str, spec: str) -> str:
    """The package name a reserved entry is compared with."""
    if kind == "crate":
        return spec.split("@", 1)[0]
    if kind == "pypi":
        return re.split(r"[=<>!~]", spec, 1)[0]
    return spec


def drop_vendored_dirs(pairs: list[dict], reserved: list[str]) -> list[dict]:
    """Drops pairs of files under a folder named after a reserved package (a vendored copy:
    `_vendor/requests/`, `vendor/github.com/gin-gonic/gin/`)."""
    names = {r.lower().rstrip("/").rsplit("/", 1)[-1] for r in reserved}
    kept = []
    for p in pairs:
        dirs = [d.lower() for d in p["path"].split("/")[:-1]]
        if not any(d in names for d in dirs):
            kept.append(p)
    return kept


def read_source(job: tuple[str, str, str, list[str], list[str]]) -> tuple[list[str], list[dict]]:
    """One source: (manifest row, pairs)."""
    language, kind, spec, runner, reserved = job
    row = [language, kind, spec]
    if mine.is_excluded(source_name(kind, spec), reserved):
        return row + ["", "", "0", "0", "reserved or a development corpus"], []
    with tempfile.TemporaryDirectory() as tmp:
        try:
            root, licence, sha = FETCH[kind](spec, Path(tmp))
        except (subprocess.CalledProcessError, RuntimeError, StopIteration, OSError, tarfile.TarError, zipfile.BadZipFile) as e:
            return row + ["", "", "0", "0", f"not fetched: {e}"[:200]], []
        if not licence_allowed(licence):
            return row + [licence or "none", sha, "0", "0", "licence refused"], []
        try:
            r = subprocess.run(runner + [str(root)], capture_output=True, text=True, timeout=mine.MINE_TIMEOUT_S * 2)
        except subprocess.TimeoutExpired:
            return row + [licence, sha, "0", "0", "chunking timed out"], []
    pairs = [json.loads(l) for l in r.stdout.splitlines() if l.strip()]
    pairs = drop_vendored_dirs(pairs, reserved)
    for p in pairs:
        p["package"] = f"{kind}:{spec}"
        p["language"] = language
    return row + [licence, sha, str(len({p["path"] for p in pairs})), str(len(pairs)), ""], pairs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sources", type=Path, default=HERE / "sources.tsv")
    ap.add_argument("--out", type=Path, default=Path.home() / ".cache" / "sextant" / "train")
    ap.add_argument("--manifest", type=Path, default=HERE / "sources-manifest.tsv")
    ap.add_argument("--seed", type=int, default=13)
    a = ap.parse_args()
    reserved = mine.read_reserved()
    runner = mine.mine_pairs_binary()
    commit = mine.chunker_commit()
    jobs = []
    for line in a.sources.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            language, kind, spec = line.split("\t")[:3]
            jobs.append((language, kind, spec, runner, reserved))
    rng = random.Random(a.seed)
    seen_code: set[str] = set()
    seen_desc: set[str] = set()
    rows, total = [], 0
    a.out.mkdir(parents=True, exist_ok=True)
    tmp_out = a.out / "pairs-sources.jsonl.tmp"
    with tmp_out.open("w") as sink, ThreadPoolExecutor(max_workers=2) as pool:
        for n, (row, found) in enumerate(pool.map(read_source, jobs), 1):
            found = mine.deduplicate(found, seen_code, seen_desc)
            found = mine.cap_by_register(found, rng)
            mine.attach_negatives(found, rng)
            for p in found:
                sink.write(json.dumps(p) + "\n")
            total += len(found)
            row[6] = str(len(found))
            rows.append(row)
            print(f"sources: [{n}/{len(jobs)}] {row[0]} {row[2]}: {len(found)} pairs {row[7]} (total {total})", file=sys.stderr, flush=True)
    tmp_out.rename(a.out / "pairs-sources.jsonl")
    with a.manifest.open("w") as f:
        f.write(f"# chunker: {commit}\n")
        f.write("language\tkind\tspec\tlicence\tsha256\tfiles_with_pairs\tpairs\tnote\n")
        for row in rows:
            f.write("\t".join(row) + "\n")
    by_lang: dict[str, int] = {}
    for row in rows:
        by_lang[row[0]] = by_lang.get(row[0], 0) + int(row[6])
    print(f"sources: {total} pairs {by_lang} -> {a.out / 'pairs-sources.jsonl'}", file=sys.stderr)


if __name__ == "__main__":
    main()
