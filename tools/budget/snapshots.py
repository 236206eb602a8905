#!/usr/bin/env python3
"""What a budget buys in snapshots: results, files and repeated code lines per answer.

Runs `sextant search --format mcp` for every question of a query set (JSON lines with
`query`) against a data directory and prints, over all answers: the results the answer
holds (from its header line), the files it shows, the code lines that appear more than
once within one file's snapshot (lines over 12 characters, `return` lines aside; a
snapshot that repeats its wrapper shows here), and lines that are a lone `}`.

Usage: snapshots.py SEXTANT DATA_DIR QUERIES.jsonl BUDGET [extra sextant options…]
  e.g. snapshots.py target/debug/sextant D tools/rankset/queries-oauthlib.jsonl 2000 \\
       --embed-provider static
"""
import collections
import json
import re
import subprocess
import sys


def main() -> None:
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    binary, data_dir, queries, budget, *extra = sys.argv[1:]
    answers = results = files = repeated = braces = 0
    with open(queries, encoding="utf-8") as lines:
        for line in lines:
            question = json.loads(line)["query"]
            out = subprocess.run(
                [binary, "--data-dir", data_dir, *extra, "search", question,
                 "--budget", budget, "--format", "mcp"],
                capture_output=True, text=True, check=False)
            if out.returncode != 0:
                sys.exit(f"sextant failed on {question!r}: {out.stderr[-500:]}")
            content = json.loads(out.stdout)["content"]
            answers += 1
            held = re.search(r"\| (\d+) results?", content[0]["text"])
            results += int(held.group(1)) if held else 0
            files += len(content) - 1
            for item in content[1:]:
                code = item["text"].splitlines()
                counts = collections.Counter(
                    c.strip() for c in code
                    if len(c.strip()) > 12 and not c.strip().startswith("return"))
                repeated += sum(n - 1 for n in counts.values() if n > 1)
                braces += sum(1 for c in code if c.strip() == "}")
    if answers == 0:
        sys.exit("no questions")
    print(f"{answers} answers: {results / answers:.2f} results and {files / answers:.2f} "
          f"files each; {repeated} repeated code lines, {braces} lone `}}` lines")


if __name__ == "__main__":
    main()
