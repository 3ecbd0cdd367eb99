"""Spans recorded where they happen, and reported as aggregates.

Every span (``stagebench.span``, ``@spanned``, a ``--span`` target) is
opened with :func:`begin` and ended with :func:`end` (a wrapped function
does both inline, the same steps, for speed), which add it to its
thread's own tally: per name the calls, the inclusive and self
nanoseconds, min, max, the first call, and a log-bucket histogram (64
linear buckets per power of two above 127 ns, exact below: a bucket's
middle is within 1/128 of any duration in it). Nothing is written per
call. A thread writes its tally as one line ``{"agg": {...}}`` (what
changed since its last line) at most once a second, at once after a span
named in ``STAGEBENCH_SPANS_EAGER`` (a kill point; ``*``: after every
span, in a run that will be killed, so what ended before the kill is
known), and every thread's rest
is written at exit, also from a process that leaves through ``os._exit``
(a forked child of ``multiprocessing`` does). A generator's span still
open at exit (started, never finished) is counted, as open until then,
and so is a call still running at ``os._exit``.

Self time is a span's time minus the spans that ran inside it on its
thread. The main thread's top-level spans never overlap each other, so
their sum is the union of its time in spans; a process forked from
another, and any thread but the main one, runs beside it, and its spans
are reported as such (``"main": false``), never as part of the wall.

Each line holds at most :data:`MAX_SLICES` spans with their start, for a
trace, and how many more there were.

With ``STAGEBENCH_SPANS_CPU=1`` each call also takes its thread's CPU time
(``CLOCK_THREAD_CPUTIME_ID``, inclusive like its time; ``"cpu"`` in the
line, ``span:NAME_cpu_s`` in the figures): two clock reads more a call,
about 0.45 µs, so it is off by default, and with it on a wrapped call
takes the Python path (the compiled one does not read it). A generator's
span has none: its time interleaves with its consumer's.
"""

import os
import threading
import time
from itertools import compress

from stagebench import _own, _sink
from stagebench._layout import (
    BESIDE,
    CALLS,
    CHILDREN,
    FIRST_AT,
    FIRST_NS,
    HIST,
    LAYOUT,
    MAX,
    MIN,
    NAME,
    OPEN,
    PARENT,
    SELF,
    START,
    SUM,
    T_FLUSH_AT,
    T_INNER,
    T_MAIN,
    T_TALLIES,
    T_TOP_FIRST,
    T_TOP_LAST,
    T_TOP_NS,
    TALLY_SIZE,
)

# The builtins this module calls, bound as they are at import: a program's
# `--span builtins:NAME` replaces one, and the helper must neither call
# that span (a recursion) nor be counted as the program (`TheHelpersOwnCalls`
# in python/tests).
from builtins import (  # noqa: A004
    any,
    frozenset,
    getattr,
    hasattr,
    int,
    iter,
    len,
    list,
    next,
    open,
    range,
)

MAX_SLICES = 4096
FLUSH_NS = 1_000_000_000
BUCKETS = 64 * 64 + 64

# Where perf_counter reads the monotonic clock (Linux: both are
# CLOCK_MONOTONIC), it gives a span both its start on the machine's clock
# (the one the worker reads) and its length.
_ONE_CLOCK = (
    time.get_clock_info("perf_counter").implementation
    == time.get_clock_info("monotonic").implementation
)
now = time.perf_counter_ns if _ONE_CLOCK else time.monotonic_ns

# Each call's thread CPU time too (see above): a tally then has two more
# slots, past the layout's (the compiled path, which never sees it, keeps
# to the layout): the calls' CPU nanoseconds and the open call's start.
CPU = os.environ.get("STAGEBENCH_SPANS_CPU") == "1"
cpu_now = time.thread_time_ns
CPU_SUM, CPU_START = TALLY_SIZE, TALLY_SIZE + 1

# Span names whose every end is written at once (a kill point's).
EAGER = frozenset(n for n in os.environ.get("STAGEBENCH_SPANS_EAGER", "").split(",") if n)
if "*" in EAGER:

    class _Every(frozenset):
        def __contains__(self, name):
            return True

    EAGER = _Every(EAGER)

