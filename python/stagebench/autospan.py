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

import importlib.abc
import inspect
import json
import os
import sys

from stagebench import _sink, _spans, _trampoline
from stagebench._hooks import after_import
from stagebench._presets import PRESETS
from stagebench._wrap import StageName, attempt

# The builtins this module calls, bound as they are at import: a program's
# `--span builtins:NAME` replaces one, and the helper must neither call
# that span (a recursion) nor be counted as the program (`TheHelpersOwnCalls`
# in python/tests).
from builtins import callable, dict, getattr, isinstance, list, str  # noqa: A004

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
    span too; a call that began before the wrap (the target called first
    of all) is timed by the hook until its ``return``. The hook removes
    itself once all are wrapped and none is in flight, or when the
    script's module code has returned."""
    main = sys.modules.get("__main__")
    if main is None:
        return
    g = main.__dict__
    pending = list(targets)
    inflight = {}
    previous = sys.getprofile()

    def done():
        return not pending and not inflight

    def hook(frame, event, arg):
        if frame.f_globals is not g:
            # A library's function called by the script itself (its caller
            # is the script's) after the script defined a target wraps it.
            # Calls deeper inside a library (an import's) define nothing in
            # the script, so they are passed over at once.
            caller = frame.f_back
            if pending and event == "call" and caller is not None and caller.f_globals is g:
                wrap_defined(None)
                if done():
                    sys.setprofile(previous)
            return
        if event == "return":
            opened = inflight.pop(frame, None)
            if opened is not None:
                t, opened_span, start = opened
                if opened_span is not None:
                    _spans.end(t, opened_span, start, _spans.now() - start)
            elif frame.f_code.co_name == "<module>":
                pending.clear()
            if done():
                sys.setprofile(previous)
            return
        if event not in ("call", "c_call"):
            return
        wrap_defined(frame if event == "call" else None)
        if done():
            sys.setprofile(previous)

    def wrap_defined(frame):
        """Wraps every pending target the script has defined by now; a
        call of one that began unwrapped (``frame``) is timed until it
        returns."""
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
                # This very call began unwrapped: timed until it returns.
                t = _spans.thread()
                inflight[frame] = (t, _spans.begin(t, str(name)), _spans.now())

    sys.setprofile(hook)


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
