"""Ground truth for `--sample`: the main process spends its CPU in `f` and
`g` in the ratio 70:30, by counted loops interleaved in rounds (so a late
attach or an early detach costs both alike), and a forked child spends its
CPU in `h`. With `--sleep`, `rest` sleeps as long as the loops run: an idle
thread, which must not show as running.

`SAMPLED_F_UNITS` (environment, default 7) changes `f`'s share: what
`compare` must then find changed. `SAMPLED_CHILD=0` starts no child (a
like run's lanes then cannot be split differently by the scheduler).

Writes `OUT` (the sums, so a run with and without the sampler can be
compared byte for byte) and exits with STATUS (default 0).
"""

import multiprocessing as mp
import os
import sys
import time

UNIT = 150_000
ROUNDS = 20
F_UNITS = int(os.environ.get("SAMPLED_F_UNITS", "7"))


def f():
    s = 0
    for i in range(F_UNITS * UNIT):
        s += i
    return s


def g():
    s = 0
    for i in range(3 * UNIT):
        s += i
    return s


def h():
    s = 0
    for i in range(5 * UNIT * ROUNDS):
        s += i
    return s


def rest(seconds):
    time.sleep(seconds)


def main():
    sleep = "--sleep" in sys.argv
    out = sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else None
    status = int(sys.argv[sys.argv.index("--status") + 1]) if "--status" in sys.argv else 0
    with_child = os.environ.get("SAMPLED_CHILD", "1") != "0"
    child = mp.get_context("fork").Process(target=h if with_child else int)
    child.start()
    total = 0
    for _ in range(ROUNDS):
        t = time.perf_counter()
        total += f() + g()
        if sleep:
            rest(time.perf_counter() - t)
    child.join()
    if out:
        with open(out, "w") as fh:
            fh.write(f"{total} {child.exitcode}\n")
    sys.exit(status)


if __name__ == "__main__":
    main()
