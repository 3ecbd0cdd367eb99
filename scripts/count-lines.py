#!/usr/bin/env python3
"""Non-test lines of each crate's src/ (blank and comment lines included):
every .rs file but tests.rs, *_tests.rs and files under a tests/ folder, less
each `#[cfg(test)]` item (a `mod tests { … }` block, or a `mod tests;` line).
The figure issue 59 bounds the coordinator by.

Usage: scripts/count-lines.py [CRATE_DIR ...]   (default: every workspace member)
"""

import os
import re
import sys


def non_test_lines(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    kept, i = 0, 0
    while i < len(lines):
        if lines[i].strip() == "#[cfg(test)]":
            j = i + 1
            if re.match(r"\s*(pub(\(crate\))? )?mod \w+;", lines[j]):
                i = j + 1
                continue
            depth, opened = 0, False
            while j < len(lines):
                depth += lines[j].count("{") - lines[j].count("}")
                opened = opened or "{" in lines[j]
                j += 1
                if (opened and depth <= 0) or (not opened and lines[j - 1].rstrip().endswith(";")):
                    break
            i = j
            continue
        kept += 1
        i += 1
    return kept


def crate_lines(src):
    total = 0
    for d, _, files in os.walk(src):
        for f in files:
            p = os.path.join(d, f)
            if not f.endswith(".rs") or f == "tests.rs" or f.endswith("_tests.rs"):
                continue
            if os.sep + "tests" + os.sep in os.path.relpath(p, src):
                continue
            total += non_test_lines(p)
    return total


def main(argv):
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    crates = argv[1:] or re.findall(r'"([a-z_]+)"', re.search(r"members\s*=\s*\[([^\]]*)\]",
                                                              open(os.path.join(root, "Cargo.toml")).read()).group(1))
    for c in crates:
        src = os.path.join(root, c, "src") if not os.path.isabs(c) else os.path.join(c, "src")
        print(f"{crate_lines(src):7d}  {c}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
