#!/usr/bin/env python3
"""What `--prefetch N` does to a phase whose items take real time: the
walls and the load imbalance at the end of a phase, with and without the
window, measured side by side.

The program (Python, `stagebench.serve`) sleeps each item's own time,
written in its id ("s120000003", line 3, sleeps 12 ms): known work, so a wall is the sum
of the sleeps over the processes plus what dispatch adds, and a window
that held an item back on a busy worker would show in the imbalance and
in the tail. Item times are drawn from a seeded log-normal (median
`--ms`), in file order (unweighted: the worst case for a window, a long
item may come last) and, with `--weighted`, with their times as weights
(largest first).

The control: `--prefetch 0` hands an item over only after the last one's
answer, as before the window existed; every other window is a ratio to it.

Per run, from report.json: the serial and parallel walls (both phases of
one run), the parallel side's load_imbalance (busiest worker's busy time
over the mean) and its tail (the time the last items ran alone).

Run by hand on an idle machine, never beside another benchmark.

usage: scripts/bench-prefetch.py [--items N] [--ms M] [--workers W]
                                 [--prefetch 0,1,2] [--repeat R] [--weighted]
"""
import argparse, json, os, random, statistics, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RELEASE = os.path.join(ROOT, "target", "release")

PROGRAM = """
import time, stagebench
def prepare(item, out):
    time.sleep(int(item[1:-7]) / 1000)
stagebench.serve(prepare)
"""


def build():
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "stagebench-coordinator",
                    "-p", "stagebench-worker", "--bin", "coordinator", "--bin", "worker"],
                   cwd=ROOT, check=True)


def one_run(work, items, program, workers, prefetch):
    out = tempfile.mkdtemp(dir=work)
    os.rmdir(out)
    cmd = [os.path.join(RELEASE, "coordinator"), "--quiet", "--mode", "cold-prep",
           "--workers", str(workers), "--rounds", "1", "--prepare", f"{sys.executable} {program}",
           "--items", items, "--prefetch", str(prefetch), "--output", out]
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env, cwd=work)
    with open(os.path.join(out, "report.json")) as f:
        r = json.load(f)
    par = r["parallel"]
    tail = (par.get("stragglers") or {}).get("tail") or {}
    return r["serial"]["wall_s"], par["wall_s"], r["load_imbalance"], tail.get("tail_s", 0.0)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--items", type=int, default=400)
    p.add_argument("--ms", type=float, default=5.0)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--prefetch", default="0,1,2")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--weighted", action="store_true")
    a = p.parse_args()
    build()
    windows = [int(w) for w in a.prefetch.split(",")]
    rng = random.Random(62)
    times = [max(1, round(rng.lognormvariate(0, 0.8) * a.ms)) for _ in range(a.items)]
    runs = {w: [] for w in windows}
    with tempfile.TemporaryDirectory() as work:
        items = os.path.join(work, "items.txt")
        with open(items, "w") as f:
            for i, t in enumerate(times):
                # Ids are unique: the line number rides after the time.
                f.write(f"s{t:d}{i:07d}\t{t}\n" if a.weighted else f"s{t:d}{i:07d}\n")
        program = os.path.join(work, "sleep_items.py")
        with open(program, "w") as f:
            f.write(PROGRAM)
        for i in range(a.repeat):
            for w in windows:
                runs[w].append(one_run(work, items, program, a.workers, w))
            print(f"repeat {i + 1}/{a.repeat} done", file=sys.stderr)
    ideal = sum(times) / 1000
    order = "largest first (weighted)" if a.weighted else "file order"
    print(f"{a.items} items sleeping {ideal:.2f} s in all (median {statistics.median(times)} ms, "
          f"max {max(times)} ms), {order}; {a.workers} workers; medians of {a.repeat} runs")
    print(f"the ideal parallel wall: {ideal / a.workers:.2f} s")
    print("| prefetch | serial wall | parallel wall | vs prefetch 0 | load imbalance | tail alone |")
    print("|---:|---:|---:|---:|---:|---:|")
    base = statistics.median(x[1] for x in runs[windows[0]])
    for w in windows:
        med = lambda k: statistics.median(x[k] for x in runs[w])
        print(f"| {w} | {med(0):.2f} s | {med(1):.2f} s | {med(1) / base:.3f} "
              f"| {med(2):.3f} | {med(3):.3f} s |")


if __name__ == "__main__":
    main()
