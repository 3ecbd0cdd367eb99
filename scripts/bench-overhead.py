#!/usr/bin/env python3
"""Orchestration overhead per fresh-process stage, next to a bare process start.

Measures, side by side in one invocation (release build):
  bare   - spawn `worker --version` and reap it (posix_spawn + waitpid), N times:
           the floor of starting the worker binary at all.
  stage  - `coordinator --isolation stage` with N `noop` stages: for each worker
           process, the coordinator's own spawn-to-reap wall time (report.json
           workers[].wall_s), which covers spawn, connect, handshake, assign,
           measurement, shutdown and exit.
  run/N  - the whole run's wall time divided by N (adds dispatch gaps).
  trial  - `coordinator --mode trials --stage noop --trials N --warmup 0`: the
           same spawn-to-reap wall per trial process, plus the trials run's wall
           divided by N (includes statistics, report, summary.md and plots).
The two are interleaved in ROUNDS rounds so drift in machine speed hits both.
Run by hand on an idle machine; not part of CI.

usage: scripts/bench-overhead.py [--stages N] [--rounds R]
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def bare_starts(worker, n):
    out = []
    devnull = os.open(os.devnull, os.O_WRONLY)
    for _ in range(n):
        t = time.perf_counter_ns()
        pid = os.posix_spawn(worker, [worker, "--version"], os.environ,
                             file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1)])
        os.waitpid(pid, 0)
        out.append((time.perf_counter_ns() - t) / 1e9)
    os.close(devnull)
    return out


def noop_run(coordinator, n, tmp, i):
    out = os.path.join(tmp, f"run-{i}")
    cmd = [coordinator, "--quiet", "--output", out] + ["--stage", "noop"] * n
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    report = json.load(open(os.path.join(out, "report.json")))
    return [w["wall_s"] for w in report["workers"]], report["run_wall_s"] / n


def trials_run(coordinator, n, tmp, i):
    out = os.path.join(tmp, f"trials-{i}")
    cmd = [coordinator, "--quiet", "--output", out, "--mode", "trials", "--stage", "noop",
           "--trials", str(n), "--warmup", "0"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    report = json.load(open(os.path.join(out, "report.json")))
    return [w["wall_s"] for w in report["workers"]], report["run_wall_s"] / n


def ms(x):
    return f"{x * 1e3:7.3f} ms"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stages", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "--workspace", "--bins", "--quiet"],
                   cwd=ROOT, check=True)
    coordinator = os.path.join(ROOT, "target/release/coordinator")
    worker = os.path.join(ROOT, "target/release/worker")
    bare, stage, per_run, trial, per_trials_run = [], [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            bare += bare_starts(worker, a.stages)
            walls, run_per_stage = noop_run(coordinator, a.stages, tmp, r)
            stage += walls
            per_run.append(run_per_stage)
            walls, run_per_trial = trials_run(coordinator, a.stages, tmp, r)
            trial += walls
            per_trials_run.append(run_per_trial)
    load = open("/proc/loadavg").read().split()[:3]
    mb, ms_ = statistics.median(bare), statistics.median(stage)
    q = lambda xs, p: statistics.quantiles(xs, n=100)[p - 1]
    print(f"{a.rounds} rounds x {a.stages}; load average {' '.join(load)}; {os.cpu_count()} CPUs")
    print(f"{'':34} {'median':>10} {'p5':>10} {'p95':>10}")
    print(f"{'bare start (worker --version)':34} {ms(mb):>10} {ms(q(bare, 5)):>10} {ms(q(bare, 95)):>10}")
    print(f"{'noop stage, spawn to reap':34} {ms(ms_):>10} {ms(q(stage, 5)):>10} {ms(q(stage, 95)):>10}")
    print(f"{'noop stage, run wall / stages':34} {ms(statistics.median(per_run)):>10}")
    mt = statistics.median(trial)
    print(f"{'noop trial, spawn to reap':34} {ms(mt):>10} {ms(q(trial, 5)):>10} {ms(q(trial, 95)):>10}")
    print(f"{'noop trial, run wall / trials':34} {ms(statistics.median(per_trials_run)):>10}")
    print(f"orchestration overhead above a bare start: {ms(ms_ - mb)} (ratio {ms_ / mb:.2f}x)")
    print(f"trial overhead above a bare start: {ms(mt - mb)} (ratio {mt / mb:.2f}x)")


if __name__ == "__main__":
    sys.exit(main())
