#!/usr/bin/env python3
"""What keeping a command's stderr tail costs the command (issue 43).

When stagebench's stderr is not a terminal, a command's stderr reaches it
through a pipe the worker passes on byte for byte (keeping the last 64 KiB
for a failed trial's private file). A program that writes a lot to stderr
then writes into that pipe instead of the file: this is what that costs,
measured by stagebench itself, in one `--mode trials` run whose stages
alternate trial by trial:
  - `through`: `head -c SIZE /dev/zero >&2`: every byte through the pipe;
  - `direct`: the same, its stderr sent to /dev/null by the shell, so it
    never reaches the pipe;
  - `direct_again`: the same as `direct`, the control: its ratio to
    `direct` must be about 1.
It prints each stage's median wall and the ratios to `direct`. stagebench's
own stderr goes to /dev/null, the cheapest reader there is, so the ratio is
the pipe's and the copy's cost alone. Run by hand on an idle machine
(release build).

usage: scripts/bench-stderr.py [--mib N] [--trials T]
"""

import argparse
import json
import os
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COORDINATOR = os.path.join(ROOT, "target", "release", "coordinator")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--trials", type=int, default=15)
    a = ap.parse_args()
    write = f"head -c {a.mib}M /dev/zero"
    stages = {
        "through": f"{write} >&2",
        "direct": f"{write} 2>/dev/null >&2",
        "direct_again": f"{write} 2>/dev/null >&2",
    }
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "run")
        args = [COORDINATOR, "--quiet", "--mode", "trials", "--trials", str(a.trials)]
        args += ["--warmup", "1", "--output", out]
        for name, line in stages.items():
            args += ["--command", line, "--name", name]
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(os.path.join(out, "report.json")) as f:
            trials = json.load(f)["trials"]
    median = {n: trials[n]["summary"]["wall_s"]["median"] for n in stages}
    print(f"{a.mib} MiB to stderr, {a.trials} trials per stage, medians:")
    for n in stages:
        print(f"  {n:<13} {median[n] * 1e3:9.1f} ms  {median[n] / median['direct']:.3f}x direct")
    extra = median["through"] - median["direct"]
    print(f"  through the pipe: +{extra * 1e3:.1f} ms, {a.mib / max(median['through'], 1e-9):.0f} MiB/s")


if __name__ == "__main__":
    main()
