"""Spans recorded where they happen, and reported as aggregates.

Every span (``stagebench.span``, ``@spanned``, a ``--span`` target) ends in
:func:`close`, which adds it to its thread's own tally: per name the
calls, the inclusive and self nanoseconds, min, max, the first call, and a
log-bucket histogram (64 linear buckets per power of two above 127 ns,
exact below: a bucket's middle is within 1/128 of any duration in it).
Nothing is written per call. A thread writes its tally as one line
``{"agg": {...}}`` (what changed since its last line) at most once a second,
at once after a span named in ``STAGEBENCH_SPANS_EAGER`` (a kill point),
and every thread's rest is written at exit, also from a forked child that
leaves through ``os._exit`` (``multiprocessing`` does).

Self time is a span's time minus the spans that ran inside it on its
thread. The main thread's top-level spans never overlap each other, so
their sum is the union of its time in spans; a process forked from
another, and any thread but the main one, runs beside it, and its spans
are reported as such (``"main": false``), never as part of the wall.

Each line holds at most :data:`MAX_SLICES` spans with their start, for a
trace, and how many more there were.
"""

import os
import threading
import time

MAX_SLICES = 4096
FLUSH_NS = 1_000_000_000

_ENV = "STAGEBENCH_SPANS"

# Where perf_counter reads the monotonic clock (Linux: both are
# CLOCK_MONOTONIC), it gives a span both its start on the machine's clock
# (the one the worker reads) and its length.
_ONE_CLOCK = (
    time.get_clock_info("perf_counter").implementation
    == time.get_clock_info("monotonic").implementation
)
now = time.perf_counter_ns if _ONE_CLOCK else time.monotonic_ns
ident = threading.get_ident

# Span names whose every end is written at once (a kill point's).
EAGER = frozenset(n for n in os.environ.get("STAGEBENCH_SPANS_EAGER", "").split(",") if n)

# A thread's state, a list for speed:
# [0] stack of open frames, each [children's ns, name]; [1] names open;
# [2] tally {name: [calls, sum, self, min, max, first, first_at, {bucket: n},
#     ns of it beside the thread's own spans]};
# [3] whether it is the main thread of a process not forked from another;
# [4] top-level ns, [5] first top-level start, [6] last top-level end;
# [7] when it next writes its tally.
_threads = {}
_slices = []
_unsliced = [0]
_process = {"pid": os.getpid(), "forked": False}
_lock = threading.Lock()


def _main_ident():
    return threading.main_thread().ident


def thread():
    """This thread's state, made on its first span."""
    tid = ident()
    t = _threads.get(tid)
    if t is None:
        main = tid == _main_ident() and not _process["forked"]
        t = _threads[tid] = [[], set(), {}, main, 0, None, None, now() + FLUSH_NS]
    return t


def bucket(ns):
    """The histogram bucket of a duration in nanoseconds."""
    if ns < 128:
        return ns
    e = ns.bit_length()
    return (e << 6) + (ns >> (e - 7)) - 64


def open_(t, name):
    """Opens a span called ``name`` on thread state ``t``: its frame, or
    None when a span of that name is already open there (not timed again)."""
    names = t[1]
    if name in names:
        return None
    names.add(name)
    frame = [0, name]
    t[0].append(frame)
    return frame


def close(t, name, frame, start, ns):
    """Ends the span ``frame`` of ``name`` that began at ``start`` and
    lasted ``ns``, adding it to the thread's tally."""
    stack = t[0]
    if stack and stack[-1] is frame:
        stack.pop()
    elif frame in stack:
        # Closed out of order: the frames above it were left open (a loop
        # left early) and never will close; they end with it.
        at = stack.index(frame)
        for left in stack[at + 1 :]:
            t[1].discard(left[1])
        del stack[at:]
    else:
        frame = [0, name]
    t[1].discard(name)
    if stack:
        stack[-1][0] += ns
    elif t[3]:
        t[4] += ns
        if t[5] is None:
            t[5] = start
        t[6] = start + ns
    s = t[2].get(name)
    if s is None:
        s = t[2][name] = [0, 0, 0, ns, ns, ns, start, {}, 0]
    s[0] += 1
    s[1] += ns
    s[2] += ns - frame[0]
    if ns < s[3]:
        s[3] = ns
    elif ns > s[4]:
        s[4] = ns
    if ns < 128:
        k = ns
    else:
        e = ns.bit_length()
        k = (e << 6) + (ns >> (e - 7)) - 64
    h = s[7]
    h[k] = h.get(k, 0) + 1
    if len(_slices) < MAX_SLICES:
        _slices.append((name, start, ns))
    else:
        _unsliced[0] += 1
    if start >= t[7] or name in EAGER:
        flush(t)


