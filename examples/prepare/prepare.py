#!/usr/bin/env python3
"""A team's own per-item preparation, served to stagebench: the built-in
recipe's five frame features (docs/feature-contract.md), vectorised with
numpy and pyarrow, one training series per item, written as .npy.

  prepare.py --list DATA          print the items file: one training series
                                  per line, with its sample count as weight
  prepare.py --data DATA          serve items (started by stagebench:
                                  coordinator --mode cold-prep --prepare ...)
      [--threads N]               Arrow's CPU threads for decoding (default:
                                  Arrow's own, one per core); a knob to scan
                                  with --param threads=1,2,4

Each item writes OUT/ID/values.npy (float32 [frames, 5]) and OUT/ID/valid.npy
(bool [frames]), the layout of the built-in cache, after checking the
source's SHA-256 against frozen.json. Spans name where an item's time went:
read, hash, decode, extract, write (the built-in preparation's components).

Needs numpy and pyarrow (pip install numpy pyarrow) and the stagebench helper
(pip install ./python).
"""
import argparse
import hashlib
import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import stagebench

WINDOW, STRIDE = 12, 6


def frames(n):
    return max(0, (n - WINDOW) // STRIDE + 1)


def features(seconds, enmo, anglez):
    """The contract's five features per frame, in float64, stored as
    float32; frames whose 24 values are all finite are valid."""
    n = frames(len(seconds))
    windows = np.arange(n)[:, None] * STRIDE + np.arange(WINDOW)[None, :]
    tod = np.cos(2.0 * np.pi * seconds / 86400.0)[windows]
    e, a = enmo[windows], anglez[windows]
    values = np.stack(
        [tod.mean(1), e.mean(1), e.std(1), a.mean(1), a.std(1)], axis=1
    ).astype(np.float32)
    valid = np.isfinite(e).all(1) & np.isfinite(a).all(1)
    return values, valid


class Series:
    """The frozen dataset's training series, by id."""

    def __init__(self, data):
        self.data = data
        with open(os.path.join(data, "frozen.json")) as f:
            frozen = json.load(f)
        self.train = [s for s in frozen["series"] if s["partition"] == "train"]
        self.by_id = {s["id"]: s for s in self.train}

    def prepare(self, item, out):
        s = self.by_id[item]
        with stagebench.span("read"):
            with open(os.path.join(self.data, s["file"]), "rb") as f:
                raw = f.read()
        with stagebench.span("hash"):
            if hashlib.sha256(raw).hexdigest() != s["sha256"]:
                raise ValueError("the source file does not match frozen.json")
        with stagebench.span("decode"):
            t = pq.read_table(pa.BufferReader(raw), columns=["timestamp", "anglez", "enmo"])
            stamp = t.column("timestamp")
            hms = [
                pc.cast(pc.utf8_slice_codeunits(stamp, i, i + 2), pa.int64()).to_numpy()
                for i in (11, 14, 17)
            ]
            seconds = (hms[0] * 3600 + hms[1] * 60 + hms[2]).astype(np.float64)
            # Nulls become NaN: treated as non-finite, as the contract says.
            enmo = t.column("enmo").to_numpy(zero_copy_only=False).astype(np.float64)
            anglez = t.column("anglez").to_numpy(zero_copy_only=False).astype(np.float64)
        with stagebench.span("extract"):
            values, valid = features(seconds, enmo, anglez)
        with stagebench.span("write"):
            d = os.path.join(out, item)
            os.makedirs(d, exist_ok=True)
            np.save(os.path.join(d, "values.npy"), values)
            np.save(os.path.join(d, "valid.npy"), valid)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--list", metavar="DATA", help="print the items file of a frozen dataset")
    g.add_argument("--data", metavar="DATA", help="serve items from this frozen dataset")
    p.add_argument("--threads", type=int, metavar="N",
                   help="Arrow's CPU threads for decoding (default: one per core)")
    args = p.parse_args()
    if args.threads is not None:
        if args.threads < 1:
            p.error("--threads must be 1 or more")
        pa.set_cpu_count(args.threads)
    if args.list:
        for s in Series(args.list).train:
            print("%s\t%d" % (s["id"], s["samples"]))
        return
    series = Series(args.data)
    stagebench.serve(series.prepare)


if __name__ == "__main__":
    main()
