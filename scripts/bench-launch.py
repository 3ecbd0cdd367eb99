#!/usr/bin/env python3
"""Launch overhead: 8 workers through Slurm (one srun job step of 8 tasks)
against 8 local worker processes, side by side in one invocation.

Each run is `coordinator --workers 8 --isolation run` with 8 `noop` stages,
so every worker connects, runs one empty stage and shuts down: the run's
wall time is almost all launch and teardown. Local and Slurm runs alternate
for ROUNDS rounds so drift in machine speed hits both. Per run it records the
run wall (first launch to last end) and the median per-worker wall (launch
to reap for a local process; launch to the end of its connection for a
task). Needs a cluster: `scripts/slurm-local.sh up`. Run by hand on an idle
machine; not part of CI.

usage: scripts/bench-launch.py [--rounds R] [--workers N]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def one_run(coordinator, launcher, workers, tmp, i):
    out = os.path.join(tmp, f"{launcher}-{i}")
    cmd = [coordinator, "--quiet", "--output", out, "--launcher", launcher,
           "--workers", str(workers), "--isolation", "run"] + ["--stage", "noop"] * workers
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    report = json.load(open(os.path.join(out, "report.json")))
    walls = [w["wall_s"] for w in report["workers"]]
    assert len(walls) == workers, walls
    return report["run_wall_s"], statistics.median(walls)


def ms(x):
    return f"{x * 1e3:8.1f} ms"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--workers", type=int, default=8)
    a = ap.parse_args()
    if "SLURM_CONF" not in os.environ:
        os.environ["SLURM_CONF"] = "/tmp/stagebench-slurm/slurm.conf"
    subprocess.run(["cargo", "build", "--release", "--workspace", "--bins", "--quiet"],
                   cwd=ROOT, check=True)
    coordinator = os.path.join(ROOT, "target/release/coordinator")
    runs = {"local": [], "slurm": []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            for launcher in ("local", "slurm") if r % 2 == 0 else ("slurm", "local"):
                runs[launcher].append(one_run(coordinator, launcher, a.workers, tmp, r))
    load = open("/proc/loadavg").read().split()[:3]
    print(f"{a.rounds} rounds, {a.workers} workers; load average {' '.join(load)}; {os.cpu_count()} CPUs")
    print(f"{'':28} {'run wall median':>16} {'min':>11} {'max':>11} {'per-worker median':>18}")
    med = {}
    for launcher, xs in runs.items():
        walls = [x[0] for x in xs]
        med[launcher] = statistics.median(walls)
        per = statistics.median(x[1] for x in xs)
        print(f"{launcher + ' (' + str(a.workers) + ' workers)':28} {ms(med[launcher]):>16} "
              f"{ms(min(walls)):>11} {ms(max(walls)):>11} {ms(per):>18}")
    print(f"slurm / local run wall: {med['slurm'] / med['local']:.1f}x "
          f"(+{(med['slurm'] - med['local']) * 1e3:.0f} ms per launch of {a.workers})")


if __name__ == "__main__":
    sys.exit(main())
