#!/usr/bin/env python3
"""The recipe profile at `seed` scale, stage by stage, next to the seed's figures.

Runs `coordinator --mode profile` ROUNDS times (release build) on the seed-scale
cohort that scripts/bench-cold-prep.sh generates and freezes once into
~/.cache/stagebench/bench/frozen-seed (run that first, or pass --data), and
prints per stage the median wall time, CPU time and peak RSS over the rounds,
beside the seed profiler's single observation on a faster desktop CPU.
Run by hand on an idle machine; not part of CI.

usage: scripts/bench-profile.py [--rounds R] [--data DIR]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The seed profiler's figures (i9-13900K, TF 2.21, two threads; one observation).
SEED_S = {
    "warm_fit_normalizer": 6.72,
    "count_eligible_contexts": 8.09,
    "warm_loader_epoch": 14.1,
}
STAGES = [
    "verify_before",
    "cold_feature_cache_prepare",
    "warm_fit_normalizer",
    "count_eligible_contexts",
    "warm_loader_epoch",
    "verify_after",
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--data", default=os.path.expanduser("~/.cache/stagebench/bench/frozen-seed"))
    a = ap.parse_args()
    if not os.path.exists(os.path.join(a.data, "frozen.json")):
        sys.exit(f"no frozen dataset at {a.data}: run SCALE=seed scripts/bench-cold-prep.sh first")
    subprocess.run(["cargo", "build", "--release", "--workspace", "--bins", "--quiet"],
                   cwd=ROOT, check=True)
    coordinator = os.path.join(ROOT, "target/release/coordinator")
    reports = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            out = os.path.join(tmp, f"profile-{r}")
            subprocess.run([coordinator, "--quiet", "--mode", "profile", "--data", a.data,
                            "--output", out], check=True, stdout=subprocess.DEVNULL)
            reports.append(json.load(open(os.path.join(out, "report.json"))))
    load = open("/proc/loadavg").read().split()[:3]
    c = reports[0]["counts"]
    print(f"{a.rounds} rounds; load average {' '.join(load)}; {os.cpu_count()} CPUs")
    print(f"counts: {c['train_series']} training series, {c['valid_frames']} valid frames, "
          f"{c.get('eligible_contexts')} eligible contexts, {c.get('batches')} batches "
          f"({c.get('final_batch')} in the last), {c.get('invalid_event_series')} invalid event series")
    print(f"{'stage':30} {'wall median':>12} {'cpu median':>11} {'peak RSS':>10} {'seed':>8}")
    for k in STAGES:
        wall = statistics.median(r["stages"][k]["wall_s"] for r in reports)
        cpu = statistics.median(r["stages"][k]["cpu_s"] for r in reports)
        rss = max(r["stages"][k]["peak_rss_bytes"] for r in reports) / 2**20
        seed = f"{SEED_S[k]:.2f} s" if k in SEED_S else ""
        print(f"{k:30} {wall:10.3f} s {cpu:9.3f} s {rss:6.0f} MiB {seed:>8}")
    f = [r["stages"]["warm_loader_epoch"]["figures"] for r in reports]
    med = lambda key: statistics.median(x[key] for x in f)
    print(f"loader: first wait {med('first_wait_s') * 1e3:.1f} ms, median wait "
          f"{med('median_wait_s') * 1e3:.3f} ms, p95 wait {med('p95_wait_s') * 1e3:.3f} ms, "
          f"{med('contexts_per_s'):.0f} contexts/s")


if __name__ == "__main__":
    sys.exit(main())
