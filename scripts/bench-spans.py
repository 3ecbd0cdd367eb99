#!/usr/bin/env python3
"""What following a command's spans file costs, and how soon a kill point kills.

Measures, in one invocation (release build), interleaved over ROUNDS rounds:

  chatty   - a command stage whose Python writes SPANS spans through the
             `stagebench` helper as fast as it can (one O_APPEND write each):
             the stage's median wall under this build, and under --baseline
             (a build that read the spans file only at the stage's end), as a
             ratio. The worker reads what the file gained every 100 ms while
             the command runs; this is what that costs the command.
  quiet    - a command stage that sleeps 200 ms and writes nothing: its wall
             minus 200 ms (process starts included), under both builds: the
             difference is what following adds to a command that reports
             nothing (this build sleeps in poll on a pidfd, the baseline in
             wait4). An inotify watch on the spans file made this 6 to 14 ms
             worse in most runs, which is why the worker does not use one.
  kill     - `--kill-at k:span:go:1` on a command that writes one span, then
             spins: from the moment just before that write (CLOCK_MONOTONIC,
             the command's own clock) to the moment the command is dead (a
             pidfd this script holds on it becomes readable).
  floor    - the control for `kill`: this script SIGKILLs a spinning process
             itself and waits on its pidfd the same way.
  wrapped  - what `--span` adds to a call: a function called CALLS times
             bare and the same function wrapped as `--span` wraps it
             (in place, through a trampoline, since issue 63; before,
             _wrap.timed's new wrapper), tallying each call, in one
             process, alternating; the difference per call, in µs. Beside
             it, two controls: a wrapper that only reads the clock twice
             (the floor any timing wrapper pays) and one write(2) of a span
             line (what each call cost when every span was a line).
             `--wrapped-only` measures just this.
  compiled - `--installed PY`: the same wrapped call under a helper
             pip-installed into PY, with its compiled hot path
             (python/stagebench/_fast.c) and with the Python one
             (STAGEBENCH_SPANS_PURE_PYTHON=1), alternating processes.
  exit     - what the helper's runtime line costs a program's exit: a
             fresh `python -c "import json, stagebench"` under stagebench
             (STAGEBENCH_SPANS set: at exit it writes the interpreter's
             version and the imported distributions) and outside it (no
             line), alternating; medians and their difference.
             `--exit-only` measures just this, with --python PY (a Python
             whose site-packages hold the libraries to report).
  eager    - what a run with a kill point adds to a wrapped call: there
             the helper writes every span at its end
             (STAGEBENCH_SPANS_EAGER=*), so a SIGKILL loses nothing that
             ended; the wrapped call with and without it, alternating
             processes. `--eager-only` measures just this.

Run by hand on an idle machine; not part of CI. Never run two benchmarks at once.

usage: scripts/bench-spans.py [--rounds R] [--spans N] [--baseline TARGET_RELEASE_DIR]
       scripts/bench-spans.py --wrapped-only [--baseline-python OLD_CHECKOUT/python]
       scripts/bench-spans.py --installed VENV/bin/python [--rounds R]
"""
import argparse, json, os, select, signal, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HELPER = os.path.join(ROOT, "python")

CHATTY = """
import stagebench, sys
for _ in range(int(sys.argv[1])):
    with stagebench.span("tick"):
        pass
"""

KILLED = """
import os, sys, time, stagebench
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(os.getpid()))
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(0.3)                         # the bench opens its pidfd meanwhile
t = time.clock_gettime(time.CLOCK_MONOTONIC)
with open(sys.argv[2], "w") as f:
    f.write(repr(t))
with stagebench.span("go"):
    pass
while True:
    pass
"""


def env():
    e = dict(os.environ)
    e["PYTHONPATH"] = HELPER + os.pathsep + e.get("PYTHONPATH", "")
    return e


