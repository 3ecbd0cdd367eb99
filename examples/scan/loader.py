#!/usr/bin/env python3
"""A plain Python data loader with a knob: how many worker processes decode.

  loader.py --workers N [--items K]

Decodes K synthetic items (each about 8 ms of CPU: hashing a 2 MiB buffer,
as a decoder would touch every byte) in the main process (N = 0, like
PyTorch's num_workers=0) or in a pool of N worker processes. Each worker
holds a 24 MiB prefetch buffer and its own copy of the dataset's index, as
real loader workers do, so the tree's memory grows with N while the wall
stops shrinking at the machine's cores.

Standard library only. Scan it with stagebench:

  coordinator --mode trials --trials 8 --command 'python3 examples/scan/loader.py --workers {workers}' \\
      --param workers=0,1,2,4,8
"""
import argparse
import hashlib
import multiprocessing as mp

PREFETCH_MIB = 24
ITEM_BYTES = 2 << 20

_buffer = None


def start_worker():
    global _buffer
    _buffer = bytearray(PREFETCH_MIB << 20)
    for i in range(0, len(_buffer), 4096):
        _buffer[i] = 1


def decode(i):
    data = (i.to_bytes(8, "little") * (ITEM_BYTES // 8))
    digest = hashlib.sha256(data).digest()
    for _ in range(3):
        digest = hashlib.sha256(data + digest).digest()
    return digest[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, required=True)
    ap.add_argument("--items", type=int, default=96)
    args = ap.parse_args()
    if args.workers < 0:
        ap.error("--workers must be 0 or more")
    if args.workers == 0:
        start_worker()
        total = sum(decode(i) for i in range(args.items))
    else:
        ctx = mp.get_context("fork")
        with ctx.Pool(args.workers, initializer=start_worker) as pool:
            total = sum(pool.imap_unordered(decode, range(args.items), chunksize=4))
    print(f"decoded {args.items} items with {args.workers} worker(s): checksum {total}")


if __name__ == "__main__":
    main()