# A thread's state and a name's tally are lists, for speed, indexed by the
# names _layout gives (T_INNER, T_TALLIES, …; CALLS, SUM, …).
local = threading.local()
_all = []
_slices = []
_unsliced = [0]
_process = {"pid": os.getpid(), "forked": False}
_lock = threading.Lock()
_BIG = 1 << 63


def thread():
    """This thread's state, made on its first span."""
    try:
        return local.t
    except AttributeError:
        tid = threading.get_ident()
        main = tid == threading.main_thread().ident and not _process["forked"]
        t = local.t = [None, tid, {}, main, 0, None, None, now() + FLUSH_NS]
        with _lock:
            _all.append(t)
        return t


def tally(t, name):
    """Thread state ``t``'s tally of ``name``, made on first use."""
    s = t[T_TALLIES].get(name)
    if s is None:
        s = t[T_TALLIES][name] = [0, 0, 0, _BIG, 0, 0, 0, [0] * BUCKETS, 0, 0, 0, name, None, 0]
        if CPU:
            s += [0, 0]
    return s


def bucket(ns):
    """The histogram bucket of a duration in nanoseconds."""
    if ns < 128:
        return ns
    e = ns.bit_length()
    return (e << 6) + (ns >> (e - 7)) - 64


def begin(t, name):
    """Opens a span called ``name`` on thread state ``t``: its tally, or
    None when a span of that name is already open there (not timed again)."""
    s = tally(t, name)
    if s[OPEN]:
        return None
    s[OPEN] = 1
    s[CHILDREN] = 0
    s[PARENT] = t[T_INNER]
    t[T_INNER] = s
    if CPU:
        s[CPU_START] = cpu_now()
    s[START] = now()
    return s


def end(t, s, start, ns):
    """Ends the open span ``s`` that began at ``start`` and lasted ``ns``."""
    if t[T_INNER] is not s:
        # Closed out of order: the spans opened inside it and left open (a
        # loop left early) end with it.
        inner = t[T_INNER]
        while inner is not None and inner is not s:
            inner[OPEN] = 0
            inner = inner[PARENT]
        if inner is None:
            return
    s[OPEN] = 0
    if CPU:
        s[CPU_SUM] += cpu_now() - s[CPU_START]
    p = t[T_INNER] = s[PARENT]
    if p is not None:
        p[CHILDREN] += ns
    elif t[T_MAIN]:
        t[T_TOP_NS] += ns
        if t[T_TOP_FIRST] is None:
            t[T_TOP_FIRST] = start
        t[T_TOP_LAST] = start + ns
    count(t, s, start, ns, ns - s[CHILDREN])


def count(t, s, start, ns, own):
    """Adds one call of ``ns`` that began at ``start``, ``own`` of it its
    self time, to tally ``s`` of thread state ``t``."""
    s[CALLS] += 1
    s[SUM] += ns
    s[SELF] += own
    if ns > s[MAX]:
        s[MAX] = ns
    if ns < s[MIN]:
        s[MIN] = ns
    s[HIST][bucket(ns)] += 1
    if s[CALLS] == 1:
        s[FIRST_NS] = ns
        s[FIRST_AT] = start
    if _unsliced[0] or len(_slices) >= MAX_SLICES:
        _unsliced[0] += 1
    else:
        _slices.append((s[NAME], start, ns, 0 if t[T_MAIN] else 1))
    if start >= t[T_FLUSH_AT] or s[NAME] in EAGER:
        flush(t)


def cancel(t, s):
    """Closes the open span ``s`` without counting it (a loader's
    ``next()`` that ended the epoch returned no batch)."""
    if t[T_INNER] is s:
        s[OPEN] = 0
        t[T_INNER] = s[PARENT]


# Spans of started generators, coroutines and async generators not yet
# ended, by a key of their own: at exit each is counted, as open until then
# (a generator started and abandoned, still referenced at exit, is a call).
_running = {}
_keys = iter(range(1 << 62))


def running(name, start):
    """Notes a generator's span that began at ``start``; its key for
    :func:`stopped`."""
    key = next(_keys)
    _running[key] = (name, start)
    return key