def stage_wall(coordinator, tmp, tag, line):
    out = os.path.join(tmp, tag)
    r = subprocess.run([coordinator, "--quiet", "--output", out, "--name", "c", "--command", line],
                       env=env(), capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{tag}: {r.stderr}")
    with open(os.path.join(out, "report.json")) as f:
        return json.load(f)["stages"]["c"]["wall_s"]


def wait_file(path, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            sys.exit(f"{path} never appeared")
        time.sleep(0.005)


def kill_latency(coordinator, tmp, tag):
    pidfile, timefile = os.path.join(tmp, tag + ".pid"), os.path.join(tmp, tag + ".t")
    script = os.path.join(tmp, "killed.py")
    line = f"'{sys.executable}' '{script}' '{pidfile}' '{timefile}'"
    p = subprocess.Popen([coordinator, "--quiet", "--output", os.path.join(tmp, tag), "--name", "k",
                          "--kill-at", "k:span:go:1", "--command", line],
                         env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_file(pidfile)
    fd = os.pidfd_open(int(open(pidfile).read()))
    select.select([fd], [], [], 30)
    dead = time.clock_gettime(time.CLOCK_MONOTONIC)
    os.close(fd)
    p.wait(timeout=30)
    return dead - float(open(timefile).read())


def floor_latency():
    p = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    time.sleep(0.1)
    fd = os.pidfd_open(p.pid)
    t = time.clock_gettime(time.CLOCK_MONOTONIC)
    os.kill(p.pid, signal.SIGKILL)
    select.select([fd], [], [], 30)
    dead = time.clock_gettime(time.CLOCK_MONOTONIC)
    os.close(fd)
    p.wait()
    return dead - t


WRAPPED = """
import os, sys, tempfile, time
if {helper!r} is not None:
    sys.path.insert(0, {helper!r})
fd, path = tempfile.mkstemp(); os.close(fd)
os.environ["STAGEBENCH_SPANS"] = path
from stagebench import autospan
try:
    from stagebench._wrap import timed as _timed_now
except ImportError:
    _timed_now = None
try:
    from stagebench._spans import flush_all
except ImportError:
    flush_all = lambda: None
def work(x):
    return x + 1
def target(x):
    return x + 1
# What --span makes of a function: since issue 63 the function itself,
# redirected in place (a trampoline, then the span); before, a new wrapper
# (_wrap.timed), and an older helper (--baseline-python) has autospan.timed,
# or before that autospan._timed, which wrote a line a call.
try:
    from stagebench._wrap import _redirected
except ImportError:
    _redirected = None
if _redirected is not None and _redirected(target, "work"):
    wrapped = target
else:
    wrapped = (_timed_now or getattr(autospan, "timed", None) or autospan._timed)(work, "work")
line = b'{{"name":"work","seconds":1234e-9,"start":5678e-9}}\\n'
out = os.open(path, os.O_WRONLY | os.O_APPEND)
def write(x):
    os.write(out, line)
now = time.perf_counter_ns
def floor(x):
    # The least a wrapper that times a call can do: two clock reads around it.
    start = now()
    try:
        return work(x)
    finally:
        ns = now() - start
def loop(f, n):
    t = time.perf_counter()
    for i in range(n):
        f(i)
    return time.perf_counter() - t
n = {calls}
# Alternating halves, so drift favours neither.
bare = timed = wrote = least = 0.0
for _ in range(2):
    bare += loop(work, n // 2)
    timed += loop(wrapped, n // 2)
    wrote += loop(write, n // 2)
    least += loop(floor, n // 2)
flush_all()
os.unlink(path)
try:
    from stagebench._spans import fast
except ImportError:
    fast = None
print(bare / n, timed / n, wrote / n, least / n, int(fast is not None))
"""


def wrapped_cost(calls, helper=HELPER, eager=False, python=sys.executable, pure=False):
    """Seconds a call costs bare, wrapped, and as one write(2) of a span
    line (what a call cost when every span was a line), and whether the
    compiled path timed it, in one fresh process; with `eager`, as in a run
    with a kill point; `helper` None imports the helper `python` has
    installed; `pure` forces the Python path (STAGEBENCH_SPANS_PURE_PYTHON)."""
    env = dict(os.environ)
    env.pop("STAGEBENCH_SPANS_EAGER", None)
    env.pop("STAGEBENCH_SPANS_PURE_PYTHON", None)
    if eager:
        env["STAGEBENCH_SPANS_EAGER"] = "*"
    if pure:
        env["STAGEBENCH_SPANS_PURE_PYTHON"] = "1"
    out = subprocess.run([python, "-c", WRAPPED.format(helper=helper, calls=calls)],
                         check=True, capture_output=True, text=True, env=env).stdout.split()
    return float(out[0]), float(out[1]), float(out[2]), float(out[3]), out[4] == "1"


def compiled_against_pure(python, calls, rounds):
    """--installed PY: the wrapped call's cost over a bare one with the
    compiled path (_fast.c, built by `pip install ./python` into PY) and
    with the Python path in the same installation, alternating processes."""
    fast, pure = [], []
    for r in range(rounds):
        for p in ((False, True) if r % 2 == 0 else (True, False)):
            c = wrapped_cost(calls, helper=None, python=python, pure=p)
            if not p and not c[4]:
                sys.exit(f"{python}: the helper it has installed has no compiled path")
            (pure if p else fast).append(c)
    med = statistics.median
    bare = med(c[0] for c in fast + pure)
    f, p = med(c[1] - c[0] for c in fast), med(c[1] - c[0] for c in pure)
    least = med(c[3] - c[0] for c in fast + pure)
    print(f"compiled: a bare call {bare * 1e6:.3f} us; --span adds {f * 1e6:.3f} us a call "
          f"compiled, {p * 1e6:.3f} us in Python ({f / p:.2f}x); a wrapper that only reads the "
          f"clock twice adds {least * 1e6:.3f} us (medians of {rounds} processes each, "
          f"{calls} calls, alternating)")


def exit_cost(python, rounds):
    """Median wall of a fresh Python importing the helper, with and without
    STAGEBENCH_SPANS set (the runtime line written at exit, or not)."""
    env = dict(os.environ, PYTHONPATH=HELPER)
    env.pop("STAGEBENCH_SPANS", None)
    on, off = [], []
    with tempfile.TemporaryDirectory() as tmp:
        spans = os.path.join(tmp, "spans.jsonl")
        for r in range(rounds):
            for under in ([True, False] if r % 2 == 0 else [False, True]):
                e = dict(env, STAGEBENCH_SPANS=spans) if under else env
                open(spans, "w").close()
                t = time.perf_counter()
                subprocess.run([python, "-c", "import json, stagebench"], env=e, check=True)
                (on if under else off).append(time.perf_counter() - t)
    return statistics.median(on), statistics.median(off)


def ms(x):
    return f"{1000 * x:8.3f} ms"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--spans", type=int, default=20000)
    ap.add_argument("--baseline", help="target/release of a build that read spans only at the end")
    ap.add_argument("--calls", type=int, default=200000, help="calls per wrapped measurement")
    ap.add_argument("--wrapped-only", action="store_true")
    ap.add_argument("--baseline-python", help="the python/ directory of an older checkout: "
                    "its wrapped call measured too, alternating processes with this one")
    ap.add_argument("--exit-only", action="store_true")
    ap.add_argument("--python", default=sys.executable, help="the Python for `exit`")
    ap.add_argument("--eager-only", action="store_true")
    ap.add_argument("--installed", metavar="PY", help="a Python with the helper pip-installed "
                    "(compiled path built): compiled against Python path, then stop")
    a = ap.parse_args()
    if a.installed:
        compiled_against_pure(a.installed, a.calls, a.rounds)
        return
    if a.eager_only:
        plain, eager = [], []
        for r in range(a.rounds):
            for e in ((False, True) if r % 2 == 0 else (True, False)):
                c = wrapped_cost(a.calls // 10, eager=e)
                (eager if e else plain).append(c[1] - c[0])
        p, e = statistics.median(plain), statistics.median(eager)
        print(f"eager: --span adds {p * 1e6:.3f} us a call, {e * 1e6:.3f} us in a run with a "
              f"kill point (every span written at its end): {e / p:.1f}x, +{(e - p) * 1e6:.3f} us "
              f"(medians of {a.rounds} processes each, {a.calls // 10} calls, alternating)")
        return
    on, off = exit_cost(a.python, a.rounds)
    print(f"exit: a Python importing the helper takes {on * 1e3:.1f} ms under stagebench "
          f"(runtime line at exit), {off * 1e3:.1f} ms outside it: {(on - off) * 1e3:+.1f} ms "
          f"(medians of {a.rounds} alternating processes)")
    if a.exit_only:
        return
    costs, older = [], []
    for r in range(a.rounds):
        sides = [HELPER] + ([a.baseline_python] if a.baseline_python else [])
        for helper in (sides if r % 2 == 0 else sides[::-1]):
            (costs if helper == HELPER else older).append(wrapped_cost(a.calls, helper))
    if older:
        this = statistics.median(c[1] - c[0] for c in costs)
        base = statistics.median(c[1] - c[0] for c in older)
        print(f"wrapped, this helper against {a.baseline_python}: +{this * 1e6:.3f} us against "
              f"+{base * 1e6:.3f} us a call over bare, {this / base:.2f}x (medians of {a.rounds} "
              f"processes each, alternating)")
    bare = statistics.median(c[0] for c in costs)
    extra = statistics.median(c[1] - c[0] for c in costs)
    wrote = statistics.median(c[2] - c[0] for c in costs)
    least = statistics.median(c[3] - c[0] for c in costs)
    print(f"wrapped: a bare call {bare * 1e6:.3f} us; --span adds {extra * 1e6:.3f} us a call; "
          f"a wrapper that only reads the clock twice adds {least * 1e6:.3f} us; one write(2) "
          f"of a span line (a call's cost when each span was a line) {wrote * 1e6:.3f} us "
          f"(medians of {a.rounds} processes, {a.calls} calls each, alternating)")
    if a.wrapped_only:
        return
    builds = {"this": os.path.join(ROOT, "target", "release")}
    if a.baseline:
        builds["baseline"] = a.baseline
    coord = {k: os.path.join(v, "coordinator") for k, v in builds.items()}
    chatty, quiet = {k: [] for k in builds}, {k: [] for k in builds}
    kill, floor = [], []
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "chatty.py")
        open(script, "w").write(CHATTY)
        open(os.path.join(tmp, "killed.py"), "w").write(KILLED)
        line = f"'{sys.executable}' '{script}' {a.spans}"
        for r in range(a.rounds):
            for k in builds:
                chatty[k].append(stage_wall(coord[k], tmp, f"chatty-{k}-{r}", line))
            for k in builds:
                quiet[k].append(stage_wall(coord[k], tmp, f"quiet-{k}-{r}", "sleep 0.2") - 0.2)
            kill.append(kill_latency(coord["this"], tmp, f"kill-{r}"))
            floor.append(floor_latency())
            print(f"round {r + 1}/{a.rounds} done", file=sys.stderr)
    med = statistics.median
    print(f"medians of {a.rounds} rounds, interleaved")
    for k in builds:
        print(f"chatty ({a.spans} spans), {k:8}: {ms(med(chatty[k]))}")
    if "baseline" in builds:
        ratios = [t / b for t, b in zip(chatty["this"], chatty["baseline"])]
        print(f"chatty this/baseline, median of per-round ratios: {med(ratios):.3f}")
    for k in builds:
        print(f"quiet (sleep 0.2) - 200 ms, {k:8}: {ms(med(quiet[k]))}")
    print(f"kill: span written to dead   {ms(med(kill))} (max {ms(max(kill))})")
    print(f"floor: SIGKILL to dead       {ms(med(floor))} (max {ms(max(floor))})")


if __name__ == "__main__":
    main()
