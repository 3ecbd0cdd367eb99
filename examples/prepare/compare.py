#!/usr/bin/env python3
"""Check the example's output against the built-in recipe's cache.

usage: compare.py OUTPUT CACHE
  OUTPUT  the example's output directory (a run's private-output)
  CACHE   a built-in cold-prep run's private-feature-cache

Every series in CACHE must be in OUTPUT with the same shape and validity,
and every valid frame's five values within MAX_ULPS float32 units in the
last place (numpy sums in its own order, pairwise; the recipe in sample
order: both in float64, rounded once to float32). Prints the series and
frames compared and the largest difference; exits 1 on any breach, or if
nothing was compared.
"""
import os
import sys

import numpy as np

MAX_ULPS = 2


def ulps(a, b):
    """Distance in float32 units in the last place (0 for equal values)."""
    ia = a.view(np.int32).astype(np.int64)
    ib = b.view(np.int32).astype(np.int64)
    ia = np.where(ia < 0, -(2**31) - ia, ia)
    ib = np.where(ib < 0, -(2**31) - ib, ib)
    return np.abs(ia - ib)


def main(output, cache):
    ids = sorted(e.name for e in os.scandir(cache) if e.is_dir())
    worst, frames = 0, 0
    for i in ids:
        got = [np.load(os.path.join(output, i, f)) for f in ("values.npy", "valid.npy")]
        want = [np.load(os.path.join(cache, i, f)) for f in ("values.npy", "valid.npy")]
        if got[0].dtype != np.float32 or got[0].shape != want[0].shape:
            sys.exit("a series' values differ in type or shape from the built-in cache")
        if not (got[1] == want[1]).all():
            sys.exit("a series' frame validity differs from the built-in cache")
        valid = want[1]
        if valid.any():
            worst = max(worst, int(ulps(got[0][valid], want[0][valid]).max()))
        frames += int(valid.sum())
    print("%d series, %d valid frames compared; largest difference: %d ULP (float32, at most %d allowed)"
          % (len(ids), frames, worst, MAX_ULPS))
    if frames == 0:
        sys.exit("nothing was compared")
    sys.exit(1 if worst > MAX_ULPS else 0)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
