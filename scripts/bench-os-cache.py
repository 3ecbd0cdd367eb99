#!/usr/bin/env python3
"""What a truly cold OS cache changes in the main job (issue 28): cold-prep
with `--os-cache as-is` beside `--os-cache cold`, same dataset, same rounds.

Each round runs both, in alternating order, as `coordinator --mode cold-prep
--rounds 1` (one serial and one N-process phase each). Per variant it prints
medians over rounds of: what the serial and the parallel phase read from
storage (`read_bytes`), the inputs' size, the serial and parallel walls; then
the walls' ratios cold / as-is. The control is in the figures themselves:
as-is right after the dataset's verification read every file must read next
to nothing, cold must read about the inputs' size. Run by hand on an idle
machine (release build); not in CI.

usage: scripts/bench-os-cache.py [--data DIR] [--rounds R] [--workers N]
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COORDINATOR = os.path.join(ROOT, "target", "release", "coordinator")
MIB = 1024 * 1024


def run(os_cache, data, workers, out):
    args = [COORDINATOR, "--quiet", "--mode", "cold-prep", "--rounds", "1",
            "--workers", str(workers), "--os-cache", os_cache, "--output", out]
    if data:
        args += ["--data", data]
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(os.path.join(out, "report.json")) as f:
        r = json.load(f)
    phases = {p["key"]: p for p in r["storage"]["phases"]}
    serial = phases["cold_feature_cache_prepare"]
    parallel = phases["cold_feature_cache_prepare_parallel"]
    return {
        "serial read MiB": serial["read_bytes"] / MIB,
        "parallel read MiB": parallel["read_bytes"] / MIB,
        "inputs MiB": r["storage"]["inputs_bytes"] / MIB,
        "serial wall s": r["serial"]["wall_s"],
        "parallel wall s": r["parallel"]["wall_s"],
        "warnings": len(r.get("warnings", [])),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", help="a frozen dataset [default: the built-in cohort]")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    seen = {"as-is": [], "cold": []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(a.rounds):
            order = ["as-is", "cold"] if i % 2 == 0 else ["cold", "as-is"]
            for v in order:
                seen[v].append(run(v, a.data, a.workers, os.path.join(tmp, f"{v}-{i}")))
    keys = list(seen["cold"][0].keys())
    med = {v: {k: statistics.median(x[k] for x in seen[v]) for k in keys} for v in seen}
    print(f"medians over {a.rounds} rounds, --workers {a.workers}, alternating order")
    print(f"{'':20} {'as-is':>10} {'cold':>10}")
    for k in keys:
        print(f"{k:20} {med['as-is'][k]:>10.3f} {med['cold'][k]:>10.3f}")
    for k in ["serial wall s", "parallel wall s"]:
        print(f"{k} cold / as-is: {med['cold'][k] / med['as-is'][k]:.2f}x")


if __name__ == "__main__":
    main()
