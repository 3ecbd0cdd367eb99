#!/usr/bin/env python3
"""What `--inputs DIR` costs a run (issue 42): the same command with and
without `--inputs`, beside the baseline of hashing the same files with
`sha256sum`, side by side in one run.

`--inputs` walks the directory twice (before the run directory exists, and
after the last phase), outside every measured wall, so its cost shows only
in the coordinator's own wall. Per round, in alternating order:
  - `coordinator --mode trials --trials 2 --warmup 0 --command true` (bare);
  - the same with `--inputs DIR`;
  - `sha256sum` over every file of DIR (one process, the page cache warm).
It prints the medians, the added cost per digest ((with - bare) / 2) and its
ratio to sha256sum's. The control: the reported inputs' file count and bytes
must equal what was written. Run by hand on an idle machine (release build).

usage: scripts/bench-inputs.py [--files N] [--mib-per-file M] [--rounds R]
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COORDINATOR = os.path.join(ROOT, "target", "release", "coordinator")


def timed(args):
    t = time.perf_counter()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=64)
    ap.add_argument("--mib-per-file", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "data")
        os.makedirs(os.path.join(data, "sub"))
        paths = []
        for i in range(a.files):
            p = os.path.join(data, "sub" if i % 2 else "", f"f{i:04}.bin")
            with open(p, "wb") as f:
                f.write(os.urandom(a.mib_per_file << 20))
            paths.append(p)
        total = a.files * (a.mib_per_file << 20)
        base = ["--quiet", "--mode", "trials", "--trials", "2", "--warmup", "0",
                "--command", "true", "--name", "true"]
        walls = {"bare": [], "inputs": [], "sha256sum": []}
        for r in range(a.rounds):
            order = ["bare", "inputs", "sha256sum"]
            if r % 2:
                order.reverse()
            for what in order:
                out = os.path.join(tmp, f"run-{what}-{r}")
                if what == "sha256sum":
                    walls[what].append(timed(["sha256sum", *paths]))
                    continue
                extra = ["--inputs", data] if what == "inputs" else []
                walls[what].append(timed([COORDINATOR, *base, *extra, "--output", out]))
                if what == "inputs":
                    with open(os.path.join(out, "report.json")) as f:
                        got = json.load(f)["inputs"][0]
                    assert (got["files"], got["bytes"]) == (a.files, total), got
        med = {k: statistics.median(v) for k, v in walls.items()}
        per_digest = (med["inputs"] - med["bare"]) / 2
        print(f"{a.files} files, {total >> 20} MiB, {a.rounds} rounds, medians:")
        for k, v in med.items():
            print(f"  {k:<10} {v * 1000:9.1f} ms")
        print(f"  one --inputs digest: {per_digest * 1000:.1f} ms "
              f"({total / (1 << 20) / per_digest:.0f} MiB/s), "
              f"{per_digest / med['sha256sum']:.2f}x sha256sum's wall")


if __name__ == "__main__":
    main()
