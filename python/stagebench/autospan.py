"""Spans without editing code: wrap named functions as spans when their
module is imported (``--span MODULE:QUALNAME[=NAME]``).

The worker sets ``STAGEBENCH_SPAN_TARGETS`` to a JSON list of
``{"module", "qualname", "name"}`` or ``{"preset"}`` objects and puts a directory holding this package and a
``sitecustomize`` on ``PYTHONPATH``; that ``sitecustomize`` calls
:func:`install`. A target whose module is already imported is wrapped at
once; any other when its module finishes importing (a finder first on
``sys.meta_path`` wraps the module's loader); one in ``__main__`` (the
script being run) as soon as the script has defined it. A function, a
method, a classmethod, a staticmethod, a property's getter and a
``functools.cached_property`` are wrapped in place, a generator, coroutine
or async generator function as one of its own kind. Each wrap writes one
line ``{"wrapped": "MODULE:QUALNAME", "span": NAME}`` to the spans file, so
the worker can name the targets that never matched (``spans_not_found``)
and those wrapped but never called: a typo must never look like zero time.
What cannot be wrapped without changing the program (a class, an
attribute of an immutable built-in type such as ``numpy.ndarray.sum`` or
``dict.get``) is left as it is and reported, ``{"refused": ..., "why":
...}``, each target on its own.

A call of a wrapped function is a span called NAME. A call made while a
span of the same NAME is open on the same thread (recursion, or a wrapped
method calling its wrapped override) is not timed again: nesting of
different names is recorded as nesting, and no second is counted twice.
"""

import gc
import importlib.abc
import inspect
import json
import os
import sys

from stagebench import _own, _sink, _spans, _trampoline
from stagebench._hooks import after_import
from stagebench._presets import PRESETS
from stagebench._wrap import StageName, attempt

# The builtins this module calls, bound as they are at import: a program's
# `--span builtins:NAME` replaces one, and the helper must neither call
# that span (a recursion) nor be counted as the program (`TheHelpersOwnCalls`
# in python/tests).
from builtins import callable, dict, getattr, isinstance, len, list, str  # noqa: A004

_TARGETS = "STAGEBENCH_SPAN_TARGETS"


class _Finder(importlib.abc.MetaPathFinder):
    """Wraps a target module's loader so its targets are wrapped as soon as
    the module has run."""

    def __init__(self, by_module):
        self.by_module = by_module

    def find_spec(self, fullname, path, target=None):
        targets = self.by_module.get(fullname)
        if not targets:
            return None

        def wrap(module):
            for qualname, name, spelled in targets:
                attempt(module, qualname, name, spelled)

        return after_import(self, fullname, path, target, wrap)


def _watch_main(targets):
    """Targets in the script being run (``__main__``), which exist only
    once its code has defined them: a profile hook on the main thread looks
    for them at every call the script makes (of its own functions, a
    library's, a builtin) and wraps each as soon as it exists. A function
    is wrapped in place, so a reference a line loaded before (``f(g(x))``
    loads f, then calls g; ``serve(prepare)``; ``map(f, ...)``) calls the
    span too. A call that began before the wrap (the target called first of
    all) is timed by the hook from the moment every target is wrapped (the
    wrapping is never inside it) until its ``return``; a generator's (or a
    coroutine's) made before the wrap, from its first resume until it ends,
    as any generator's span is, not at its first ``yield``. The hook
    removes itself once all are wrapped and none is in flight, or when the
    script's module code has returned and none is in flight."""
    main = sys.modules.get("__main__")
    if main is None:
        return
    from opcode import opmap

    suspends = opmap["YIELD_VALUE"]
    resumable = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR
    g = main.__dict__
    pending = list(targets)
    # By frame: (thread state, open tally, start) for a call; (None, key,
    # thrown) for a generator's frame, `thrown` when its last resume threw
    # an exception in at its yield; (None, None, name) for a generator
    # made before its function was wrapped, not yet started.
    inflight = {}
    previous = sys.getprofile()
    # What the hook calls, bound now: it may still run at interpreter
    # shutdown (a generator closed then), when module globals are gone.
    setprofile, now, running, stopped = sys.setprofile, _spans.now, _spans.running, _spans.stopped
    begin, end, thread = _spans.begin, _spans.end, _spans.thread

    def done():
        return not pending and not inflight

    def hook(frame, event, arg):
        try:
            if frame.f_globals is not g:
                # A library's function called by the script itself (its caller
                # is the script's) after the script defined a target wraps it.
                # Calls deeper inside a library (an import's) define nothing in
                # the script, so they are passed over at once.
                caller = frame.f_back
                if pending and event == "call" and caller is not None and caller.f_globals is g:
                    wrap_defined(None)
                    if done():
                        setprofile(previous)
                return
            opened = inflight.get(frame)
            if event == "return":
                if opened is not None:
                    if opened[0] is None:
                        # A generator's frame returns at each yield, and at its
                        # end; an exception thrown in at a yield that leaves
                        # it (close()) ends it there too.
                        code, at = frame.f_code.co_code, frame.f_lasti
                        if 0 <= at < len(code) and code[at] == suspends and not (opened[2] and arg is None):
                            return
                        stopped(opened[1], now())
                    else:
                        t, opened_span, start = opened
                        if opened_span is not None:
                            end(t, opened_span, start, now() - start)
                    del inflight[frame]
                elif frame.f_code.co_name == "<module>":
                    # The script is over: what it made and never started is
                    # no longer looked for.
                    pending.clear()
                    for f, (t, key, _) in list(inflight.items()):
                        if t is None and key is None:
                            del inflight[f]
                if done():
                    setprofile(previous)
                return
            if event not in ("call", "c_call"):
                return
            if opened is not None:
                if event == "c_call":
                    # A C function called by a call in flight (the target
                    # called first of all calls `time.perf_counter`): its
                    # frame is the caller's, and nothing resumed.
                    return
                if opened[1] is None:
                    # Made before the wrap, started now.
                    inflight[frame] = (None, running(str(opened[2]), now()), False)
                    return
                # A generator in flight resumed; at its yield's own instruction,
                # an exception was thrown in.
                code, at = frame.f_code.co_code, frame.f_lasti
                inflight[frame] = (None, opened[1], 0 <= at < len(code) and code[at] == suspends)
                return
            if not pending:
                return
            began = wrap_defined(frame if event == "call" else None)
            if began is not None:
                if frame.f_code.co_flags & resumable:
                    inflight[frame] = (None, running(str(began), now()), False)
                else:
                    t = thread()
                    inflight[frame] = (t, begin(t, str(began)), now())
            if done():
                setprofile(previous)
        except Exception:  # noqa: BLE001 - never raise into the program we measure
            pass

    @_own.own
    def wrap_defined(frame):
        """Wraps every pending target the script has defined by now; the
        span name of the target whose call ``frame`` is, when it began
        unwrapped (the caller times it from now), else None."""
        began = None
        made = {}
        for item in list(pending):
            qualname, name, spelled = item
            first = qualname.split(".", 1)[0]
            if first not in g:
                continue
            target = g
            for part in qualname.split("."):
                target = target.get(part) if isinstance(target, dict) else getattr(target, part, None)
                if target is None:
                    break
            if target is None:
                continue
            pending.remove(item)
            code = getattr(inspect.unwrap(target), "__code__", None)
            target = None
            attempt(main, qualname, name, spelled)
            if frame is not None and code is not None and frame.f_code is code:
                began = name
            elif code is not None and code.co_flags & resumable:
                made[code] = name
        if made:
            # A generator (or coroutine) the script made before the wrap
            # (`g = gen()` then `next(g)`) runs unwrapped: found once, by
            # what refers to its code, and timed from its first resume.
            for o in gc.get_referrers(*made):
                f = getattr(o, "gi_frame", None) or getattr(o, "cr_frame", None)
                if f is not None and f is not frame and f.f_code in made and not_started(o):
                    inflight[f] = (None, None, made[f.f_code])
        return began

    def not_started(o):
        if inspect.isgenerator(o):
            return inspect.getgeneratorstate(o) == inspect.GEN_CREATED
        return inspect.iscoroutine(o) and inspect.getcoroutinestate(o) == inspect.CORO_CREATED

    sys.setprofile(hook)


