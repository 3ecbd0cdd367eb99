"""A two-stage chain of our own for reading a resume call by call (no
external library): `python3 loading_chain.py STAGE SCRATCH`.

Each stage recomputes a fit (always, 0.15 s), then runs its search
(0.4 s), which, like autofit's `NonLinearSearch.fit`, is called again on a
resume and returns fast, loading the result it finds. Both are spans, so
the campaign reads them call by call: killed after stage two's recompute,
stage one's search is loaded, stage two's not yet done, and both
recomputes repeated.
"""

import os
import sys
import time

import stagebench

stage, scratch = sys.argv[1], sys.argv[2]
out = os.path.join(scratch, stage)
os.makedirs(out, exist_ok=True)


@stagebench.spanned("recompute")
def recompute():
    time.sleep(0.15)


@stagebench.spanned("search")
def search():
    result = os.path.join(out, "result.txt")
    if os.path.exists(result):
        with open(result) as f:
            return f.read()
    time.sleep(0.4)
    with open(result + ".tmp", "w") as f:
        f.write(stage + "\n")
    os.replace(result + ".tmp", result)
    return stage


recompute()
search()
