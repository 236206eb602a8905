#!/usr/bin/env python3
"""Line range of a Python definition, for the gold of hand-written questions (Python's own
`ast`, not Sextant's parser, so the gold does not come from the system under test).

  locate_py.py CORPUS PATH SYMBOL

SYMBOL: `name` (a module-level function or class) or `Class.name` (a method of a
module-level class). Prints one JSON line {"path", "symbol", "start_line", "end_line"}
(1-based; from the `def`/`class` line to the definition's last line); exits 1 when the
definition is missing or ambiguous (a name defined twice, e.g. a property's getter and
setter).
"""
import ast
import json
import sys

DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def main():
    corpus, path, symbol = sys.argv[1:4]
    with open(f"{corpus}/{path}", encoding="utf-8") as f:
        tree = ast.parse(f.read())
    *outer, name = symbol.split(".")
    body = tree.body
    for cls in outer:
        found = [n for n in body if isinstance(n, ast.ClassDef) and n.name == cls]
        if len(found) != 1:
            sys.exit(f"{path}: class {cls} found {len(found)} times")
        body = found[0].body
    found = [n for n in body if isinstance(n, DEFS) and n.name == name]
    if len(found) != 1:
        sys.exit(f"{path}: {symbol} found {len(found)} times")
    n = found[0]
    print(json.dumps({"path": path, "symbol": symbol, "start_line": n.lineno, "end_line": n.end_lineno}))


if __name__ == "__main__":
    main()
