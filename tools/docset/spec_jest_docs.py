#!/usr/bin/env python3
"""The jest documentation question set: "how do I configure / where is it documented"
questions whose answers are sections of jest's docs (docs/*.md), written by hand from the
headings, with gold computed from the files (a section runs from its heading to the next
heading of its level or above; fenced code is not a heading). The same section in
website/versioned_docs/*/ is gold too (gold_mode "any"): the docs site keeps a copy per
release, and any copy answers the question.

Usage: python3 tools/docset/spec_jest_docs.py ~/.cache/sextant/corpora/jest > tools/docset/queries-jest-docs.jsonl
"""
import glob
import json
import os
import re
import sys

# (question, [(docs file, heading text as written, without the #s), …]) — any listed
# section answers.
QUESTIONS = [
    ("how do I make the run fail when test coverage drops below 80%",
     [("Configuration.md", "`coverageThreshold` \\[object]")]),
    ("how do I map an import alias like @/components to a folder",
     [("Configuration.md", "`moduleNameMapper` \\[object&lt;string, string | array&lt;string>&gt;]")]),
    ("how do I run some setup code before each test file, after the test framework is installed",
     [("Configuration.md", "`setupFilesAfterEnv` \\[array]")]),
    ("how do I use jsdom instead of node as the test environment",
     [("Configuration.md", "`testEnvironment` \\[node | jsdom | string]")]),
    ("how do I get jest to transform one package inside node_modules",
     [("Configuration.md", "`transformIgnorePatterns` \\[array&lt;string&gt;]")]),
    ("how do I change the default timeout of every test",
     [("Configuration.md", "`testTimeout` \\[number]")]),
    ("how do I limit how many worker processes run tests",
     [("Configuration.md", "`maxWorkers` \\[number | string]"), ("CLI.md", "`--maxWorkers=<num>|<string>`")]),
    ("how do I clear mock calls automatically between tests",
     [("Configuration.md", "`clearMocks` \\[boolean]"), ("Configuration.md", "`resetMocks` \\[boolean]"),
      ("Configuration.md", "`restoreMocks` \\[boolean]")]),
    ("how do I run only the tests affected by changes since a git branch",
     [("CLI.md", "`--changedSince`")]),
    ("how do I rerun just the tests that failed last time",
     [("CLI.md", "`--onlyFailures`")]),
    ("how do I split the test suite across several CI machines",
     [("CLI.md", "`--shard`")]),
    ("how can I print the configuration jest resolved",
     [("CLI.md", "`--showConfig`")]),
    ("how do I find out what keeps jest from exiting after the tests finish",
     [("CLI.md", "`--detectOpenHandles`")]),
    ("where is the JEST_WORKER_ID environment variable documented",
     [("EnvironmentVariables.md", "`JEST_WORKER_ID`")]),
    ("how do I move fake timers forward by a number of milliseconds",
     [("TimerMocks.md", "Advance Timers by Time")]),
    ("how do I enable fake timers for all tests in the config",
     [("TimerMocks.md", "Enable Fake Timers"), ("Configuration.md", "`fakeTimers` \\[object]")]),
    ("how do I mock a module when using native ES modules",
     [("ECMAScriptModules.md", "Module mocking in ESM")]),
    ("how do I mock a node core module like fs with a __mocks__ folder",
     [("ManualMocks.md", "Mocking Node modules")]),
    ("how do I update snapshots after an intended change",
     [("SnapshotTesting.md", "Updating Snapshots")]),
    ("should snapshot files be checked into version control",
     [("SnapshotTesting.md", "Should snapshot files be committed?")]),
    ("how do I run several projects with their own config in one jest run",
     [("Configuration.md", "`projects` \\[array&lt;string | ProjectConfig&gt;]")]),
    ("how do I add a custom reporter to the test results output",
     [("Configuration.md", "`reporters` \\[array&lt;moduleName | \\[moduleName, options]&gt;]")]),
    ("how do I debug my tests in VS Code",
     [("Troubleshooting.md", "Debugging in VS Code")]),
    ("how do I run a setup function once before all test suites",
     [("Configuration.md", "`globalSetup` \\[string]")]),
    ("how do I keep some folders out of the coverage report",
     [("Configuration.md", "`coveragePathIgnorePatterns` \\[array&lt;string&gt;]")]),
    ("how do I handle css and image imports when testing a webpack project",
     [("Webpack.md", "Handling Static Assets")]),
    ("how do I tell jest which file names are test files",
     [("Configuration.md", "`testMatch` \\[array&lt;string&gt;]"), ("Configuration.md", "`testRegex` \\[string | array&lt;string&gt;]")]),
    ("how do I write a custom transformer for a file type",
     [("CodeTransformation.md", "Writing custom transformers")]),
]

HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^ {0,3}(```|~~~)")


def sections(path):
    """(level, title, start, end) of every ATX heading's section, 1-based lines."""
    lines = open(path, encoding="utf-8").read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    heads, fence = [], None
    for i, line in enumerate(lines):
        m = FENCE.match(line)
        if m:
            fence = None if fence == m.group(1) else (fence or m.group(1))
            continue
        if fence:
            continue
        h = HEADING.match(line)
        if h:
            heads.append((len(h.group(1)), h.group(2), i + 1))
    out = []
    for k, (level, title, start) in enumerate(heads):
        end = len(lines)
        for level2, _, start2 in heads[k + 1:]:
            if level2 <= level:
                end = start2 - 1
                break
        while end > start and not lines[end - 1].strip():
            end -= 1
        out.append((level, title, start, end))
    return out


def main():
    root = sys.argv[1]
    copies = sorted(glob.glob(os.path.join(root, "website", "versioned_docs", "*")))
    for n, (question, wanted) in enumerate(QUESTIONS, 1):
        gold = []
        for name, title in wanted:
            found_in_docs = False
            for folder in [os.path.join(root, "docs")] + copies:
                path = os.path.join(folder, name)
                if not os.path.exists(path):
                    continue
                for _, t, start, end in sections(path):
                    if t == title:
                        rel = os.path.relpath(path, root)
                        gold.append({"path": rel, "symbol": title, "start_line": start, "end_line": end})
                        found_in_docs |= folder.endswith("docs") and "versioned" not in folder
            if not found_in_docs:
                sys.exit(f"question {n}: no section {title!r} in docs/{name}")
        print(json.dumps({
            "id": f"jest:docs:{n:02d}", "set": "docs", "repo": "jest", "corpus": "jest",
            "query": question, "kind": "docs", "gold_mode": "any", "gold": gold,
            "files": sorted({g["path"] for g in gold}),
        }))


if __name__ == "__main__":
    main()
