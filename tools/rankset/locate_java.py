#!/usr/bin/env python3
"""Line range of a Java declaration, for the gold of hand-written questions (a brace
matcher, not Sextant's parser, so the gold does not come from the system under test).

  locate_java.py CORPUS PATH SYMBOL

SYMBOL: `Name` (a class, interface, enum or annotation type, top-level or nested),
`Type.member` (a method, constructor or nested type declared directly in that type's body; `#N` picks
the N-th of overloads, 1-based). Prints one JSON line {"path", "symbol", "start_line",
"end_line"} (1-based; from the declaration's line, after its annotations, to its closing
brace or semicolon); exits 1 when the declaration is missing or ambiguous. Braces are
counted outside comments, strings and char literals.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locate_go import braces  # noqa: E402  (the same scanner: Java has no raw strings)

MODS = r"(?:(?:public|protected|private|static|final|abstract|synchronized|native|default|strictfp)\s+)*"


def depth_at(pairs):
    """A function offset -> brace depth before that offset."""
    marks = []
    d = 0
    for off, step in pairs:
        d += step
        marks.append((off, d))

    def at(offset):
        depth = 0
        for off, dd in marks:
            if off >= offset:
                break
            depth = dd
        return depth
    return at


def end_of(text, start, pairs):
    """Offset of the brace closing the block opened first after `start` (or the `;`)."""
    semi = text.find(";", start)
    depth = 0
    for off, d in pairs:
        if off < start:
            continue
        if depth == 0 and d > 0 and 0 <= semi < off:
            return semi  # an abstract or interface method: no body
        depth += d
        if depth == 0:
            return off
    return len(text) - 1


def main():
    corpus, path, symbol = sys.argv[1:4]
    with open(f"{corpus}/{path}", encoding="utf-8") as f:
        text = f.read()
    pairs = braces(text)
    at = depth_at(pairs)
    nth = None
    if "#" in symbol:
        symbol, n = symbol.split("#")
        nth = int(n)
    *types, member = symbol.split(".")
    lo, hi, depth = 0, len(text), 0
    for t in types:
        pat = rf"^\s*{MODS}(?:class|interface|enum|@interface)\s+{re.escape(t)}\b"
        found = [m.start() for m in re.finditer(pat, text[lo:hi], re.M) if at(lo + m.start()) == depth]
        if len(found) != 1:
            sys.exit(f"{path}: type {t} found {len(found)} times")
        s = lo + found[0]
        lo, hi, depth = s, end_of(text, s, pairs), depth + 1
    if types:
        pat = (rf"^\s*{MODS}(?:<[^>]*>\s*)?(?:[\w.<>\[\]?, ]+\s+)?{re.escape(member)}\s*\(")
    else:
        pat = rf"^\s*{MODS}(?:class|interface|enum|@interface)\s+{re.escape(member)}\b"
    found = [lo + m.start() for m in re.finditer(pat, text[lo:hi], re.M)
             if at(lo + m.start()) == depth and not re.match(r"\s*(?:return|new|throw)\b", text[lo + m.start():])]
    if not found and types:  # a nested type
        pat = rf"^\s*{MODS}(?:class|interface|enum|@interface)\s+{re.escape(member)}\b"
        found = [lo + m.start() for m in re.finditer(pat, text[lo:hi], re.M) if at(lo + m.start()) == depth]
    if nth is not None:
        found = found[nth - 1:nth] if len(found) >= nth else []
    if len(found) != 1:
        sys.exit(f"{path}: {symbol} found {len(found)} times")
    s = found[0]
    s += len(text[s:]) - len(text[s:].lstrip())
    e = end_of(text, s, pairs)
    print(json.dumps({"path": path, "symbol": symbol if nth is None else f"{symbol}#{nth}",
                      "start_line": text.count("\n", 0, s) + 1, "end_line": text.count("\n", 0, e) + 1}))


if __name__ == "__main__":
    main()
