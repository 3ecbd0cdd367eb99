#!/usr/bin/env python3
"""What creating a cache's files costs after deletions, on the file system of DIR.

Creates BATCHES batches of a cache's shape (a directory per series holding
values.npy and valid.npy, here 4 KiB each: the cost measured is the files'
creation, not their bytes) and times each batch. Mode `delete` removes each
batch right after it, as a cold-prep round removes its checked cache; mode
`keep` keeps them all until the end, the control. The two modes alternate,
and each batch's time is printed, then the medians.

On ext4 without a journal (environment.json's `output_filesystem`), the
kernel does not reuse an inode freed in the last 5 s (5 min while its inode
table block is dirty) and scans past each one when it allocates: the
`delete` batches slow down, the `keep` ones do not. Run by hand; not in CI.

usage: scripts/bench-file-creation.py [--dir DIR] [--series N] [--batches B]
"""

import argparse
import os
import shutil
import statistics
import tempfile
import time


def batch(root, series):
    """Seconds to create `series` directories of two small files each."""
    data = b"\0" * 4096
    os.mkdir(root)
    t = time.perf_counter()
    for i in range(series):
        d = os.path.join(root, f"s{i}")
        os.mkdir(d)
        for name in ("values.npy", "valid.npy"):
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default=".", help="where to create the batches (a directory on the file system to test)")
    ap.add_argument("--series", type=int, default=600)
    ap.add_argument("--batches", type=int, default=8)
    a = ap.parse_args()
    times = {"delete": [], "keep": []}
    with tempfile.TemporaryDirectory(dir=a.dir, prefix="stagebench-files-") as tmp:
        for mode in ("delete", "keep", "delete", "keep"):
            kept = []
            for b in range(a.batches):
                root = os.path.join(tmp, f"{mode}-{len(times[mode])}-{b}")
                times[mode].append(batch(root, a.series))
                if mode == "delete":
                    shutil.rmtree(root)
                else:
                    kept.append(root)
            print(f"{mode:6} " + " ".join(f"{t * 1e3:.0f}" for t in times[mode][-a.batches:]) + " ms")
            for root in kept:
                shutil.rmtree(root)
    inodes = a.series * 3
    for mode, ts in times.items():
        med = statistics.median(ts)
        print(f"{mode}: median {med * 1e3:.0f} ms a batch of {inodes} inodes "
              f"({med / inodes * 1e6:.0f} us an inode), range {min(ts) * 1e3:.0f}-{max(ts) * 1e3:.0f} ms")
    print(f"delete / keep: {statistics.median(times['delete']) / statistics.median(times['keep']):.2f}x")


if __name__ == "__main__":
    main()