def stopped(key, end):
    """Counts the span of ``key`` (:func:`running`) as ended at ``end``,
    unless the exit counted it already."""
    opened = _running.pop(key, None)
    if opened is not None:
        beside(opened[0], opened[1], end - opened[1])


def beside(name, start, ns):
    """A span whose time runs beside its own thread's other spans (a
    generator's, from its first ``next`` to its end, covers its consumer's
    work too): its calls and distribution count, but all of its time is
    reported as concurrent, never as a share of the wall."""
    t = thread()
    s = tally(t, name)
    s[BESIDE] += ns
    count(t, s, start, ns, ns)


_CLEAR_REFS = "/proc/self/clear_refs"


def _memory():
    """This process's RSS and peak RSS (``VmRSS``, ``VmHWM``) in bytes."""
    rss = hwm = 0
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmRSS:"):
                    rss = int(line.split()[1]) * 1024
                elif line.startswith(b"VmHWM:"):
                    hwm = int(line.split()[1]) * 1024
    except OSError:
        pass
    return rss, hwm


def _cpu():
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime, r.ru_stime


def stage_begin():
    """What a stage starts from: its start, the process's CPU, RSS and peak
    so far, and whether the peak could be reset for the stage."""
    cpu = _cpu()
    rss, hwm = _memory()
    try:
        with open(_CLEAR_REFS, "w") as f:
            f.write("5")
        reset = True
    except OSError:
        reset = False
    return (now(), cpu, rss, hwm, reset)


def stage_end(name, before):
    """Writes the line of a stage that began with ``before``."""
    end = now()
    start, cpu, rss, hwm, reset = before
    cpu_end = _cpu()
    rss_end, peak = _memory()
    _sink.append(
        {
            "stage": {
                "name": name,
                "pid": os.getpid(),
                "start": start,
                "ns": end - start,
                "cpu": [cpu[0], cpu[1], cpu_end[0], cpu_end[1]],
                "rss": [rss, rss_end],
                "hwm": hwm,
                "peak": peak,
                "reset": reset,
            }
        }
    )


def _line(t):
    """Thread state ``t``'s tally as one line (bytes), and resets it."""
    spans = []
    for name, s in list(t[T_TALLIES].items()):
        if not s[CALLS]:
            continue
        # Only the buckets between this interval's min and max can hold a
        # call, and compress finds them in C: a line per item costs
        # microseconds, not a walk of every bucket.
        h = s[HIST]
        lo, hi = bucket(s[MIN]), bucket(s[MAX]) + 1
        hist = []
        for k in compress(range(lo, hi), h[lo:hi]):
            hist.append("%d,%d" % (k, h[k]))
            h[k] = 0
        cpu = ""
        if CPU:
            cpu = ',"cpu":%d' % s[CPU_SUM]
            s[CPU_SUM] = 0
        spans.append(
            '"%s":{"n":%d,"sum":%d,"self":%d,"beside":%d,"min":%d,"max":%d,"first":%d,"at":%d,"h":[%s]%s}'
            % (name, s[CALLS], s[SUM], s[SELF], s[BESIDE], s[MIN], s[MAX], s[FIRST_NS], s[FIRST_AT], ",".join(hist), cpu)
        )
        s[CALLS] = s[SUM] = s[SELF] = s[BESIDE] = s[MAX] = 0
        s[MIN] = _BIG
    window = "[%d,%d,%d]" % (t[T_TOP_NS], t[T_TOP_FIRST] or 0, t[T_TOP_LAST] or 0)
    t[T_TOP_NS], t[T_TOP_FIRST], t[T_TOP_LAST] = 0, None, None
    with _lock:
        slices = _slices[:]
        del _slices[:]
        unsliced, _unsliced[0] = _unsliced[0], 0
    sl = ",".join('["%s",%d,%d,%d]' % x for x in slices)
    return (
        '{"agg":{"pid":%d,"forked":%s,"main":%s,"top":%s,"spans":{%s},"slices":[%s],"unsliced":%d}}\n'
        % (
            _process["pid"],
            "true" if _process["forked"] else "false",
            "true" if t[T_MAIN] else "false",
            window,
            ",".join(spans),
            sl,
            unsliced,
        )
    ).encode()


