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

import functools
import importlib.abc
import inspect
import json
import os
import sys
import threading

from stagebench import _spans

_TARGETS = "STAGEBENCH_SPAN_TARGETS"


class StageName(str):
    """The span name of a stage target (``MODULE:QUALNAME=NAME:stage``):
    :func:`timed` makes its function a stage too (:func:`_staged`)."""


def _staged(func, name):
    """``func`` as a span ``name`` that is also a stage of the process: at
    its start and end the process's CPU (``getrusage``) and memory (RSS and
    peak, ``/proc/self/status``) are read, and the peak is reset at its
    start (``/proc/self/clear_refs``) where the kernel allows; one line
    ``{"stage": NAME, ...}`` says what they were. Only the main thread of
    a process not forked from another makes stages; elsewhere it is a
    span."""
    inner = timed(func, str(name))

    @functools.wraps(func)
    def stage(*args, **kwargs):
        t = _spans.thread()
        if not t[3] or t[0] is not None and t[0][11] == str(name):
            return inner(*args, **kwargs)
        before = _spans.stage_begin()
        try:
            return inner(*args, **kwargs)
        finally:
            _spans.stage_end(str(name), before)

    stage.__stagebench_span__ = True
    return stage


def _compiled(func, name, fast):
    """``timed`` for a plain function, its bookkeeping in C (_fast.c): the
    same steps, on the same tallies. Still a Python function, so the
    program sees what it sees of any wrapper (``functools.wraps``)."""
    enter, leave = fast.enter, fast.leave

    @functools.wraps(func)
    def span(*args, **kwargs):
        s = enter(name)
        if s is None:
            return func(*args, **kwargs)
        try:
            return func(*args, **kwargs)
        finally:
            leave(s)

    span.__stagebench_span__ = True
    return span


def timed(func, name):
    """``func`` made a span called ``name``, of the same kind: a generator
    function stays one (its span runs from the first ``next`` to its end),
    a coroutine function too (until its result), and so does an async
    generator function. A call made inside an open span of the same name
    on the same thread (recursion) is not timed again."""
    if isinstance(name, StageName) and not (
        inspect.isasyncgenfunction(func) or inspect.iscoroutinefunction(func) or inspect.isgeneratorfunction(func)
    ):
        return _staged(func, name)
    name = str(name)
    if inspect.isasyncgenfunction(func):
        return _timed_asyncgen(func, name)
    if inspect.iscoroutinefunction(func):
        return _timed_coroutine(func, name)
    if inspect.isgeneratorfunction(func):
        return _timed_generator(func, name)
    local, new, now, BIG = _spans.local, _spans.thread, _spans.now, _spans._BIG
    bucket_count = _spans.BUCKETS
    slices, unsliced, MAX = _spans._slices, _spans._unsliced, _spans.MAX_SLICES
    flush, eager = _spans.flush, name in _spans.EAGER
    if _spans.fast is not None and not eager:
        return _compiled(func, name, _spans.fast)

    # _spans.begin and _spans.end, inline: a wrapped call's cost is mostly
    # these steps, and two calls more would add a fifth to it.
    @functools.wraps(func)
    def span(*args, **kwargs):
        try:
            t = local.t
        except AttributeError:
            t = new()
        s = t[2].get(name)
        if s is None:
            s = t[2][name] = [0, 0, 0, BIG, 0, 0, 0, [0] * bucket_count, 0, 0, 0, name, None, 0]
        elif s[9]:
            return func(*args, **kwargs)
        s[9] = 1
        s[10] = 0
        s[12] = t[0]
        t[0] = s
        start = now()
        try:
            return func(*args, **kwargs)
        finally:
            ns = now() - start
            if t[0] is not s:
                _spans.end(t, s, start, ns)
            else:
                s[9] = 0
                p = t[0] = s[12]
                if p is not None:
                    p[10] += ns
                elif t[3]:
                    t[4] += ns
                    if t[5] is None:
                        t[5] = start
                    t[6] = start + ns
                s[0] += 1
                s[1] += ns
                s[2] += ns - s[10]
                if ns > s[4]:
                    s[4] = ns
                if ns < s[3]:
                    s[3] = ns
                if ns < 128:
                    s[7][ns] += 1
                else:
                    e = ns.bit_length()
                    s[7][(e << 6) + (ns >> (e - 7)) - 64] += 1
                if s[0] == 1:
                    s[5] = ns
                    s[6] = start
                if unsliced[0] or len(slices) >= MAX:
                    unsliced[0] += 1
                else:
                    slices.append((name, start, ns))
                if eager or start >= t[7]:
                    flush(t)

    span.__stagebench_span__ = True
    return span