def _quiet_until_main():
    """What runs between the helper's start and the script's first line
    (the rest of ``sitecustomize``, ``site``'s look for a
    ``usercustomize``, ``runpy``) is the interpreter starting, not the
    program: the main thread stays marked as the helper's own (``_own``)
    until the script's first event, which a profile hook sees, chained
    before any other (the watch of ``__main__`` targets)."""
    main = sys.modules.get("__main__")
    if main is None:
        return
    g = main.__dict__
    inner = [sys.getprofile()]

    def start(frame, event, arg):
        if frame.f_globals is g:
            _own.state.busy = False
            sys.setprofile(inner[0])
        elif sys.getprofile() is not start:
            inner[0] = sys.getprofile()
            sys.setprofile(start)
        if inner[0] is not None:
            inner[0](frame, event, arg)

    _own.state.busy = True
    sys.setprofile(start)


@_own.own
def install():
    """Wraps every target named in ``STAGEBENCH_SPAN_TARGETS``, each on its
    own: a target that cannot be wrapped is reported (``{"refused": ...}``)
    and loses no other."""
    raw = os.environ.get(_TARGETS)
    if not raw:
        return
    by_module = {}
    for t in json.loads(raw):
        if "preset" in t:
            for module, qualname, name in PRESETS.get(t["preset"], ()):
                spelled = "preset:%s" % t["preset"]
                by_module.setdefault(module, []).append((qualname, name, spelled))
        else:
            spelled = "%s:%s" % (t["module"], t["qualname"])
            name = StageName(t["name"]) if t.get("stage") else t["name"]
            by_module.setdefault(t["module"], []).append((t["qualname"], name, spelled))
    # The recursion limit raised for the trampolines' frames, and sys's
    # limit functions scaling it, before the program's first line: raised
    # at the first wrap instead, a call of sys.getrecursionlimit already
    # under way (the watch wraps at a call) read the raised limit.
    _trampoline.deepen()
    # What a first call would otherwise set up inside the program's own
    # time: the spans file, this thread's state and each name's tally.
    _sink.open_now()
    t = _spans.thread()
    for targets in by_module.values():
        for _, name, _ in targets:
            if not callable(name):
                _spans.tally(t, str(name))
    main = by_module.pop("__main__", None)
    if main:
        _watch_main(main)
    for module in list(by_module):
        if module in sys.modules:
            for qualname, name, spelled in by_module.pop(module):
                attempt(sys.modules[module], qualname, name, spelled)
    if by_module:
        sys.meta_path.insert(0, _Finder(by_module))


def start():
    """What ``sitecustomize`` calls: :func:`install`, then the interpreter's
    start-up marked as the helper's until the script's first line."""
    install()
    _quiet_until_main()
