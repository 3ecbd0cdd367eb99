#!/usr/bin/env python3
"""stagebench's --prepare beside what a user would pick instead, same items,
same rounds.

Each round runs, in alternating order:
  loop       examples/prepare's function over every item in one plain Python
             process (spawn to exit, imports included)
  pool       the same under multiprocessing.Pool(N).imap_unordered (chunksize 1)
  stagebench one `coordinator --mode cold-prep --prepare ... --rounds 1` run,
             which gives its serial phase and its N-process phase

and prints medians over rounds and the ratios: stagebench serial / loop and
stagebench N-process / pool. Then no-op items (a program whose function does
nothing), for stagebench's own per-item round trip (coordinator to worker to
program and back), with N processes and with one, beside its floor on this
machine: two processes passing a byte back and forth over two pipes, twice
(an item crosses two such round trips: coordinator and worker, worker and
program); and --big no-op items through 8 processes. Needs numpy and pyarrow in --python. Run by hand on an
idle machine; not in CI.

usage: scripts/bench-prepare.py [--data DIR] [--rounds R] [--workers N]
                                [--python PY] [--noop N] [--big N]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COORDINATOR = os.path.join(ROOT, "target", "release", "coordinator")
EXAMPLE = os.path.join(ROOT, "examples", "prepare")

LOOP = """
import os, sys, tempfile
sys.path.insert(0, {example!r})
import prepare
series = prepare.Series({data!r})
out = tempfile.mkdtemp(dir={scratch!r})
for line in open({items!r}):
    prepare.Series.prepare(series, line.split("\\t")[0].strip(), out)
"""

POOL = """
import multiprocessing, os, sys, tempfile
sys.path.insert(0, {example!r})
import prepare
series = None
def init():
    global series
    series = prepare.Series({data!r})
def one(item):
    series.prepare(item, OUT)
OUT = tempfile.mkdtemp(dir={scratch!r})
if __name__ == "__main__":
    items = [l.split("\\t")[0].strip() for l in open({items!r})]
    with multiprocessing.Pool({workers}, initializer=init) as pool:
        for _ in pool.imap_unordered(one, items, chunksize=1):
            pass
"""

PINGPONG = """
import os, time
n = {n}
r1, w1 = os.pipe(); r2, w2 = os.pipe()
pid = os.fork()
if pid == 0:
    for _ in range(n):
        os.read(r1, 64); os.write(w2, b"x")
    os._exit(0)
t = time.perf_counter()
for _ in range(n):
    os.write(w1, b"x"); os.read(r2, 64)
