#!/usr/bin/env python3
"""Line range of a Rust item, for the gold of hand-written questions (not Sextant's parser,
so the gold does not come from the system under test).

  locate_rust.py CORPUS PATH SYMBOL

SYMBOL: `name` (a fn, struct, enum, trait, type, union, mod or macro_rules! at any depth),
or `Type.name` (a fn inside an `impl … Type` block, inherent or of a trait). Prints one JSON
line {"path", "symbol", "start_line", "end_line"} (1-based; from the item's line to its
closing brace or semicolon); exits 1 when the item is missing or ambiguous.

Braces are counted outside comments, string literals and char literals; rustfmt'd code
(every crate here) keeps items on their own lines, which is all the rule needs.
"""
import json
import re
import sys

ITEM = r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:(?:const|async|unsafe|extern\s+\"[^\"]*\"|default)\s+)*" \
       r"(?:fn|struct|enum|trait|type|union|mod)\s+{name}\b"
MACRO = r"^\s*(?:#\[macro_export\]\s*)?macro_rules!\s*{name}\b"


def code_only(line, state):
    """The line with comments and literals blanked; `state` carries a block comment."""
    out, i = [], 0
    while i < len(line):
        if state["block"]:
            end = line.find("*/", i)
            if end < 0:
                return "".join(out)
            state["block"], i = False, end + 2
            continue
        two = line[i:i + 2]
        if two == "//":
            break
        if two == "/*":
            state["block"], i = True, i + 2
            continue
        c = line[i]
        if c == '"':
            j = i + 1
            while j < len(line) and line[j] != '"':
                j += 2 if line[j] == "\\" else 1
            i = j + 1
            continue
        m = re.match(r"'(\\.[^']*|[^\\'])'", line[i:])
        if m:
            i += len(m.group(0))
            continue
        out.append(c)
        i += 1
    return "".join(out)


def end_of(lines, start):
    """Last line (0-based) of the item starting at `start`."""
    state, depth, opened = {"block": False}, 0, False
    for k in range(start, len(lines)):
        code = code_only(lines[k], state)
        for c in code:
            if c == "{":
                depth, opened = depth + 1, True
            elif c == "}":
                depth -= 1
                if opened and depth == 0:
                    return k
        if not opened and code.rstrip().endswith(";"):
            return k
    return len(lines) - 1


def find(lines, pattern, lo=0, hi=None):
    hi = len(lines) if hi is None else hi
    rx = re.compile(pattern)
    return [k for k in range(lo, hi) if rx.match(lines[k])]


def main():
    corpus, path, symbol = sys.argv[1:4]
    with open(f"{corpus}/{path}", encoding="utf-8") as f:
        lines = f.read().split("\n")
    if "." in symbol:
        owner, name = symbol.split(".", 1)
        impls = find(lines, r"^\s*impl\b.*\b" + re.escape(owner) + r"\b(?:<[^{]*)?\s*(?:where\b.*)?\{?\s*$")
        hits = []
        for i in impls:
            hits += find(lines, ITEM.format(name=re.escape(name)), i, end_of(lines, i) + 1)
    else:
        name = symbol
        hits = find(lines, ITEM.format(name=re.escape(name))) + find(lines, MACRO.format(name=re.escape(name)))
    if len(hits) != 1:
        print(f"{path} {symbol}: {len(hits)} matches at lines {[h + 1 for h in hits]}", file=sys.stderr)
        sys.exit(1)
    start = hits[0]
    print(json.dumps({"path": path, "symbol": symbol, "start_line": start + 1,
                      "end_line": end_of(lines, start) + 1}))


if __name__ == "__main__":
    main()
