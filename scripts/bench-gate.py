#!/usr/bin/env python3
"""scripts/bench-gate.py [--per N] [--periods 1,6,30] [--coordinator PATH]:
`coordinator gate` against the way stored-baseline gates judge, beside a
drifting machine. A benchmark, run by hand on an otherwise idle 2-core
machine, never beside another benchmark; it takes many minutes.

The repository: prog.py, a Python program with two spans, `load` (a
fixed loop of 400,000 steps) and `work` (1,200,000 × F steps, about 60 ms
on an idle core): fixed work, which slows when the neighbour takes the
cores, as a real program's does; base has F = 1.0, and each pull
request is one commit on top of it:
- null: only a comment changes (N of them);
- slower: `work` 10% slower, F = 1.1 (N);
- faster: `work` 10% faster, F = 0.9 (N).

The neighbour: two processes burning both cores for half of a period and
sleeping the other half (a co-tenant's job), the period varying across the
pull requests: 1 s, 6 s and 30 s, so the method holds at the time scale of
a trial, of a run and of a whole gate. The program's own drift: its spin
takes up to 3% more steps following the wall clock (a sine of 20 s), as in
bench-bisect-drift.sh.

Each pull request is judged twice, side by side:
- the gate: `coordinator gate --gate span:work_s` (threshold 5%, rounds
  adaptive up to --max-rounds (default 120: the gate's own default for
  trials of 3, twenty windows, forty couples of runs), trials of 3 a run):
  its verdict, the couples of runs it judged and its wall time;
- the stored-baseline way: base run once (5 trials), head once just after,
  `coordinator compare --figure span:work_s --threshold 5`: regressed when
  it exits 4 (false alarms and misses as github-action-benchmark would
  see them; a real one's baseline is from another day and runner, which
  this does not even test).

Then --bisects N (default 10) comment-only ranges (8 commits on top of
base, each changing only a comment) are bisected beside the neighbour
(`coordinator bisect --figure span:work_s`, trials of 3, --max-rounds 30),
the periods cycled: none may say "first bad commit" (before the endpoints
were judged in pairs, 2 of 9 did beside such a neighbour).

Prints one line per pull request, then the table (counts per kind and
method, the median couples the gate needed, the median wall time of each
method and their ratio). Controls: the null pull requests (the truth is
"not slower"), and the slower ones (the truth is 1.10).
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

PROGRAM = """# {comment}
import math, time
from stagebench import span
F = {factor}
def spin(n):
    # Fixed work (not a fixed wall time): it slows when the cores are taken.
    n = int(n * (1 + 0.015 * (1 + math.sin(2 * math.pi * time.time() / 20))))
    x = 0
    for _ in range(n):
        x += 1
    return x
with span("load"):
    spin(400_000)
with span("work"):
    spin(1_200_000 * F)
