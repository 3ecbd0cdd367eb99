"""The spans ground truth (issue 41): `run` 2.00 s contains `outer` 1.00 s,
which calls `inner` twice at 0.40 s; two threads run `worker` 0.50 s at
once; 0.24 s is outside any span (plus the interpreter's own start).

With an argument FILE, `dist` instead: a function whose calls sleep from a
known list (the first 30 ms, then 98 of 2 ms and one of 50 ms) and whose
own perf_counter timings are written to FILE, one per line, for the test to
hold the report's first, median, p95 and max to.

`many N`: N calls of a spanned function that does nothing."""

import sys
import threading
import time

import stagebench


def ground_truth():
    def inner():
        with stagebench.span("inner"):
            time.sleep(0.4)

    def outer():
        with stagebench.span("outer"):
            inner()
            inner()
            time.sleep(0.2)

    def worker():
        with stagebench.span("worker"):
            time.sleep(0.5)

    time.sleep(0.24)
    with stagebench.span("run"):
        outer()
        threads = [threading.Thread(target=worker) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        time.sleep(0.5)


def dist(path):
    @stagebench.spanned("call")
    def call(seconds):
        time.sleep(seconds)

    own = []
    for seconds in [0.030] + [0.002] * 98 + [0.050]:
        start = time.perf_counter()
        call(seconds)
        own.append(time.perf_counter() - start)
    with open(path, "w") as f:
        f.write("\n".join(repr(x) for x in own) + "\n")


def many(n):
    @stagebench.spanned("tick")
    def tick():
        pass

    for _ in range(n):
        tick()


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "truth"
    if what == "truth":
        ground_truth()
    elif what == "dist":
        dist(sys.argv[2])
    elif what == "many":
        many(int(sys.argv[2]))
