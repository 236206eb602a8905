#!/usr/bin/env python3
"""Line range of a Go declaration, for the gold of hand-written questions (a brace matcher,
not Sextant's parser, so the gold does not come from the system under test).

  locate_go.py CORPUS PATH SYMBOL

SYMBOL: `name` (a top-level func, or a type declared on its own `type` line) or
`Type.name` (a method whose receiver is `Type` or `*Type`). Prints one JSON line
{"path", "symbol", "start_line", "end_line"} (1-based; from the declaration's line to its
closing brace, or the line itself when it opens none); exits 1 when the declaration is
missing or ambiguous. Braces are counted outside comments, strings, raw strings and runes;
gofmt'd code keeps declarations at the start of their lines, which is all the rule needs.
"""
import json
import re
import sys


def braces(text):
    """(offset, +1/-1) for each brace outside comments and literals."""
    out, i, n = [], 0, len(text)
    while i < n:
        c, two = text[i], text[i:i + 2]
        if two == "//":
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif two == "/*":
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif c in "\"'":
            i += 1
            while i < n and text[i] != c and text[i] != "\n":
                i += 2 if text[i] == "\\" else 1
            i += 1
        elif c == "`":
            j = text.find("`", i + 1)
            i = n if j < 0 else j + 1
        else:
            if c in "{}":
                out.append((i, 1 if c == "{" else -1))
            i += 1
    return out


def main():
    corpus, path, symbol = sys.argv[1:4]
    with open(f"{corpus}/{path}", encoding="utf-8") as f:
        text = f.read()
    if "." in symbol:
        recv, name = symbol.split(".", 1)
        pat = rf"^func \(\s*\w*\s*\*?{re.escape(recv)}(?:\[[^\]]*\])?\s*\)\s*{re.escape(name)}\b"
    else:
        pat = rf"^(?:func\s+{re.escape(symbol)}\b|type\s+{re.escape(symbol)}\b)"
    starts = [m.start() for m in re.finditer(pat, text, re.M)]
    if len(starts) != 1:
        sys.exit(f"{path}: {symbol} found {len(starts)} times")
    start = starts[0]
    line_end = text.find("\n", start)
    line_end = len(text) if line_end < 0 else line_end
    depth, end = 0, None
    for off, d in braces(text[start:]):
        if d > 0 and depth == 0 and start + off > line_end:
            break  # the declaration's own line opened nothing: a one-line declaration
        depth += d
        if depth == 0:
            end = start + off
            break
    end = line_end if end is None else end
    first = text.count("\n", 0, start) + 1
    last = text.count("\n", 0, end) + 1
    print(json.dumps({"path": path, "symbol": symbol, "start_line": first, "end_line": last}))


if __name__ == "__main__":
    main()
