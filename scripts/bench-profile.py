#!/usr/bin/env python3
"""The recipe profile at `seed` scale, stage by stage, next to the seed's figures.

Runs `coordinator --mode profile` ROUNDS times (release build) on the seed-scale
cohort that scripts/bench-cold-prep.sh generates and freezes once into
~/.cache/stagebench/bench/frozen-seed (run that first, or pass --data), and
prints per stage the median wall time, CPU time and peak RSS over the rounds,
beside the seed profiler's single observation on a faster desktop CPU.

With --torch PYTHON (an interpreter that has torch; see
scripts/bench-model-torch.py), each round also trains the same model in
PyTorch on the same threads (--threads, default 2: both the workers' rayon pool
and PyTorch's are set, and both are printed), interleaved with the profile runs, and the
fit epoch and resident step are compared as ratios of medians.
Run by hand on an idle machine; not part of CI.

usage: scripts/bench-profile.py [--rounds R] [--data DIR] [--torch PYTHON]
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
    "end_to_end_fit_epoch": 16.13,
}
STAGES = [
    "verify_before",
    "cold_feature_cache_prepare",
    "warm_fit_normalizer",
    "count_eligible_contexts",
    "warm_loader_epoch",
    "resident_model_build",
    "resident_compile_and_warmup",
    "resident_model_steps",
    "end_to_end_model_build",
    "end_to_end_fit_epoch",
    "verify_after",
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--data", default=os.path.expanduser("~/.cache/stagebench/bench/frozen-seed"))
    ap.add_argument("--torch", help="a Python interpreter with torch, for the side-by-side model")
    ap.add_argument("--threads", type=int, default=2,
                    help="threads for both sides: the workers' rayon pool and PyTorch's")
    a = ap.parse_args()
    if not os.path.exists(os.path.join(a.data, "frozen.json")):
        sys.exit(f"no frozen dataset at {a.data}: run SCALE=seed scripts/bench-cold-prep.sh first")
    subprocess.run(["cargo", "build", "--release", "--workspace", "--bins", "--quiet"],
                   cwd=ROOT, check=True)
    coordinator = os.path.join(ROOT, "target/release/coordinator")
    reports, torch = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            out = os.path.join(tmp, f"profile-{r}")
            # The workers inherit the variable: their rayon pool has this many threads.
            env = dict(os.environ, RAYON_NUM_THREADS=str(a.threads))
            subprocess.run([coordinator, "--quiet", "--mode", "profile", "--data", a.data,
                            "--output", out], check=True, stdout=subprocess.DEVNULL, env=env)
            reports.append(json.load(open(os.path.join(out, "report.json"))))
            used = json.load(open(os.path.join(out, "environment.json")))["threads"]
            if a.torch:
                contexts = reports[-1]["counts"]["eligible_contexts"]
                res = os.path.join(tmp, f"torch-{r}.json")
                subprocess.run([a.torch, os.path.join(ROOT, "scripts/bench-model-torch.py"),
                                "--threads", str(a.threads), "--contexts", str(contexts), "--json", res],
                               check=True, stdout=subprocess.DEVNULL)
                torch.append(json.load(open(res)))
    load = open("/proc/loadavg").read().split()[:3]
    c = reports[0]["counts"]
    print(f"{a.rounds} rounds; load average {' '.join(load)}; {os.cpu_count()} CPUs")
    print(f"stagebench's workers ran with RAYON_NUM_THREADS={used.get('RAYON_NUM_THREADS')} "
          f"(as environment.json recorded it)")
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
    fig = lambda stage, key: statistics.median(r["stages"][stage]["figures"][key] for r in reports)
    fit = statistics.median(r["stages"]["end_to_end_fit_epoch"]["wall_s"] for r in reports)
    step = fig("resident_model_steps", "median_step_s")
    print(f"model: resident median step {step * 1e3:.2f} ms; fit epoch {fit:.2f} s, "
          f"{fig('end_to_end_fit_epoch', 'contexts_per_s'):.0f} contexts/s, mean loss "
          f"{fig('end_to_end_fit_epoch', 'loss_first_tenth'):.4f} (first tenth) -> "
          f"{fig('end_to_end_fit_epoch', 'loss_last_tenth'):.4f} (last tenth)")
    flops = step_flops(reports[0]["stages"]["resident_model_steps"]["figures"].get("batch_contexts", 32))
    peak, how = peak_flops(a.threads)
    print(f"model: one step is {flops / 1e6:.1f} MFLOP (forward and backward); the resident step "
          f"achieves {flops / step / 1e9:.2f} GFLOP/s"
          + (f", {100 * flops / step / peak:.1f}% of {peak / 1e9:.1f} GFLOP/s, the peak of {how}"
             if peak else " (no peak: the CPU's clock is not exposed)"))
    if torch:
        t_fit = statistics.median(t["epoch_s"] for t in torch)
        t_step = statistics.median(t["resident_median_step_s"] for t in torch)
        print(f"pytorch {torch[0]['torch']} on {torch[0]['threads']} threads, {len(torch)} rounds "
              f"interleaved: resident step {t_step * 1e3:.2f} ms, epoch {t_fit:.2f} s "
              "(batches made in memory beforehand: no loader)")
        print(f"stagebench / pytorch: resident step {step / t_step:.2f}x, "
              f"fit epoch (ours with its loader) {fit / t_fit:.2f}x")


def step_flops(batch):
    """Multiply-adds of one training step, counted as 2 FLOP each: the
    model's convolutions and dense layer over batch x 240 frames (5->16
    kernel 1; three 16->16 kernel 5; 16->2), forward, and twice that
    backward (the input gradient and the weight gradient). Element-wise ops,
    the loss and Adam are left out: they are a few percent."""
    macs_per_frame = 5 * 16 * 1 + 3 * 16 * 16 * 5 + 16 * 2
    return 3 * 2 * macs_per_frame * batch * 240


def peak_flops(threads):
    """Single-precision FLOP/s at the vector width the model's kernels use
    (AVX2 + FMA: 8 lanes, one fused multiply-add each, two FMA units a core),
    on `threads` cores at the CPU's highest clock that it exposes."""
    flags, mhz = set(), None
    for line in open("/proc/cpuinfo"):
        if line.startswith("flags") and not flags:
            flags = set(line.split(":", 1)[1].split())
        if line.startswith("cpu MHz") and mhz is None:
            mhz = float(line.split(":", 1)[1])
    try:
        mhz = int(open("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq").read()) / 1e3
    except OSError:
        pass
    if not mhz or not {"avx2", "fma"} <= flags:
        return None, None
    per_cycle = 8 * 2 * 2
    widest = "AVX-512" if "avx512f" in flags else "AVX2"
    how = (f"{threads} core(s) x {mhz / 1e3:.2f} GHz x {per_cycle} FLOP/cycle "
           f"(AVX2+FMA, the kernels' width; this CPU's widest is {widest})")
    return threads * mhz * 1e6 * per_cycle, how


if __name__ == "__main__":
    sys.exit(main())
