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

from stagebench import _spans
from stagebench._hooks import after_import
from stagebench._presets import PRESETS
from stagebench import _wrap
from stagebench._wrap import StageName, attempt

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


def _held(namespace, name):
    """References to ``namespace[name]``, counted as :func:`_watch_main`
    counts them (a function the namespace alone holds gives the baseline)."""
    value = namespace.get(name)
    return sys.getrefcount(value)


def _alone():
    """:func:`_held` of a function only its namespace holds: the baseline."""
    namespace = {}
    exec("def f():\n    pass\n", namespace)
    return _held(namespace, "f")


def _watch_main(targets):
    """Targets in the script being run (``__main__``), which exist only
    once its code has defined them: a profile hook on the main thread looks
    for them at every call the script makes (of its own functions, a
    library's, a builtin), wraps each as soon as it exists, so before a
    later line loads it, times by its own ``return`` a call that began
    before (the target called first of all) or went through a reference
    loaded before the wrap, and removes itself once all are wrapped or the
    script's module code has returned."""
    main = sys.modules.get("__main__")
    if main is None:
        return
    g = main.__dict__
    pending = list(targets)
    inflight = {}
    # Original code objects a line may have loaded before they were wrapped
    # (`f(g(x))` loads f, then calls g): their next direct call is timed.
    stale = {}
    previous = sys.getprofile()
    alone = _alone()

    def done():
        return not pending and not inflight and not stale

    def hook(frame, event, arg):
        if frame.f_globals is not g:
            # A library's function called by the script itself (its caller
            # is the script's) after the script defined a target wraps it:
            # before a later line can load it, as `f(g(x))` loads f before
            # calling g. Calls deeper inside a library (an import's) define
            # nothing in the script, so they are passed over at once.
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
                stale.clear()
            if done():
                sys.setprofile(previous)
            return
        if event not in ("call", "c_call"):
            return
        if event == "call" and frame.f_code in stale:
            name = stale.pop(frame.f_code)
            caller = frame.f_back
            through_wrapper = caller is not None and caller.f_code.co_filename == _wrap.__file__
            if not through_wrapper:
                t = _spans.thread()
                inflight[frame] = (t, _spans.begin(t, name), _spans.now())
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
            # More references than the script's own name: a line may hold it.
            target = None
            loaded = "." not in qualname and _held(g, first) > alone
            attempt(main, qualname, name, spelled)
            if frame is not None and code is not None and frame.f_code is code:
                # This very call began unwrapped: timed until it returns.
                t = _spans.thread()
                inflight[frame] = (t, _spans.begin(t, name), _spans.now())
            elif loaded and code is not None:
                stale[code] = name

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
    main = by_module.pop("__main__", None)
    if main:
        _watch_main(main)
    for module in list(by_module):
        if module in sys.modules:
            for qualname, name, spelled in by_module.pop(module):
                attempt(sys.modules[module], qualname, name, spelled)
    if by_module:
        sys.meta_path.insert(0, _Finder(by_module))