print(time.perf_counter() - t)
os.waitpid(pid, 0)
"""

NOOP = """
import stagebench
stagebench.serve(lambda item, out: None)
"""


def timed(argv):
    t = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def stagebench(scratch, py, program, items, workers, extra=()):
    """One cold-prep run; its report."""
    out = tempfile.mkdtemp(dir=scratch)
    os.rmdir(out)
    subprocess.run(
        [COORDINATOR, "--mode", "cold-prep", "--rounds", "1", "--workers", str(workers),
         "--prepare", f"{py} {program}", "--items", items, "--output", out, "-q", *extra],
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    with open(os.path.join(out, "report.json")) as f:
        return json.load(f)


def round_trip(side, n):
    """Per item, per process: the phase's wall less its slowest start-up,
    times its processes, over its items (a no-op item's own time is ~0)."""
    startup = max(w.get("startup_s", 0.0) for w in side["workers"])
    return (side["wall_s"] - startup) * len(side["workers"]) / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", help="a frozen dataset [default: the built-in cohort]")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--noop", type=int, default=20000, help="no-op items for the round trip")
    ap.add_argument("--big", type=int, default=100000, help="no-op items through 8 processes")
    ap.add_argument("--noop-only", action="store_true", help="skip the loop and Pool rounds")
    a = ap.parse_args()
    data = a.data or subprocess.run(
        [COORDINATOR, "dataset", "path"], check=True, capture_output=True, text=True
    ).stdout.strip()
    data = os.path.abspath(data)
    with tempfile.TemporaryDirectory(prefix="stagebench-bench-prepare-") as scratch:
        items = os.path.join(scratch, "items.tsv")
        with open(items, "w") as f:
            subprocess.run([a.python, os.path.join(EXAMPLE, "prepare.py"), "--list", data],
                           check=True, stdout=f)
        n = sum(1 for _ in open(items))
        fill = dict(example=EXAMPLE, data=data, scratch=scratch, items=items, workers=a.workers)
        loop_py = os.path.join(scratch, "loop.py")
        pool_py = os.path.join(scratch, "pool.py")
        open(loop_py, "w").write(LOOP.format(**fill))
        open(pool_py, "w").write(POOL.format(**fill))
        program = f"{os.path.join(EXAMPLE, 'prepare.py')} --data {data}"
        got = {"loop": [], "pool": [], "serial": [], "parallel": []}
        print(f"{n} items from {data}; {a.rounds} rounds, {a.workers} processes")
        for r in range(0 if a.noop_only else a.rounds):
            order = ["loop", "pool", "stagebench"]
            if r % 2:
                order.reverse()
            for what in order:
                if what == "loop":
                    got["loop"].append(timed([a.python, loop_py]))
                elif what == "pool":
                    got["pool"].append(timed([a.python, pool_py]))
                else:
                    rep = stagebench(scratch, a.python, program, items, a.workers)
                    got["serial"].append(rep["serial"]["wall_s"])
                    got["parallel"].append(rep["parallel"]["wall_s"])
            print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.3f} s" for k, v in got.items()))
        if not a.noop_only:
            med = {k: statistics.median(v) for k, v in got.items()}
            print("medians: " + ", ".join(f"{k} {v:.3f} s" for k, v in med.items()))
            print(f"stagebench serial / plain loop: {med['serial'] / med['loop']:.3f}")
            print(f"stagebench {a.workers}-process / Pool({a.workers}): {med['parallel'] / med['pool']:.3f}")

        noop = os.path.join(scratch, "noop.py")
        open(noop, "w").write(NOOP)
        noop_items = os.path.join(scratch, "noop.tsv")
        open(noop_items, "w").write("".join(f"n{i}\n" for i in range(a.noop)))
        trips = {"parallel": [], "serial": [], "item": [], "floor": []}
        for _ in range(3):
            pp = subprocess.run([a.python, "-c", PINGPONG.format(n=a.noop)], check=True,
                                capture_output=True, text=True)
            trips["floor"].append(2 * float(pp.stdout) / a.noop)
            rep = stagebench(scratch, a.python, noop, noop_items, a.workers)
            trips["parallel"].append(round_trip(rep["parallel"], a.noop))
            trips["serial"].append(round_trip(rep["serial"], a.noop))
            trips["item"].append(rep["parallel"]["per_series_s"]["median"])
        print(
            f"no-op items ({a.noop}, median of 3 runs): round trip {statistics.median(trips['parallel']) * 1e6:.0f} us "
            f"per item per process with {a.workers} processes, {statistics.median(trips['serial']) * 1e6:.0f} us with 1; "
            f"worker to program and back {statistics.median(trips['item']) * 1e6:.0f} us (median item)"
        )
        floor = statistics.median(trips["floor"])
        print(
            f"floor: two bare pipe round trips {floor * 1e6:.0f} us; stagebench's serial round trip "
            f"is {statistics.median(trips['serial']) / floor:.2f}x it"
        )
        big_items = os.path.join(scratch, "big.tsv")
        open(big_items, "w").write("".join(f"n{i}\n" for i in range(a.big)))
        t = time.perf_counter()
        rep = stagebench(scratch, a.python, noop, big_items, 8)
        whole = time.perf_counter() - t
        print(
            f"{a.big} no-op items through 8 processes: {rep['parallel']['wall_s']:.2f} s "
            f"(the 8-process phase; the whole run with its serial phase {whole:.2f} s)"
        )


if __name__ == "__main__":
    main()
