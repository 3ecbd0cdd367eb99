"""Ground truth for `--sample` on a `--prepare` program: each item's CPU is
spent in `f` and `g` in the ratio 70:30, by counted loops, and the item's
file holds their sums (the same whoever prepares it, so the serial and the
parallel caches must be byte-identical).
"""

import os

import stagebench

UNIT = 80_000


def f(n):
    s = 0
    for i in range(7 * UNIT):
        s += i ^ n
    return s


def g(n):
    s = 0
    for i in range(3 * UNIT):
        s += i ^ n
    return s


def prepare(item, out):
    n = int(item)
    total = 0
    for _ in range(4):
        total += f(n) + g(n)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, item + ".txt"), "w") as fh:
        fh.write(f"{total}\n")


if __name__ == "__main__":
    stagebench.serve(prepare)
