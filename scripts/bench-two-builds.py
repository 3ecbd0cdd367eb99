#!/usr/bin/env python3
"""Two builds side by side at seed scale: cold preparation (serial, with its
components, and --workers 2) and the recipe profile's warm stages, in
alternating order per round, so machine drift hits both alike. Prints per stage the medians and
the ratio new/old. Run by hand on an idle machine; not part of CI.

Build the old one in a worktree first, e.g.
  git worktree add /tmp/old REV && CARGO_TARGET_DIR=/tmp/old-target \\
    cargo build --release -p stagebench-coordinator -p stagebench-worker

usage: scripts/bench-two-builds.py --old /tmp/old-target/release/coordinator
           [--new target/release/coordinator] [--rounds 5] [--workers 2]
           [--data DIR | --data builtin]

`--data builtin` runs on the built-in default data, as README's main job does
(`--workers 8 --mode cold-prep`).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROFILE_STAGES = [
    "warm_fit_normalizer",
    "count_eligible_contexts",
    "warm_loader_epoch",
    "end_to_end_fit_epoch",
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", required=True, help="the old build's coordinator")
    ap.add_argument("--new", default=os.path.join(ROOT, "target/release/coordinator"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument(
        "--data",
        default=os.path.expanduser("~/.cache/stagebench/bench/frozen-seed"),
        help="a frozen dataset (scripts/bench-cold-prep.sh makes the seed one), or 'builtin'",
    )
    ap.add_argument("--workers", type=int, default=2, help="the parallel preparation's processes")
    a = ap.parse_args()
    builds = {"old": a.old, "new": a.new}
    figures = {side: {} for side in builds}
    work = tempfile.mkdtemp(prefix="stagebench-two-builds-")
    try:
        for r in range(a.rounds):
            for side in (["old", "new"] if r % 2 == 0 else ["new", "old"]):
                add = lambda k, v: figures[side].setdefault(k, []).append(v)
                out = os.path.join(work, f"{side}-{r}-prep")
                prep = ["--mode", "cold-prep", "--rounds", "1", "--workers", str(a.workers)]
                run(builds[side], prep, a.data, out)
                c = json.load(open(os.path.join(out, "report.json")))
                add("cold-prep serial", c["serial"]["wall_s"])
                add(f"cold-prep --workers {a.workers}", c["parallel"]["wall_s"])
                for k, v in c["serial"]["components_s"].items():
                    add(f"  serial {k[:-2]}", v)
                shutil.rmtree(out)
                out = os.path.join(work, f"{side}-{r}-profile")
                run(builds[side], ["--mode", "profile"], a.data, out)
                stages = json.load(open(os.path.join(out, "report.json")))["stages"]
                for k in PROFILE_STAGES:
                    add(k, stages[k]["wall_s"])
                shutil.rmtree(out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    m = statistics.median
    print(f"{a.rounds} rounds in alternating order; load average {' '.join(open('/proc/loadavg').read().split()[:3])}")
    print(f"{'stage':26s} {'old median':>11s} {'new median':>11s} {'new/old':>8s}   per round old | new")
    for k in figures["old"]:
        o, n = figures["old"][k], figures["new"][k]
        each = " ".join(f"{x:.3f}" for x in o) + " | " + " ".join(f"{x:.3f}" for x in n)
        print(f"{k:26s} {m(o):10.3f}s {m(n):10.3f}s {m(n) / m(o):8.3f}   {each}")


def run(coordinator, args, data, out):
    data = [] if data == "builtin" else ["--data", data]
    subprocess.run(
        [coordinator, *args, "--quiet", *data, "--output", out],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )


if __name__ == "__main__":
    main()
