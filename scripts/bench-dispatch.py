#!/usr/bin/env python3
"""The dispatcher at scale: how many items a second one coordinator hands
out, and its own CPU per item, at 2, 16, 64 and 256 worker processes.

Each count runs `--mode cold-prep --prepare true --items FILE --rounds 1`
with the tests' fake worker (`STAGEBENCH_FAKE=instant`: it answers every
item at once with an empty measurement), so what is measured is the
coordinator's side of a job and one frame each way, with no work behind
it: the bound on a run with that many processes (a Slurm run of 256
tasks included). Per count:

  phase wall   - the N-process phase, spawn to last reap (report.json);
  items/s      - items over that wall;
  per job      - that wall x processes / items: what one job costs one
                 process, round trip included;
  coord CPU    - the coordinator's own CPU per item: the run's CPU
                 (wait4 of the coordinator, which reaped the workers)
                 minus every worker's (report.json `workers[].cpu_s`),
                 over the items of both phases.

The floor, measured in the same run: one 64-byte write and read through a
pipe in this process (Python's syscalls included), and the serial phase's
per-job time (1 process) beside it.

Run by hand on an idle machine, never beside another benchmark.

Each count runs at every `--prefetch` window given (items handed to a
worker beyond the one it answers), alternating, so the window's gain is
measured side by side.

`--baseline DIR` (another build's coordinator and fake-worker, e.g. one
built from an earlier commit in a worktree) runs every cell with both builds
too, in alternating order, and prints the per-job ratio of this build to it.

usage: scripts/bench-dispatch.py [--items N] [--counts 2,16,64,256]
                                 [--prefetch 0,1] [--repeat R] [--baseline DIR]
"""
import argparse, json, os, resource, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RELEASE = os.path.join(ROOT, "target", "release")


def build():
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "stagebench-coordinator",
                    "-p", "stagebench-worker", "-p", "stagebench-tests", "--bin", "coordinator",
                    "--bin", "worker", "--bin", "fake-worker"], cwd=ROOT, check=True)


def pipe_round_trip_us(n=200_000):
    r, w = os.pipe()
    msg = b"x" * 64
    t = time.perf_counter()
    for _ in range(n):
        os.write(w, msg)
        os.read(r, 64)
    dt = time.perf_counter() - t
    os.close(r)
    os.close(w)
    return dt / n * 1e6


def one_run(work, items, count, prefetch, binaries):
    out = tempfile.mkdtemp(dir=work)
    os.rmdir(out)
    cmd = [os.path.join(binaries, "coordinator"), "--quiet", "--mode", "cold-prep",
           "--workers", str(count), "--rounds", "1", "--prepare", "true", "--items", items,
           "--prefetch", str(prefetch), "--worker-bin", os.path.join(binaries, "fake-worker"),
           "--output", out]
    env = dict(os.environ, STAGEBENCH_FAKE="instant")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env, cwd=work)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    with open(os.path.join(out, "report.json")) as f:
        r = json.load(f)
    workers = sum(w["cpu_s"] for w in r["workers"])
    return r["serial"]["wall_s"], r["parallel"]["wall_s"], total - workers, after.ru_maxrss


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--items", type=int, default=100_000)
    p.add_argument("--counts", default="2,16,64,256")
    p.add_argument("--prefetch", default="0,1")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--baseline", help="a directory holding another build's coordinator and fake-worker")
    a = p.parse_args()
    build()
    builds = [("this", RELEASE)] + ([("baseline", a.baseline)] if a.baseline else [])
    counts = [int(c) for c in a.counts.split(",")]
    windows = [int(w) for w in a.prefetch.split(",")]
    floors = []
    runs = {(b, c, w): [] for b, _ in builds for c in counts for w in windows}
    with tempfile.TemporaryDirectory() as work:
        items = os.path.join(work, "items.txt")
        with open(items, "w") as f:
            f.write("".join(f"{i}\n" for i in range(a.items)))
        for i in range(a.repeat):
            floors.append(pipe_round_trip_us())
            for c in counts:
                for w in windows:
                    order = builds if i % 2 == 0 else builds[::-1]
                    for b, binaries in order:
                        runs[b, c, w].append(one_run(work, items, c, w, binaries))
            print(f"repeat {i + 1}/{a.repeat} done", file=sys.stderr)
    n = a.items
    floor = statistics.median(floors)
    print(f"{n} items, fake workers answering at once, medians of {a.repeat} runs per cell")
    print(f"floor: a 64-byte pipe write and read in one process {floor:.2f} us")
    print("| build | prefetch | serial phase per job | over the floor |")
    print("|---|---:|---:|---:|")
    for b, _ in builds:
        for w in windows:
            serial = statistics.median(x[0] for c in counts for x in runs[b, c, w]) / n * 1e6
            print(f"| {b} | {w} | {serial:.1f} us | {serial - floor:.1f} us |")
    print("| build | processes | prefetch | phase wall | items/s | per job | over the floor "
          "| coordinator CPU per item |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    job = {}
    for c in counts:
        for w in windows:
            for b, _ in builds:
                wall = statistics.median(x[1] for x in runs[b, c, w])
                cpu = statistics.median(x[2] for x in runs[b, c, w]) / (2 * n) * 1e6
                job[b, c, w] = wall * c / n * 1e6
                print(f"| {b} | {c} | {w} | {wall:.3f} s | {n / wall:,.0f} | {job[b, c, w]:.1f} us "
                      f"| {job[b, c, w] - floor:.1f} us | {cpu:.1f} us |")
    if a.baseline:
        print("per job, this build over the baseline: " + ", ".join(
            f"{c} processes prefetch {w} {job['this', c, w] / job['baseline', c, w]:.3f}"
            for c in counts for w in windows))


if __name__ == "__main__":
    main()