def _timed_generator(func, name):
    now, beside = _spans.now, _spans.beside

    @functools.wraps(func)
    def span(*args, **kwargs):
        gen = func(*args, **kwargs)
        # This body runs from the first next(): the span starts there.
        start = now()
        try:
            return (yield from gen)
        finally:
            beside(name, start, now() - start)

    span.__stagebench_span__ = True
    return span


def _timed_coroutine(func, name):
    now, beside = _spans.now, _spans.beside

    @functools.wraps(func)
    async def span(*args, **kwargs):
        start = now()
        try:
            return await func(*args, **kwargs)
        finally:
            beside(name, start, now() - start)

    span.__stagebench_span__ = True
    return span


def _timed_asyncgen(func, name):
    now, beside = _spans.now, _spans.beside

    @functools.wraps(func)
    async def span(*args, **kwargs):
        agen = func(*args, **kwargs)
        start = now()
        try:
            sent = None
            while True:
                try:
                    item = await agen.asend(sent)
                except StopAsyncIteration:
                    return
                sent = yield item
        finally:
            beside(name, start, now() - start)
            await agen.aclose()

    span.__stagebench_span__ = True
    return span


class Refused(Exception):
    """A target that cannot be wrapped, with the reason."""


def _wrap(module, qualname, name, spelled=None):
    """Wraps MODULE.QUALNAME in place; whether it was found. Raises
    :class:`Refused` for what cannot be wrapped without changing what the
    program does."""
    from stagebench import _append

    spelled = spelled or "%s:%s" % (module.__name__, qualname)
    if callable(name):
        # A preset's own installer (see stagebench._presets).
        name(module)
        _append({"wrapped": spelled})
        return True

    owner = module
    parts = qualname.split(".")
    for part in parts[:-1]:
        owner = getattr(owner, part, None)
        if owner is None:
            return False
    last = parts[-1]
    if isinstance(owner, type):
        missing = object()
        raw = missing
        for klass in owner.__mro__:
            if last in klass.__dict__:
                raw = klass.__dict__[last]
                break
        if raw is missing:
            return False
    else:
        raw = getattr(owner, last, None)
        if raw is None:
            return False
    if getattr(raw, "__stagebench_span__", False):
        _append({"wrapped": spelled, "span": str(name)})
        return True
    if isinstance(raw, staticmethod):
        wrapped = staticmethod(timed(raw.__func__, name))
    elif isinstance(raw, classmethod):
        wrapped = classmethod(timed(raw.__func__, name))
    elif isinstance(raw, property):
        if raw.fget is None:
            raise Refused("a property without a getter")
        wrapped = property(timed(raw.fget, name), raw.fset, raw.fdel, raw.__doc__)
    elif isinstance(raw, functools.cached_property):
        wrapped = functools.cached_property(timed(raw.func, name))
        wrapped.__set_name__(owner, last)
    elif isinstance(raw, type):
        raise Refused("a class: name one of its methods")
    elif callable(raw):
        wrapped = timed(raw, name)
    else:
        raise Refused("not callable (a %s)" % type(raw).__name__)
    try:
        setattr(owner, last, wrapped)
    except (TypeError, AttributeError) as e:
        if isinstance(owner, type):
            raise Refused("an attribute of an immutable built-in type cannot be wrapped") from e
        raise Refused("cannot be replaced: %s" % e) from e
    _append({"wrapped": spelled, "span": str(name)})
    return True


def _try(module, qualname, name, spelled):
    """Wraps one target; a refusal is reported for it alone, and no error
    of ours ever reaches the program."""
    from stagebench import _append

    try:
        return _wrap(module, qualname, name, spelled)
    except Refused as why:
        _append({"refused": spelled, "why": str(why)})
    except Exception as e:  # noqa: BLE001 - never break the program we measure
        _append({"refused": spelled, "why": "%s: %s" % (type(e).__name__, e)})
    return True


class _Finder(importlib.abc.MetaPathFinder):
    """Wraps a target module's loader so its targets are wrapped as soon as
    the module has run."""

    def __init__(self, by_module):
        self.by_module = by_module

    def find_spec(self, fullname, path, target=None):
        from stagebench import _after_import

        targets = self.by_module.get(fullname)
        if not targets:
            return None

        def wrap(module):
            for qualname, name, spelled in targets:
                _try(module, qualname, name, spelled)

        return _after_import(self, fullname, path, target, wrap)


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
            through_wrapper = caller is not None and caller.f_code.co_filename == __file__
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
            _try(main, qualname, name, spelled)
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
            from stagebench._presets import PRESETS

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
                _try(sys.modules[module], qualname, name, spelled)
    if by_module:
        sys.meta_path.insert(0, _Finder(by_module))
