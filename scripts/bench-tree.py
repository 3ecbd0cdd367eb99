#!/usr/bin/env python3
"""What measuring process trees costs (issue 12), side by side in one invocation.

1. The sampler's CPU: the same stage with `--sample-ms 10` and with
   `--sample-ms 10000` (the sampler then reads only at the stage's start and
   end). The difference in the stage's CPU over its wall time is the sampler's
   share of one core. Stages: `sleep:3000` (the worker alone), and a
   command whose four children sleep 3 s (a tree of six processes to read),
   by the machine's method and with `STAGEBENCH_TREE_METHOD=sampled`.
2. The per-stage overhead: with `--baseline DIR` (the target/release of
   another build: one without tree measurement, or without I/O counters),
   N `noop` stages in fresh workers by each build, then N `--command true`
   stages (run from this checkout, a git work tree: a command's commit and
   dirty state are read before it runs), the coordinator's spawn-to-reap
   wall per worker (report.json workers[].wall_s), medians and their
   difference, and the range of the rounds' medians (the spread).

Every pair alternates its order round by round. Medians over ROUNDS.
Run by hand on an idle machine (release build); not part of CI.

With --sampler-of DIR, part 1 also measures that build's sampler, each case's
two builds one after the other in the same rounds.

usage: scripts/bench-tree.py [--rounds R] [--stages N] [--baseline DIR [--overhead-only]] [--sampler-of DIR]
"""
import argparse, json, os, statistics, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHILDREN = """
import os, time
for _ in range(4):
    if os.fork() == 0:
        time.sleep(3)
        os._exit(0)
for _ in range(4):
    os.wait()
"""


def run(coordinator, args, out, env=None):
    e = dict(os.environ)
    e.update(env or {})
    subprocess.run([coordinator, "--quiet", "--output", out] + args, check=True, env=e,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(os.path.join(out, "report.json")) as f:
        return json.load(f)


def sampler_share(coordinator, stage_args, key, ms, tmp, tag, env):
    r = run(coordinator, stage_args + ["--sample-ms", str(ms)], os.path.join(tmp, tag), env)
    s = r["stages"][key]
    return s["cpu_s"] / s["wall_s"]


def noop_overhead(coordinator, n, tmp, tag, stage=("--stage", "noop")):
    r = run(coordinator, list(stage) * n, os.path.join(tmp, tag))
    return statistics.median(w["wall_s"] for w in r["workers"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--stages", type=int, default=40)
    ap.add_argument("--baseline", help="target/release of a build without tree measurement")
    ap.add_argument("--overhead-only", action="store_true",
                    help="part 2 only (needs --baseline)")
    ap.add_argument("--sampler-of", metavar="DIR",
                    help="target/release of another build whose sampler to measure beside this one's")
    a = ap.parse_args()
    new = os.path.join(ROOT, "target", "release", "coordinator")
    if not os.path.isfile(new):
        sys.exit("build first: cargo build --release --workspace")
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "children.py")
        with open(script, "w") as f:
            f.write(CHILDREN)
        children = ["--command", f"python3 {script}"]
        cases = [("worker alone (sleep:3000)", ["--stage", "sleep:3000"], "sleep:3000", {}),
                 ("4 sleeping children", children, "command", {}),
                 ("4 children, forced sampled", children, "command",
                  {"STAGEBENCH_TREE_METHOD": "sampled"})]
        builds = [("this build", new)]
        if a.sampler_of:
            builds.append(("other build", os.path.join(a.sampler_of, "coordinator")))
        if not a.overhead_only:
            print(f"sampler CPU as a share of one core, median of {a.rounds} rounds:")
        for name, args, key, env in [] if a.overhead_only else cases:
            for build, coordinator in builds:
                shares = {10: [], 10000: []}
                for i in range(a.rounds):
                    order = (10, 10000) if i % 2 == 0 else (10000, 10)
                    for ms in order:
                        tag = f"s-{build[0]}-{len(env)}-{key}-{ms}-{i}"
                        shares[ms].append(sampler_share(coordinator, args, key, ms, tmp, tag, env))
                m10, midle = statistics.median(shares[10]), statistics.median(shares[10000])
                print(f"  {name:<28} {build:<11} at 10 ms {100 * m10:6.3f}%  idle sampler "
                      f"{100 * midle:6.3f}%  sampling costs {100 * (m10 - midle):6.3f}% of a core")
        if a.baseline:
            old = os.path.join(a.baseline, "coordinator")
            for what, stage in [("a noop worker", ("--stage", "noop")),
                                ("a `--command true` worker", ("--command", "true"))]:
                per = {"baseline": [], "this build": []}
                for i in range(a.rounds):
                    order = [("baseline", old), ("this build", new)]
                    if i % 2:
                        order.reverse()
                    for name, coordinator in order:
                        tag = f"o-{name[0]}-{stage[0]}-{i}"
                        per[name].append(noop_overhead(coordinator, a.stages, tmp, tag, stage))
                b, t = statistics.median(per["baseline"]), statistics.median(per["this build"])
                spread = lambda xs: f"{1e3 * min(xs):.3f}-{1e3 * max(xs):.3f} ms"
                print(f"per-stage spawn-to-reap of {what}, median of {a.rounds} rounds x {a.stages} stages:")
                print(f"  baseline {1e3 * b:.3f} ms (rounds {spread(per['baseline'])}), "
                      f"this build {1e3 * t:.3f} ms (rounds {spread(per['this build'])}): "
                      f"{1e3 * (t - b):+.3f} ms ({t / b:.3f}x)")


if __name__ == "__main__":
    main()