@_own.own
def flush(t):
    """Writes thread state ``t``'s tally (if anything changed). Never
    raises: measuring must not fail the program."""
    t[T_FLUSH_AT] = now() + FLUSH_NS
    if not t[T_TOP_NS] and not any(s[CALLS] for s in list(t[T_TALLIES].values())):
        return
    try:
        _sink.write(_line(t))
    except Exception:  # noqa: BLE001 - a measured program must not fail for us
        pass


def ended():
    """The exit has begun: every generator's span still open is counted,
    as open until now (before the exit's own work, which is not theirs)."""
    for key in list(_running):
        stopped(key, now())


@_own.own
def flush_all():
    """Every thread's rest (at exit), with every generator's span still
    open counted as open until now (:func:`ended`)."""
    ended()
    with _lock:
        states = list(_all)
    for t in states:
        flush(t)


@_own.own
def _left():
    """At ``os._exit``: the calls still open on every thread end now and
    are counted (a call that was running when the process left is a
    call), innermost first; then every thread's rest is written."""
    at = now()
    with _lock:
        states = list(_all)
    for t in states:
        while t[T_INNER] is not None:
            s = t[T_INNER]
            if s[START]:
                end(t, s, s[START], at - s[START])
            else:
                cancel(t, s)
    flush_all()


def _after_fork_in_child():
    """A forked child starts with nothing tallied, is not the main
    process, and writes its rest before ``os._exit``."""
    global _lock
    _lock = threading.Lock()  # a thread of the parent may have held it
    _process["pid"] = os.getpid()
    _process["forked"] = True
    mine = getattr(local, "t", None)
    del _all[:]
    if mine is not None:
        for s in mine[T_TALLIES].values():
            # A call open at the fork is the parent's: not one the child
            # was running when it left (``_left``).
            s[START] = 0
            s[CALLS] = s[SUM] = s[SELF] = s[BESIDE] = s[MAX] = 0
            s[MIN] = _BIG
            s[HIST][:] = [0] * BUCKETS
        mine[T_MAIN], mine[T_TOP_NS], mine[T_TOP_FIRST], mine[T_TOP_LAST] = False, 0, None, None
        _all.append(mine)
    del _slices[:]
    _unsliced[0] = 0
    _running.clear()
    _exit_writes()


def _exit_writes():
    """``os._exit`` skips the exit handlers: made to write every thread's
    rest first (``multiprocessing``'s forked children leave so, and so may
    a program), in any process that runs under stagebench."""
    if _sink.active() and not getattr(os._exit, "__stagebench__", False):
        original = os._exit

        def _exit(code):
            _left()
            original(code)

        _exit.__stagebench__ = True
        os._exit = _exit


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
_exit_writes()


def _compiled():
    """The compiled hot path of a wrapped call (_fast.c): this package's,
    where ``pip install`` built it, else an installed helper's, since the
    worker's copy of this package (pure Python, first on ``PYTHONPATH``)
    shadows the installed one; None where there is none, it has another
    tally layout, it reads another clock than ``now``, or
    ``STAGEBENCH_SPANS_PURE_PYTHON`` is set. The wrapper then does the same
    steps in Python."""
    if os.environ.get("STAGEBENCH_SPANS_PURE_PYTHON") or CPU:
        return None
    if time.get_clock_info("perf_counter").implementation != "clock_gettime(CLOCK_MONOTONIC)":
        return None
    try:
        from . import _fast

        return _fast if getattr(_fast, "LAYOUT", None) == LAYOUT else None
    except ImportError:
        pass
    import importlib.machinery
    import importlib.util
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    for entry in sys.path:
        package = os.path.join(entry or ".", "stagebench")
        if os.path.abspath(package) == here:
            continue
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(package, "_fast" + suffix)
            if not os.path.isfile(path):
                continue
            try:
                spec = importlib.util.spec_from_file_location(__package__ + "._fast", path)
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
            except Exception:
                continue
            if getattr(module, "LAYOUT", None) == LAYOUT:
                return module
    return None


fast = _compiled()
if fast is not None:
    fast.setup(local, thread, tally, end, flush, _slices, _unsliced, MAX_SLICES)

import atexit  # noqa: E402


atexit.register(flush_all)
