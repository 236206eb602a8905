#!/usr/bin/env python3
"""Tracked refs against separate registrations (issue 40's benchmark).

Indexes N refs (the newest tags matching --tags) of one git repository twice: as refs of
one registration (`repo ref add` + `repo sync NAME@REF`), and as N registrations of their
own (`index --git … --ref TAG`). Prints the time and data-directory size of each, then
serves the first data directory and times searches on the default ref and on one tag.

    python3 tools/refs-bench/bench.py --sextant target/debug/sextant \
        --repo /path/to/a/git/repository --default-ref v11.8.0 --tags '^v1[01]\\.' \
        --refs 20 \
        --queries tools/rankset/queries-mocha.jsonl
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time
import urllib.request


def du(path):
    """Bytes under path (files only), and without the bare mirrors under repos/."""
    total = mirrors = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                n = os.path.getsize(os.path.join(root, f))
            except OSError:
                continue
            total += n
            if os.sep + "repos" + os.sep in root + os.sep:
                mirrors += n
    return total, total - mirrors


def run(cmd):
    started = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{done.stderr[-2000:]}")
    return time.monotonic() - started, done.stdout


def sync_report(stdout):
    m = re.search(r"indexed: (\d+) indexed, (\d+) removed", stdout)
    return (int(m.group(1)), int(m.group(2))) if m else (None, None)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sextant", required=True)
    ap.add_argument("--repo", required=True)
    ap.add_argument("--default-ref", default="main")
    ap.add_argument("--tags", default=".")
    ap.add_argument("--refs", type=int, default=20)
    ap.add_argument("--queries", required=True)
    ap.add_argument("--model", default="static")
    ap.add_argument("--port", type=int, default=18740)
    args = ap.parse_args()

    tags = subprocess.run(
        ["git", "-C", args.repo, "tag", "--sort=-creatordate"],
        capture_output=True, text=True, check=True,
    ).stdout.split()
    tags = [t for t in tags if re.search(args.tags, t) and t != args.default_ref][: args.refs]
    url = "file://" + os.path.abspath(args.repo)
    home = os.path.expanduser("~/.cache/sextant")
    work = tempfile.mkdtemp(prefix="refs-bench-")
    refs_dir, separate_dir = os.path.join(work, "refs"), os.path.join(work, "separate")

    def cli(data, *rest):
        return [args.sextant, "--data-dir", data, "--model-home", home,
                "--embed-provider", args.model, *rest]

    print(f"{len(tags)} tags of {args.repo}: {tags[0]} … {tags[-1]}")
    # One registration, N refs.
    t_base, out = run(cli(refs_dir, "index", "--git", url, "--ref", args.default_ref, "--name", "r"))
    print(f"refs: default ref {args.default_ref} indexed in {t_base:.1f} s")
    t_refs, per_ref = 0.0, []
    for tag in tags:
        t, _ = run(cli(refs_dir, "repo", "ref", "add", "r", tag))
        t2, out = run(cli(refs_dir, "repo", "sync", f"r@{tag}"))
        t_refs += t + t2
        per_ref.append((tag, round(t + t2, 1), *sync_report(out)))
    refs_total, refs_index = du(refs_dir)
    # N registrations.
    t_sep, out = run(cli(separate_dir, "index", "--git", url, "--ref", args.default_ref, "--name", "r"))
    for tag in tags:
        t, _ = run(cli(separate_dir, "index", "--git", url, "--ref", tag, "--name", f"r-{tag}"))
        t_sep += t
    sep_total, sep_index = du(separate_dir)
    print(json.dumps({"per_ref": per_ref}, indent=None))
    print(f"{len(tags)} refs of one registration: {t_base + t_refs:.1f} s "
          f"({t_refs:.1f} s for the refs), {refs_total / 1e6:.1f} MB "
          f"({refs_index / 1e6:.1f} MB without the mirror)")
    print(f"{len(tags) + 1} registrations: {t_sep:.1f} s, {sep_total / 1e6:.1f} MB "
          f"({sep_index / 1e6:.1f} MB without the mirrors)")

    # Search latency on the default ref and on one tag (server-side total_ms).
    queries = [json.loads(l)["query"] for l in open(args.queries) if l.strip()]
    server = subprocess.Popen(
        cli(refs_dir, "serve", "--bind", f"127.0.0.1:{args.port}"),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        base = f"http://127.0.0.1:{args.port}/api/v1"
        for _ in range(100):
            try:
                urllib.request.urlopen(base + "/repositories", timeout=1)
                break
            except Exception:
                time.sleep(0.2)

        def search(query, ref):
            body = {"query": query, "repositories": ["r"]}
            if ref:
                body["ref"] = ref
            req = urllib.request.Request(
                base + "/search", data=json.dumps(body).encode(),
                headers={"content-type": "application/json"},
            )
            started = time.monotonic()
            answer = json.load(urllib.request.urlopen(req, timeout=60))
            return (time.monotonic() - started) * 1000, answer["response"]["timings"]["totalMs"]

        for ref in (None, tags[0]):
            search(queries[0], ref)  # warm
            walls, totals = zip(*[search(q, ref) for q in queries * 2])
            print(f"search on {ref or args.default_ref + ' (default)'}: "
                  f"p50 {statistics.median(walls):.1f} ms wall, "
                  f"{statistics.median(totals):.1f} ms in the searcher "
                  f"({len(walls)} searches)")
    finally:
        server.terminate()
        server.wait()
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
