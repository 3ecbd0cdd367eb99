#!/usr/bin/env python3
"""What `--sample` costs a program, measured side by side.

A CPU-bound Python program (tests/scripts/sampled_truth.py: counted loops
in the main process and in a forked child, about 1.4 s of wall and 2 s of
CPU) runs as a `--mode trials` command stage under arms that alternate
round by round, in this order each round (so drift hits every arm alike):

  off      - not sampled;
  off2     - not sampled again: the control, whose ratio to `off` must be
             about 1 (it shows what the machine's noise alone does);
  R Hz     - `--sample R` for each RATE given (default 100, the default
             rate, and 250).

Per arm: the median over every trial of the stage's wall and CPU (the
tree's, which leaves py-spy's own CPU out), and each median's ratio to
`off`'s. Then py-spy's own CPU, which the report leaves out: the program
run here by hand under `py-spy record --pid` at each rate, py-spy's
rusage from wait4, per second of the program's wall.

With --prepare, the arms run `--mode cold-prep --prepare` instead, over
60 items of tests/scripts/sampled_items.py (counted loops, about 85 ms of
CPU an item) on 1 and 2 workers, one round: per arm the median of each
phase's wall and CPU (which leave py-spy's out) and of the speedup.

Needs py-spy beside PYTHON (default: the python3 on PATH; pass
--python VENV/bin/python). Run by hand on an idle machine, never beside
another benchmark.

usage: scripts/bench-sample.py [--rounds N] [--rates 100,250] [--python PY] [--prepare]
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAM = os.path.join(ROOT, "tests", "scripts", "sampled_truth.py")


def coordinator():
    path = os.path.join(ROOT, "target", "release", "coordinator")
    if not os.access(path, os.X_OK):
        subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "stagebench-coordinator",
                        "-p", "stagebench-worker"], cwd=ROOT, check=True)
    return path


def trial_figures(run_dir):
    with open(os.path.join(run_dir, "report.json")) as f:
        report = json.load(f)
    t = report["trials"]["command"]["samples"]
    return t["wall_s"], t["cpu_s"]


def run_arm(coord, python, rate, trials, work):
    out = tempfile.mkdtemp(dir=work)
    os.rmdir(out)
    cmd = [coord, "--mode", "trials", "--trials", str(trials), "--warmup", "1", "--quiet",
           "--output", out, "--command", f"{python} {PROGRAM}"]
    if rate:
        cmd += ["--sample", str(rate)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd=work)
    return trial_figures(out)


ITEMS = os.path.join(ROOT, "tests", "scripts", "sampled_items.py")


def run_prepare_arm(coord, python, rate, work):
    """One cold-prep run: (serial wall, parallel wall, serial CPU, parallel CPU)."""
    out = tempfile.mkdtemp(dir=work)
    os.rmdir(out)
    items = os.path.join(work, "items.txt")
    with open(items, "w") as f:
        f.write("".join(f"{i}\n" for i in range(1, 61)))
    cmd = [coord, "--mode", "cold-prep", "--workers", "2", "--rounds", "1", "--quiet",
           "--output", out, "--items", items, "--prepare", f"{python} {ITEMS}"]
    if rate:
        cmd += ["--sample", str(rate)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd=work)
    with open(os.path.join(out, "report.json")) as f:
        st = json.load(f)["stages"]
    s, p = st["cold_prepare"], st["cold_prepare_parallel"]
    return s["wall_s"], p["wall_s"], s["cpu_s"], p["cpu_s"]


def prepare_main(a, python, arms, coord):
    figs = {name: [] for name, _ in arms}
    with tempfile.TemporaryDirectory() as work:
        for i in range(a.rounds):
            for name, rate in arms:
                figs[name].append(run_prepare_arm(coord, python, rate, work))
            print(f"round {i + 1}/{a.rounds} done", file=sys.stderr)
    med = lambda name, k: statistics.median(f[k] for f in figs[name])
    speed = lambda name: statistics.median(f[0] / f[1] for f in figs[name])
    print(f"program: {os.path.relpath(ITEMS, ROOT)}, 60 items, 1 and 2 workers, {a.rounds} rounds, alternating")
    print("| arm | serial wall | ratio | 2-process wall | ratio | serial CPU | ratio | speedup |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, _ in arms:
        sw, pw, sc = med(name, 0), med(name, 1), med(name, 2)
        print(f"| {name} | {sw * 1000:.0f} ms | {sw / med('off', 0):.3f} | {pw * 1000:.0f} ms | "
              f"{pw / med('off', 1):.3f} | {sc * 1000:.0f} ms | {sc / med('off', 2):.3f} | {speed(name):.2f}x |")


def py_spy_own_cpu(python, rate):
    """py-spy's CPU seconds per second of the program's wall, at `rate`."""
    spy = os.path.join(os.path.dirname(python), "py-spy")
    t0 = time.monotonic()
    prog = subprocess.Popen([python, PROGRAM])
    with tempfile.TemporaryDirectory() as d:
        s = subprocess.Popen([spy, "record", "--pid", str(prog.pid), "--subprocesses", "--rate",
                              str(rate), "--format", "raw", "--output", os.path.join(d, "raw")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, _, _ = os.wait4(prog.pid, 0)
        wall = time.monotonic() - t0
        _, _, usage = os.wait4(s.pid, 0)
    return (usage.ru_utime + usage.ru_stime) / wall


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--trials", type=int, default=3)
    p.add_argument("--rates", default="100,250")
    p.add_argument("--python", default="python3")
    p.add_argument("--prepare", action="store_true", help="cost on a --prepare phase")
    a = p.parse_args()
    python = a.python
    if os.sep not in python:
        python = subprocess.run(["sh", "-c", f"command -v {python}"], capture_output=True,
                                text=True, check=True).stdout.strip()
    if not os.access(os.path.join(os.path.dirname(python), "py-spy"), os.X_OK):
        sys.exit(f"no py-spy beside {python}: pip install py-spy into its environment")
    rates = [int(r) for r in a.rates.split(",")]
    arms = [("off", 0), ("off2", 0)] + [(f"{r} Hz", r) for r in rates]
    coord = coordinator()
    if a.prepare:
        return prepare_main(a, python, arms, coord)
    walls = {name: [] for name, _ in arms}
    cpus = {name: [] for name, _ in arms}
    with tempfile.TemporaryDirectory() as work:
        for i in range(a.rounds):
            for name, rate in arms:
                w, c = run_arm(coord, python, rate, a.trials, work)
                walls[name] += w
                cpus[name] += c
            print(f"round {i + 1}/{a.rounds} done", file=sys.stderr)
    base_w, base_c = statistics.median(walls["off"]), statistics.median(cpus["off"])
    print(f"program: {os.path.relpath(PROGRAM, ROOT)}, {a.rounds} rounds x {a.trials} trials per arm, alternating")
    print("| arm | median wall | ratio | median CPU | ratio |")
    print("|---|---:|---:|---:|---:|")
    for name, _ in arms:
        w, c = statistics.median(walls[name]), statistics.median(cpus[name])
        print(f"| {name} | {w * 1000:.1f} ms | {w / base_w:.3f} | {c * 1000:.1f} ms | {c / base_c:.3f} |")
    print()
    print("| rate | py-spy's own CPU per second of wall (median of 5) |")
    print("|---:|---:|")
    for r in rates:
        own = statistics.median(py_spy_own_cpu(python, r) for _ in range(5))
        print(f"| {r} Hz | {own * 1000:.1f} ms/s |")


if __name__ == "__main__":
    main()
