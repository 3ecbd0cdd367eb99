#!/usr/bin/env python3
"""How long `coordinator render` takes to redraw a big cold-prep run's
derived files (summary.md, the plots, report.html), this build against
another, side by side.

One run is made with this build: `--mode cold-prep --prepare true --items
FILE --workers 2 --rounds 1` over N items (default 10^5) with the tests'
fake worker answering every item at once, so what the derived files hold
is a real run's shape (two phases of N jobs, a timeline each, jobs.jsonl.gz).
Each build then renders its own copy of that run, alternately, `--repeat`
times; render reads report.json and jobs.jsonl.gz and writes every derived
file, so its wall is the time a person waits for a redraw.

The control: each build also renders a run of 10 items, the cost of
rendering with nothing to draw; a build whose figures grow with N does so
above it.

Run by hand, on an idle machine, never beside another benchmark.

usage: scripts/bench-render.py [--items 100000] [--repeat 7]
                               [--baseline DIR_OF_RELEASE_BINARIES]
"""
import argparse, os, shutil, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RELEASE = os.path.join(ROOT, "target", "release")


def build():
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "stagebench-coordinator",
                    "-p", "stagebench-tests", "--bin", "coordinator", "--bin", "fake-worker"],
                   cwd=ROOT, check=True)


def make_run(work, n):
    items = os.path.join(work, f"items-{n}")
    with open(items, "w") as f:
        f.write("".join(f"item-{k:08d}\n" for k in range(n)))
    out = os.path.join(work, f"run-{n}")
    cmd = [os.path.join(RELEASE, "coordinator"), "--quiet", "--mode", "cold-prep",
           "--workers", "2", "--rounds", "1", "--prepare", "true", "--items", items,
           "--worker-bin", os.path.join(RELEASE, "fake-worker"), "--output", out]
    p = subprocess.run(cmd, env=dict(os.environ, STAGEBENCH_FAKE="instant"),
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stderr.decode(errors='replace')}")
    return out


def render(binaries, run):
    t = time.perf_counter()
    p = subprocess.run([os.path.join(binaries, "coordinator"), "render", run],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        sys.exit(f"render {run} with {binaries} failed:\n{p.stderr.decode(errors='replace')}")
    return wall


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--items", type=int, default=100_000)
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--baseline", help="a directory holding another build's coordinator")
    a = p.parse_args()
    build()
    builds = [("this", RELEASE)] + ([("baseline", a.baseline)] if a.baseline else [])
    work = tempfile.mkdtemp(prefix="bench-render-")
    walls = {}
    try:
        for n in [10, a.items]:
            run = make_run(work, n)
            copies = {}
            for name, _ in builds:
                copies[name] = os.path.join(work, f"{name}-{n}")
                shutil.copytree(run, copies[name])
            for _ in range(a.repeat):
                for name, binaries in builds:
                    w = render(binaries, copies[name])
                    walls.setdefault((name, n), []).append(w)
                    print(f"  {name:8} {n:>8} items: render {w:7.3f} s", file=sys.stderr, flush=True)
            sizes = {name: os.path.getsize(os.path.join(copies[name], "report.html"))
                     for name, _ in builds}
            for name, size in sizes.items():
                walls[(name, n, "html")] = size
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"`coordinator render` of a cold-prep run (--workers 2 --rounds 1, fake workers), "
          f"median of {a.repeat}, builds alternating")
    print("| build | items | render s (median) | range | report.html bytes |")
    print("|---|---:|---:|---|---:|")
    for name, _ in builds:
        for n in [10, a.items]:
            w = walls[(name, n)]
            print(f"| {name} | {n} | {statistics.median(w):.3f} | {min(w):.3f}–{max(w):.3f} "
                  f"| {walls[(name, n, 'html')]} |")
    if a.baseline:
        for n in [10, a.items]:
            ratio = statistics.median(walls[("this", n)]) / statistics.median(walls[("baseline", n)])
            print(f"ratio this/baseline at {n} items: {ratio:.3f}")


if __name__ == "__main__":
    main()
