#!/usr/bin/env python3
"""Page-load budget of the web console (issue 42), in headless Chromium over WebDriver.

Serves a data directory with `sextant serve`, then measures in a fresh page each time:
  - the search page: first contentful paint, and the time from navigation to the first
    result shown, for each query of a JSONL file (`{"query": ...}` lines);
  - the symbol page of `--symbol` (name or `path > name`): time from navigation until its
    callers are listed.
Prints medians and every sample as JSON. Needs chromium and chromedriver (Debian:
apt-get install chromium chromium-driver). Standard library only.

  tools/console-bench/bench.py --sextant target/debug/sextant --data DIR \
      [--global-flag=--model-home --global-flag=~/.cache/sextant] \
      --queries q.jsonl [--limit 10] [--symbol target --callers 5000]

`--make-callers N --workspace DIR` writes a TypeScript workspace where one function has
N callers (N / 50 files of 50 functions each) to index first.
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def call(method, url, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.loads(r.read() or b"null").get("value")


class Browser:
    def __init__(self):
        self.port = free_port()
        self.driver = subprocess.Popen(["chromedriver", f"--port={self.port}"],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{self.port}"
        for _ in range(100):
            try:
                if call("GET", f"{base}/status")["ready"]:
                    break
            except OSError:
                time.sleep(0.1)
        caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": {
            "binary": "/usr/bin/chromium",
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,900"]}}}}
        session = call("POST", f"{base}/session", caps)["sessionId"]
        self.session = f"{base}/session/{session}"

    def open(self, url):
        call("POST", f"{self.session}/url", {"url": url})

    def wait_for(self, css, contains=""):
        """Milliseconds from navigation start until `css` exists (and holds `contains`)."""
        script = """
const [css, contains, done] = arguments;
const ready = () => { const e = document.querySelector(css); return e && e.textContent.includes(contains); };
if (ready()) return done(performance.now());
const o = new MutationObserver(() => { if (ready()) { o.disconnect(); done(performance.now()); } });
o.observe(document, {subtree: true, childList: true, characterData: true});
setTimeout(() => done(-1), 60000);
"""
        call("POST", f"{self.session}/timeouts", {"script": 70000})
        return call("POST", f"{self.session}/execute/async", {"script": script, "args": [css, contains]})

    def paint(self):
        return call("POST", f"{self.session}/execute/sync", {"script": """
const p = performance.getEntriesByName('first-contentful-paint')[0];
return p ? p.startTime : -1;""", "args": []})

    def close(self):
        try:
            call("DELETE", self.session)
        finally:
            self.driver.kill()


def make_callers(workspace, n):
    os.makedirs(os.path.join(workspace, "src", "callers"), exist_ok=True)
    with open(os.path.join(workspace, "src", "target.ts"), "w") as f:
        f.write("/** The function everyone calls. */\nexport function target(x: number): number {\n  return x + 1;\n}\n")
    per_file = 50
    for i in range(0, n, per_file):
        lines = ["import { target } from '../target';", ""]
        for j in range(i, min(i + per_file, n)):
            lines.append(f"export function caller{j}(v: number): number {{\n  return target(v) * {j % 7 + 1};\n}}\n")
        with open(os.path.join(workspace, "src", "callers", f"c{i // per_file}.ts"), "w") as f:
            f.write("\n".join(lines))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sextant", required=True)
    ap.add_argument("--data")
    ap.add_argument("--global-flag", action="append", default=[],
                    help="a global flag for sextant (repeat; e.g. --global-flag=--model-home)")
    ap.add_argument("--queries")
    ap.add_argument("--limit", type=int, default=10)
    ap.add_argument("--symbol")
    ap.add_argument("--callers", type=int, default=0, help="callers the symbol page should list")
    ap.add_argument("--make-callers", type=int)
    ap.add_argument("--workspace")
    args = ap.parse_args()
    if args.make_callers:
        make_callers(args.workspace, args.make_callers)
        print(f"wrote {args.make_callers} callers under {args.workspace}")
        return

    port = free_port()
    flags = [os.path.expanduser(f) for f in args.global_flag]
    server = subprocess.Popen([args.sextant, "--data-dir", args.data, *flags, "serve", "--bind",
                               f"127.0.0.1:{port}"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            urllib.request.urlopen(f"{base}/readyz", timeout=2)
            break
        except OSError:
            time.sleep(0.2)
    browser = Browser()
    out = {"search": [], "symbol": []}
    try:
        if args.queries:
            queries = [json.loads(l)["query"] for l in open(args.queries) if l.strip()][: args.limit]
            # One warm-up: the model's first query and the page's first load.
            browser.open(f"{base}/#/search?" + urllib.parse.urlencode({"q": queries[0]}))
            browser.wait_for("#summary")
            for q in queries:
                browser.open("about:blank")
                browser.open(f"{base}/#/search?" + urllib.parse.urlencode({"q": q}))
                first = browser.wait_for("#result-0")
                out["search"].append({"query": q, "first_paint_ms": browser.paint(), "first_result_ms": first})
        if args.symbol:
            wanted = f"({args.callers} in" if args.callers else ""
            for _ in range(5):
                browser.open("about:blank")
                browser.open(f"{base}/#/symbol?" + urllib.parse.urlencode({"name": args.symbol}))
                shown = browser.wait_for("#rel-Callers", wanted)
                out["symbol"].append({"symbol": args.symbol, "callers_listed_ms": shown,
                                      "first_paint_ms": browser.paint()})
    finally:
        browser.close()
        server.terminate()
    def med(rows, key):
        vals = [r[key] for r in rows if r[key] >= 0]
        return round(statistics.median(vals), 1) if vals else None
    summary = {
        "search_first_paint_ms_p50": med(out["search"], "first_paint_ms") if out["search"] else None,
        "search_first_result_ms_p50": med(out["search"], "first_result_ms") if out["search"] else None,
        "symbol_callers_listed_ms_p50": med(out["symbol"], "callers_listed_ms") if out["symbol"] else None,
        "failed": sum(1 for r in out["search"] if r["first_result_ms"] < 0)
        + sum(1 for r in out["symbol"] if r["callers_listed_ms"] < 0),
    }
    print(json.dumps({"summary": summary, "samples": out}, indent=1))


if __name__ == "__main__":
    sys.exit(main())