"""


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, text=True).stdout.strip()


def repository(path):
    """base, then one branch per pull request kind made on demand."""
    os.makedirs(path)
    git(path, "init", "-q")
    git(path, "config", "user.email", "bench@example.invalid")
    git(path, "config", "user.name", "bench")
    with open(os.path.join(path, "prog.py"), "w") as f:
        f.write(PROGRAM.format(comment="base", factor="1.0"))
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "base")
    return git(path, "rev-parse", "HEAD")


def pull_request(repo, base, kind, i):
    """A commit on top of base: its hash."""
    git(repo, "checkout", "-q", "--detach", base)
    factor = {"null": "1.0", "slower": "1.1", "faster": "0.9"}[kind]
    with open(os.path.join(repo, "prog.py"), "w") as f:
        f.write(PROGRAM.format(comment=f"{kind} pull request {i}", factor=factor))
    git(repo, "commit", "-q", "-am", f"{kind} {i}")
    head = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "--detach", base)
    return head


def comment_range(repo, base, i, n=8):
    """n commits on top of base, each changing only a comment: the head."""
    git(repo, "checkout", "-q", "--detach", base)
    for k in range(n):
        with open(os.path.join(repo, "prog.py"), "w") as f:
            f.write(PROGRAM.format(comment=f"range {i} commit {k}", factor="1.0"))
        git(repo, "commit", "-q", "-am", f"range {i} commit {k}")
    head = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "--detach", base)
    return head


def bisect(coord, repo, good, bad, out, py):
    """One bisection of a comment-only range: its answer and wall time."""
    t0 = time.monotonic()
    p = subprocess.run(
        [coord, "bisect", "--good", good, "--bad", bad, "--repo", repo, "--output", out,
         "--figure", "span:work_s", "--threshold", "5", "--max-rounds", "30", "--", *run_flags(py, 3)],
        capture_output=True, text=True, cwd=repo, env=env_for(),
    )
    wall = time.monotonic() - t0
    try:
        with open(os.path.join(out, "report.json")) as f:
            r = json.load(f)
    except (OSError, ValueError):
        return f"failed ({p.returncode}: {p.stderr.strip().splitlines()[-1:]})", wall
    if r.get("first_bad"):
        return "first bad commit " + r["first_bad"][:12], wall
    if r.get("candidates"):
        return "one of " + ", ".join(c[:7] for c in r["candidates"]), wall
    return r["answer"].split(":")[0], wall


class Neighbour:
    """Two processes burning both cores half of each `period` seconds."""

    CODE = (
        "import time\n"
        "p, h = {p}, {h}\n"
        "while True:\n"
        "    t = time.time() % p\n"
        "    if t < h:\n"
        "        end = time.time() + (h - t)\n"
        "        while time.time() < end:\n"
        "            pass\n"
        "    else:\n"
        "        time.sleep(p - t)\n"
    )

    def __init__(self, period):
        code = self.CODE.format(p=period, h=period / 2)
        self.procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(2)]

    def stop(self):
        for p in self.procs:
            p.kill()
            p.wait()


def run_flags(py, trials):
    return ["--mode", "trials", "--trials", str(trials), "--warmup", "0", "--command", f"{py} prog.py"]


def gate(coord, repo, base, head, out, py, max_rounds, trials, figure):
    t0 = time.monotonic()
    p = subprocess.run(
        [coord, "gate", "--base", base, "--head", head, "--base-exact", "--repo", repo,
         "--output", out, "--gate", figure, "--threshold", "5", "--max-rounds", str(max_rounds),
         "--", *run_flags(py, trials)],
        capture_output=True, text=True, cwd=repo, env=env_for(),
    )
    wall = time.monotonic() - t0
    try:
        with open(os.path.join(out, "report.json")) as f:
            r = json.load(f)
        j = r["gated"][0]
        return r["verdict"], j["couples"], j["ratio"], wall, p.returncode, j.get("reason") or ""
    except (OSError, KeyError, IndexError, ValueError):
        why = p.stderr.strip().splitlines()[-1:]
        return f"failed ({p.returncode}: {why})", 0, float("nan"), wall, p.returncode, ""


def stored_baseline(coord, repo, base, head, work, py, figures):
    """Base once, head once just after, compare at 5% for each figure:
    regressed or not, per figure."""
    t0 = time.monotonic()
    dirs = []
    for name, commit in (("base", base), ("head", head)):
        tree = os.path.join(work, f"tree-{name}")
        git(repo, "worktree", "add", "-q", "--detach", tree, commit)
        out = os.path.join(work, f"run-{name}")
        subprocess.run([coord, "--quiet", *run_flags(py, 5), "--output", out], cwd=tree, env=env_for(),
                       capture_output=True, check=True)
        git(repo, "worktree", "remove", "--force", tree)
        dirs.append(out)
    said = {}
    for figure in figures:
        p = subprocess.run([coord, "compare", dirs[0], dirs[1], "--figure", figure, "--threshold", "5"],
                           capture_output=True, text=True, env=env_for())
        said[figure] = "regressed" if p.returncode == 4 else "not regressed"
    return said, time.monotonic() - t0


def env_for():
    env = dict(os.environ)
    env.setdefault("PYTHONPATH", os.path.join(ROOT, "python"))
    # Every span's thread CPU time too, so span:work_cpu_s can be gated.
    env["STAGEBENCH_SPANS_CPU"] = "1"
    return env


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per", type=int, default=20, help="pull requests of each kind (default 20)")
    ap.add_argument("--periods", default="1,6,30", help="the neighbour's periods in seconds, cycled over the pull requests")
    ap.add_argument("--max-rounds", type=int, default=120)
    ap.add_argument("--trials", type=int, default=3, help="the RUN FLAGS' --trials: one run's trials a letter")
    ap.add_argument("--kinds", default="null,slower,faster", help="which pull requests, of null, slower, faster")
    ap.add_argument("--figures", default="span:work_s,span:work_cpu_s",
                    help="the figures gated, each by a gate of its own (the span's wall and its thread CPU time)")
    ap.add_argument("--bisects", type=int, default=10, help="comment-only ranges bisected beside the neighbour")
    ap.add_argument("--keep", help="keep the repository and every gate's directory here (a new directory)")
    ap.add_argument("--coordinator", default=os.path.join(ROOT, "target", "release", "coordinator"))
    ap.add_argument("--no-neighbour", action="store_true", help="the control: an idle machine")
    a = ap.parse_args()
    a.coordinator = os.path.abspath(a.coordinator)
    if not os.path.exists(a.coordinator):
        subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "stagebench-coordinator",
                        "-p", "stagebench-worker"], cwd=ROOT, check=True)
    periods = [float(p) for p in a.periods.split(",")]
    py = sys.executable
    rows = []
    kinds = a.kinds.split(",")
    figures = a.figures.split(",")
    with tempfile.TemporaryDirectory() as scratch:
        tmp = scratch
        if a.keep:
            os.makedirs(a.keep)
            tmp = os.path.abspath(a.keep)
        repo = os.path.join(tmp, "repo")
        base = repository(repo)
        n = 0
        for i in range(a.per):
            for kind in kinds:
                # Every kind meets every period.
                period = periods[i % len(periods)]
                n += 1
                head = pull_request(repo, base, kind, i)
                work = os.path.join(tmp, f"pr{n}")
                os.makedirs(work)
                neighbour = None if a.no_neighbour else Neighbour(period)
                try:
                    gated = []
                    for k, figure in enumerate(figures):
                        gated.append(gate(a.coordinator, repo, base, head, os.path.join(work, f"gate{k}"),
                                          py, a.max_rounds, a.trials, figure))
                    stored, stored_wall = stored_baseline(a.coordinator, repo, base, head, work, py, figures)
                finally:
                    if neighbour:
                        neighbour.stop()
                for figure, (verdict, pairs, ratio, gate_wall, code, reason) in zip(figures, gated):
                    rows.append((kind, period, verdict, pairs, ratio, gate_wall, stored[figure], stored_wall, figure))
                    print(f"{kind:6} period {period:4.0f} s {figure:15}: gate {verdict:10} ({pairs:3} couples, "
                          f"×{ratio:.3f}, {gate_wall:5.1f} s, exit {code}); stored baseline {stored[figure]:13} "
                          f"({stored_wall:5.1f} s)" + (f"\n    {reason}" if reason else ""), flush=True)
        bisected = []
        for i in range(a.bisects):
            period = periods[i % len(periods)]
            head = comment_range(repo, base, i)
            neighbour = None if a.no_neighbour else Neighbour(period)
            try:
                answer, wall = bisect(a.coordinator, repo, base, head, os.path.join(tmp, f"bisect{i}"), py)
            finally:
                if neighbour:
                    neighbour.stop()
            bisected.append(answer)
            print(f"bisect {i + 1} of a comment-only range, period {period:4.0f} s: {answer} ({wall:.1f} s)", flush=True)
    print()
    if bisected:
        named = sum(1 for b in bisected if b.startswith("first bad commit"))
        print(f"comment-only ranges bisected beside the neighbour: {named} of {len(bisected)} said "
              f"'first bad commit'\n")
    print("| pull requests | figure | method | regressed | improved | same | not sure | median couples (max) |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for figure in figures:
        for kind in kinds:
            mine = [r for r in rows if r[0] == kind and r[8] == figure]
            count = lambda v: sum(1 for r in mine if r[2] == v)  # noqa: E731
            pairs = statistics.median(r[3] for r in mine) if mine else 0
            most = max((r[3] for r in mine), default=0)
            print(f"| {len(mine)} {kind} | `{figure}` | gate | {count('regressed')} | {count('improved')} | "
                  f"{count('same')} | {count('not_sure')} | {pairs:.0f} ({most}) |")
            stored = sum(1 for r in mine if r[6] == "regressed")
            print(f"| {len(mine)} {kind} | `{figure}` | stored baseline, compare at 5% | {stored} | – | – | – | – |")
    for figure in figures:
        mine = [r for r in rows if r[8] == figure]
        if not mine:
            continue
        gw = statistics.median(r[5] for r in mine)
        sw = statistics.median(r[7] for r in mine)
        null_alarms = sum(1 for r in mine if r[0] == "null" and r[2] == "regressed")
        slow_caught = sum(1 for r in mine if r[0] == "slower" and r[2] == "regressed")
        stored_alarms = sum(1 for r in mine if r[0] == "null" and r[6] == "regressed")
        stored_missed = sum(1 for r in mine if r[0] == "slower" and r[6] != "regressed")
        said = [f"false alarms on null: gate {null_alarms}, stored baseline {stored_alarms}"] if "null" in kinds else []
        if "slower" in kinds:
            said.append(f"slower caught: gate {slow_caught}, stored baseline {a.per - stored_missed} of {a.per}")
        print(f"{figure}: median wall gate {gw:.1f} s, stored baseline {sw:.1f} s (ratio {gw / sw:.2f}x); "
              + "; ".join(said))


if __name__ == "__main__":
    main()
