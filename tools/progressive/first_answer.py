"""Time from registering a repository with `sextant serve` to its first lexical answer and
to all vectors embedded, and the server's peak RSS meanwhile (Linux).

    python3 tools/progressive/first_answer.py --sextant BIN --repo DIR --query WORDS \
        [--data DIR] [--model-home DIR] [-- extra sextant args]

Starts `BIN --data-dir DATA serve --bind 127.0.0.1:0` (a fresh data dir; models and ONNX
Runtime from --model-home), registers DIR, then polls a lexical search for WORDS every
100 ms and the sync job until it succeeds. Prints one JSON line; the server's log is left
in DATA/server.log.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request


def call(method, url, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def peak_rss_kib(pid):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sextant", required=True)
    p.add_argument("--repo", required=True)
    p.add_argument("--query", required=True)
    p.add_argument("--data")
    p.add_argument("--model-home", default=os.path.expanduser("~/.cache/sextant"))
    p.add_argument("extra", nargs="*")
    a = p.parse_args()
    data = a.data or tempfile.mkdtemp(prefix="sextant-first-answer-")
    cmd = [a.sextant, "--data-dir", data, "--model-home", a.model_home, *a.extra,
           "serve", "--bind", "127.0.0.1:0"]
    server = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    url = None
    lines = []

    def drain():
        nonlocal url
        for line in server.stderr:
            lines.append(line.rstrip())
            m = re.search(r"serving on (\S+)", line)
            if m:
                url = m.group(1)

    threading.Thread(target=drain, daemon=True).start()
    deadline = time.time() + 120
    while url is None and time.time() < deadline:
        time.sleep(0.05)
    if url is None:
        server.kill()
        sys.exit("the server never said where it listens:\n" + "\n".join(lines))
    try:
        started = time.time()
        created = call("POST", f"{url}/api/v1/repositories",
                       {"path": os.path.abspath(a.repo), "name": "bench"})
        job = created["job"]["id"]
        first = None
        embedded_at = None
        pending_seen = 0
        while time.time() - started < 1800:
            if first is None:
                r = call("POST", f"{url}/api/v1/search",
                         {"query": a.query, "retrieval": "lexical"})
                if r["response"]["candidates"]:
                    first = time.time() - started
                    pending_seen = (r["response"].get("embedding") or {}).get("pending", 0)
            state = call("GET", f"{url}/api/v1/jobs/{job}")["job"]
            if state["state"].lower() in ("succeeded", "failed"):
                embedded_at = time.time() - started
                if state["state"].lower() == "failed":
                    sys.exit(f"the sync failed: {state}")
                break
            time.sleep(0.1)
        print(json.dumps({
            "first_lexical_answer_s": round(first, 2) if first else None,
            "pending_vectors_at_first_answer": pending_seen,
            "all_embedded_s": round(embedded_at, 1) if embedded_at else None,
            "peak_rss_mib": round(peak_rss_kib(server.pid) / 1024),
            "job_message": state.get("message"),
        }))
    finally:
        server.terminate()
        server.wait(timeout=30)
        with open(os.path.join(data, "server.log"), "w") as log:
            log.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
