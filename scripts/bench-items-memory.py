#!/usr/bin/env python3
"""A preparation's coordinator memory and wall against its number of items.

Each size runs `--mode cold-prep --prepare true --items FILE --workers 2`
with the tests' fake worker (`STAGEBENCH_FAKE=instant`: it answers every
item at once), so what grows with the items is the coordinator's own
holding of them. Per size and coordinator build:

  peak      - the coordinator's peak RSS (wait4's ru_maxrss of the run; the
              fake workers it reaped are a few MiB each, far below it), taken
              by the tests' `rss-peak`: Linux carries a process's peak across
              execve, so a coordinator forked from this script would start at
              the script's size (about 23 MiB after writing the items), and
              wait4 would never report less;
  wall      - the run, start to end (both phases, report and plots);
  per item  - (peak - the 10-item run's peak) / items: what one more item
              costs, with the fixed cost taken out by the control.

The control is the same run over 10 items, measured in the same session:
the coordinator's floor with nothing to hold. Builds alternate within each
repeat (`--baseline PATH` adds another build's coordinator, e.g. one built
from an earlier commit in a worktree), so a busy moment hits both alike.

Run by hand on an idle machine, never beside another benchmark; 10^7 items
take minutes a run.

usage: scripts/bench-items-memory.py [--sizes 10000,100000,1000000] [--rounds 1]
                                     [--repeat 1] [--weighted]
                                     [--baseline DIR_OF_RELEASE_BINARIES]
"""
import argparse, os, shutil, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RELEASE = os.path.join(ROOT, "target", "release")


def build():
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "stagebench-coordinator",
                    "-p", "stagebench-worker", "-p", "stagebench-tests", "--bin", "coordinator",
                    "--bin", "worker", "--bin", "fake-worker", "--bin", "rss-peak"], cwd=ROOT,
                   check=True)


def items_file(work, n, weighted):
    """`n` ids, with weights (1 to 1000, a fixed pattern) when `weighted`."""
    path = os.path.join(work, f"items-{n}")
    weight = (lambda k: f"\t{1 + (k * 7919) % 1000}") if weighted else (lambda k: "")
    if not os.path.exists(path):
        with open(path, "w") as f:
            for start in range(0, n, 100_000):
                f.write("".join(f"item-{k:08d}{weight(k)}\n"
                                for k in range(start, min(n, start + 100_000))))
    return path


def one_run(work, binaries, items, rounds):
    out = tempfile.mkdtemp(dir=work)
    os.rmdir(out)
    cmd = [os.path.join(RELEASE, "rss-peak"), os.path.join(binaries, "coordinator"), "--quiet",
           "--mode", "cold-prep", "--workers", "2", "--rounds", str(rounds), "--prepare", "true",
           "--items", items, "--worker-bin", os.path.join(binaries, "fake-worker"), "--output", out]
    env = dict(os.environ, STAGEBENCH_FAKE="instant")
    t = time.perf_counter()
    p = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t
    err = p.stderr.decode(errors="replace")
    shutil.rmtree(out, ignore_errors=True)
    last = err.strip().splitlines()[-1] if err.strip() else ""
    if p.returncode != 0 or not last.startswith("peak_rss_kib "):
        sys.exit(f"{' '.join(cmd)} failed:\n{err}")
    return int(last.split()[1]) / 1024.0, wall


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="10000,100000,1000000")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--weighted", action="store_true",
                   help="weighted items (handed out largest first: 8 bytes an item kept)")
    p.add_argument("--baseline", help="a directory holding another build's coordinator and fake-worker")
    a = p.parse_args()
    build()
    builds = [("this", RELEASE)] + ([("baseline", a.baseline)] if a.baseline else [])
    sizes = [10] + [int(s) for s in a.sizes.split(",")]
    work = tempfile.mkdtemp(prefix="bench-items-memory-")
    rows = {}
    try:
        for n in sizes:
            items = items_file(work, n, a.weighted)
            for _ in range(a.repeat):
                for name, binaries in builds:
                    peak, wall = one_run(work, binaries, items, a.rounds)
                    rows.setdefault((name, n), []).append((peak, wall))
                    print(f"  {name:8} {n:>9} items: peak {peak:8.1f} MiB, wall {wall:7.1f} s",
                          file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    weighted = " --weighted" if a.weighted else ""
    print(f"--workers 2 --rounds {a.rounds}{weighted}, fake workers answering at once; "
          f"median of {a.repeat} run(s)")
    print("| build | items | peak MiB | wall s | per item above the 10-item control |")
    print("|---|---:|---:|---:|---:|")
    for name, _ in builds:
        floor = statistics.median(r[0] for r in rows[(name, 10)])
        for n in sizes:
            peak = statistics.median(r[0] for r in rows[(name, n)])
            wall = statistics.median(r[1] for r in rows[(name, n)])
            per = "control" if n == 10 else f"{(peak - floor) * 1024 * 1024 / n:.0f} B"
            print(f"| {name} | {n} | {peak:.1f} | {wall:.1f} | {per} |")


if __name__ == "__main__":
    main()