def beside(name, start, ns):
    """A span whose time runs beside its own thread's other spans (a
    generator's, from its first ``next`` to its end, covers its consumer's
    work too): its calls and distribution count, but all of its time is
    reported as concurrent, never as a share of the wall."""
    t = thread()
    s = t[2].get(name)
    if s is None:
        s = t[2][name] = [0, 0, 0, ns, ns, ns, start, {}, 0]
    s[0] += 1
    s[1] += ns
    s[2] += ns
    s[8] += ns
    if ns < s[3]:
        s[3] = ns
    elif ns > s[4]:
        s[4] = ns
    k = bucket(ns)
    s[7][k] = s[7].get(k, 0) + 1
    if len(_slices) < MAX_SLICES:
        _slices.append((name, start, ns))
    else:
        _unsliced[0] += 1
    if start >= t[7] or name in EAGER:
        flush(t)


def _line(t):
    """Thread state ``t``'s tally as one line (bytes), and resets it."""
    spans = {}
    for name, s in t[2].items():
        hist = []
        for k, n in s[7].items():
            hist.append(k)
            hist.append(n)
        spans[name] = '{"n":%d,"sum":%d,"self":%d,"beside":%d,"min":%d,"max":%d,"first":%d,"at":%d,"h":[%s]}' % (
            s[0], s[1], s[2], s[8], s[3], s[4], s[5], s[6], ",".join(map(str, hist)),
        )
    t[2] = {}
    body = ",".join('"%s":%s' % (name, v) for name, v in spans.items())
    top = t[4]
    window = "[%d,%d,%d]" % (top, t[5] or 0, t[6] or 0)
    t[4], t[5], t[6] = 0, None, None
    with _lock:
        slices = _slices[:]
        del _slices[:]
        unsliced, _unsliced[0] = _unsliced[0], 0
    sl = ",".join('["%s",%d,%d]' % x for x in slices)
    return (
        '{"agg":{"pid":%d,"forked":%s,"main":%s,"top":%s,"spans":{%s},"slices":[%s],"unsliced":%d}}\n'
        % (
            _process["pid"],
            "true" if _process["forked"] else "false",
            "true" if t[3] else "false",
            window,
            body,
            sl,
            unsliced,
        )
    ).encode()


def flush(t):
    """Writes thread state ``t``'s tally (if anything changed). Never
    raises: measuring must not fail the program."""
    t[7] = now() + FLUSH_NS
    if not t[2] and not t[4]:
        return
    try:
        line = _line(t)
        from stagebench import _write

        _write(line)
    except Exception:  # noqa: BLE001 - a measured program must not fail for us
        pass


def flush_all():
    """Every thread's rest (at exit)."""
    for t in list(_threads.values()):
        flush(t)


def _after_fork_in_child():
    """A forked child starts with nothing tallied, is not the main
    process, and writes its rest before ``os._exit``."""
    _process["pid"] = os.getpid()
    _process["forked"] = True
    tid = ident()
    mine = _threads.get(tid)
    _threads.clear()
    if mine is not None:
        mine[2], mine[3], mine[4], mine[5], mine[6] = {}, False, 0, None, None
        _threads[tid] = mine
    del _slices[:]
    _unsliced[0] = 0
    if os.environ.get(_ENV) and not getattr(os._exit, "__stagebench__", False):
        original = os._exit

        def _exit(code):
            flush_all()
            original(code)

        _exit.__stagebench__ = True
        os._exit = _exit


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)

import atexit  # noqa: E402

atexit.register(flush_all)
