#!/usr/bin/env python3
"""What a big `--prepare` costs the evidence (issue 44, item 7).

For each item count N (default 10, 10^5), one cold-prep run of a no-op
preparation program (stdlib Python: it answers `done` for every item and
writes nothing) with --workers 2 --rounds 3, then `coordinator verify` of
its directory. Per N it prints:
  - report.json's size, and jobs.jsonl.gz's (every job, the per-item
    records report.json leaves out);
  - the run's wall and the coordinator's peak RSS;
  - verify's wall and peak RSS.
Peaks are wait4's ru_maxrss of the coordinator process (its workers and
their programs are far smaller; a child's maxrss is its own or its largest
waited-for descendant's).
The control is the smallest N: what a run costs with (almost) no items,
so the growth per item is (figure at N - figure at the control) / N.
Run by hand on an idle machine (release build), one count at a time.

usage: scripts/bench-scale.py [--items N ...] [--keep DIR]
"""

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COORDINATOR = os.path.join(ROOT, "target", "release", "coordinator")

NOOP = r"""
import json, os
answers = int(os.environ["STAGEBENCH_ANSWERS_FD"])
items = os.fdopen(int(os.environ["STAGEBENCH_ITEMS_FD"]), "rb", buffering=0)
os.write(answers, b'{"ready": true}\n')
rest = b""
while True:
    chunk = items.read(1 << 16)
    if not chunk:
        break
    lines = (rest + chunk).split(b"\n")
    rest = lines.pop()
    out = [json.dumps({"done": json.loads(l)["item"]}) for l in lines if l.strip()]
    if out:
        os.write(answers, ("\n".join(out) + "\n").encode())
"""


def measured(argv, **kw):
    """Wall seconds and peak RSS (MiB) of one process, from wait4."""
    start = time.monotonic()
    p = subprocess.Popen(argv, **kw)
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - start
    if p.returncode != 0:
        raise SystemExit(f"{argv[:3]} exited {p.returncode}")
    return wall, usage.ru_maxrss / 1024


def one(n, work):
    items = os.path.join(work, f"items-{n}.jsonl")
    with open(items, "w") as f:
        for i in range(n):
            f.write(json.dumps({"item": f"i{i:07d}"}) + "\n")
    prog = os.path.join(work, "noop.py")
    with open(prog, "w") as f:
        f.write(NOOP)
    out = os.path.join(work, f"run-{n}")
    run_wall, run_peak = measured(
        [COORDINATOR, "--mode", "cold-prep", "--prepare", f"python3 {prog}",
         "--items", items, "--workers", "2", "--rounds", "3", "--output", out],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    verify_wall, verify_peak = measured([COORDINATOR, "verify", out],
                                        stdout=subprocess.DEVNULL)
    size = lambda name: os.path.getsize(os.path.join(out, name))
    jobs = size("jobs.jsonl.gz") if os.path.exists(os.path.join(out, "jobs.jsonl.gz")) else 0
    return dict(n=n, report=size("report.json"), jobs=jobs, run_wall=run_wall,
                run_peak=run_peak, verify_wall=verify_wall, verify_peak=verify_peak), out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, nargs="+", default=[10, 100_000])
    ap.add_argument("--keep", help="keep the run directories under this folder")
    a = ap.parse_args()
    counts = sorted(set(a.items))
    work = a.keep or tempfile.mkdtemp(prefix="stagebench-scale-")
    os.makedirs(work, exist_ok=True)
    rows = []
    try:
        for n in counts:
            row, out = one(n, work)
            rows.append(row)
            if not a.keep:
                shutil.rmtree(out)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{'items':>9} {'report.json':>12} {'jobs.jsonl.gz':>14} {'run s':>8} "
          f"{'run peak':>10} {'verify s':>9} {'verify peak':>12}")
    for r in rows:
        print(f"{r['n']:>9} {r['report'] / 1e6:>10.3f}MB {r['jobs'] / 1e6:>12.3f}MB "
              f"{r['run_wall']:>8.1f} {r['run_peak']:>8.0f}MiB {r['verify_wall']:>9.2f} "
              f"{r['verify_peak']:>10.0f}MiB")
    control = rows[0]
    for r in rows[1:]:
        per = lambda k: (r[k] - control[k]) / (r["n"] - control["n"])
        print(f"per item above {control['n']} items, at {r['n']}: report.json "
              f"{per('report'):.2f} B, jobs.jsonl.gz {per('jobs'):.1f} B, "
              f"run peak {per('run_peak') * 1024 * 1024:.0f} B, "
              f"verify peak {per('verify_peak') * 1024 * 1024:.0f} B")


if __name__ == "__main__":
    main()
