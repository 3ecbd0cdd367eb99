#!/usr/bin/env python3
"""Cross-check a feature cache against an independent numpy implementation of
the feature contract (docs/feature-contract.md). Needs numpy and pyarrow
(`pip install numpy pyarrow`); `.ci/run` installs them in a virtualenv and runs
this on a tiny cohort.

usage: scripts/crosscheck-features.py RUN_DIR DATA_DIR [CACHE]
  RUN_DIR   a cold-prep run directory
  DATA_DIR  the frozen dataset it read
  CACHE     private-feature-cache (default) or private-feature-cache-parallel
Prints the number of frames compared and the largest difference over valid
frames in units in the last place of float32 (numpy computes in float64 and rounds
once, as the contract says); exits 1 if no frame was compared, if shapes or
validity differ, or if any value is more than MAX_ULPS from numpy's.
"""
import json, sys
import numpy as np

# float64 sums in another order (numpy's pairwise summation) may round to a
# neighbouring float32 now and then; anything further is a different formula.
MAX_ULPS = 2


def ulps(a, b):
    """Distance in float32 units in the last place (0 for equal values)."""
    ia = a.view(np.int32).astype(np.int64)
    ib = b.view(np.int32).astype(np.int64)
    # Map sign-magnitude onto a monotonic integer line.
    ia = np.where(ia < 0, -(2**31) - ia, ia)
    ib = np.where(ib < 0, -(2**31) - ib, ib)
    return np.abs(ia - ib)
import pyarrow.parquet as pq

run, data = sys.argv[1], sys.argv[2]
cache = sys.argv[3] if len(sys.argv) > 3 else "private-feature-cache"
frozen = json.load(open(f"{data}/frozen.json"))
worst, frames = 0, 0
for s in frozen["series"]:
    if s["partition"] != "train":
        continue
    t = pq.read_table(f"{data}/{s['file']}", columns=["timestamp", "anglez", "enmo"]).to_pydict()
    tod = np.array([int(x[11:13]) * 3600 + int(x[14:16]) * 60 + int(x[17:19]) for x in t["timestamp"]], dtype=np.float64)
    e = np.array(t["enmo"], dtype=np.float64)
    a = np.array(t["anglez"], dtype=np.float64)
    n_frames = max(0, (len(tod) - 12) // 6 + 1)
    idx = np.arange(n_frames)[:, None] * 6 + np.arange(12)[None, :]
    c = np.cos(2 * np.pi * tod / 86400.0)
    want = np.stack([c[idx].mean(1), e[idx].mean(1), e[idx].std(1), a[idx].mean(1), a[idx].std(1)], 1).astype(np.float32)
    valid = np.isfinite(e[idx]).all(1) & np.isfinite(a[idx]).all(1)
    got = np.load(f"{run}/{cache}/{s['id']}/values.npy")
    got_valid = np.load(f"{run}/{cache}/{s['id']}/valid.npy")
    if got.shape != want.shape or not (got_valid == valid).all():
        sys.exit(f"series {s['id']}: shape or validity differs")
    if valid.any():
        worst = max(worst, int(ulps(got[valid], want[valid]).max()))
    frames += int(valid.sum())
print(f"{frames} valid frames compared; largest difference from numpy: {worst} ULP (float32)")
if frames == 0:
    sys.exit("no frame was compared: nothing was checked")
sys.exit(1 if worst > MAX_ULPS else 0)
