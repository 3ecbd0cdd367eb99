"""A function made a span: :func:`timed` wraps a function, method,
generator, coroutine or async generator function as a span of its own
kind, and :func:`wrap` makes a module's or class's function one in place,
or refuses (:class:`Refused`) what cannot be wrapped without changing what
the program does. A Python function (also a method's, a property's
getter's) is redirected in place (``_trampoline``): the object itself
calls its span, so every reference to it is counted, one loaded before
the wrap, ``map(f, ...)``, a callback or a dict of functions among them.
What cannot be (an async generator function, a builtin, an inherited
method named on a subclass) has its attribute replaced by the span, as
before: a call through a reference taken earlier is not counted. One
function has one span name: a second name for it is refused. Each wrap
writes one line
``{"wrapped": "MODULE:QUALNAME", "span": NAME}`` (a typo must never look
like zero time); a refusal one ``{"refused": ..., "why": ...}``.

A call made while a span of the same NAME is open on the same thread
(recursion, or a wrapped method calling its wrapped override) is not
timed again: nesting of different names is recorded as nesting, and no
second is counted twice.
"""

import functools
import inspect

from stagebench import _layout as L
from stagebench import _own, _sink, _spans, _trampoline

# The builtins this module calls, bound as they are at import: a program's
# `--span builtins:NAME` replaces one, and the helper must neither call
# that span (a recursion) nor be counted as the program (`TheHelpersOwnCalls`
# in python/tests).
from builtins import (  # noqa: A004
    callable,
    classmethod,
    getattr,
    isinstance,
    len,
    object,
    property,
    setattr,
    staticmethod,
    str,
    type,
)


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
        if not t[L.T_MAIN] or t[L.T_INNER] is not None and t[L.T_INNER][L.NAME] == str(name):
            return inner(*args, **kwargs)
        before = _spans.stage_begin()
        try:
            return inner(*args, **kwargs)
        finally:
            _spans.stage_end(str(name), before)

    stage.__stagebench_span__ = str(name)
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

    span.__stagebench_span__ = name
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
    local, new, tally, now = _spans.local, _spans.thread, _spans.tally, _spans.now
    slices, unsliced, max_slices = _spans._slices, _spans._unsliced, _spans.MAX_SLICES
    flush, eager = _spans.flush, name in _spans.EAGER
    if _spans.fast is not None and not eager:
        return _compiled(func, name, _spans.fast)
    if _spans.CPU:
        return _timed_cpu(func, name)
    # The layout's indices, bound here: the wrapper reads them as its own
    # cells, as cheap as the literals they name (a global each would not be).
    CALLS, SUM, SELF, MIN, MAX, FIRST_NS, FIRST_AT, HIST = (
        L.CALLS, L.SUM, L.SELF, L.MIN, L.MAX, L.FIRST_NS, L.FIRST_AT, L.HIST
    )
    OPEN, CHILDREN, PARENT = L.OPEN, L.CHILDREN, L.PARENT
    T_INNER, T_TALLIES, T_MAIN, T_FLUSH_AT = L.T_INNER, L.T_TALLIES, L.T_MAIN, L.T_FLUSH_AT
    T_TOP_NS, T_TOP_FIRST, T_TOP_LAST, START = L.T_TOP_NS, L.T_TOP_FIRST, L.T_TOP_LAST, L.START

    # _spans.begin and _spans.end, inline: a wrapped call's cost is mostly
    # these steps, and two calls more would add a fifth to it.
    @functools.wraps(func)
    def span(*args, **kwargs):
        try:
            t = local.t
        except AttributeError:
            t = new()
        s = t[T_TALLIES].get(name)
        if s is None:
            s = tally(t, name)
        elif s[OPEN]:
            return func(*args, **kwargs)
        s[OPEN] = 1
        s[CHILDREN] = 0
        s[PARENT] = t[T_INNER]
        t[T_INNER] = s
        start = s[START] = now()
        try:
            return func(*args, **kwargs)
        finally:
            ns = now() - start
            if t[T_INNER] is not s:
                _spans.end(t, s, start, ns)
            else:
                s[OPEN] = 0
                p = t[T_INNER] = s[PARENT]
                if p is not None:
                    p[CHILDREN] += ns
                elif t[T_MAIN]:
                    t[T_TOP_NS] += ns
                    if t[T_TOP_FIRST] is None:
                        t[T_TOP_FIRST] = start
                    t[T_TOP_LAST] = start + ns
                s[CALLS] += 1
                s[SUM] += ns
                s[SELF] += ns - s[CHILDREN]
                if ns > s[MAX]:
                    s[MAX] = ns
                if ns < s[MIN]:
                    s[MIN] = ns
                if ns < 128:
                    s[HIST][ns] += 1
                else:
                    e = ns.bit_length()
                    s[HIST][(e << 6) + (ns >> (e - 7)) - 64] += 1
                if s[CALLS] == 1:
                    s[FIRST_NS] = ns
                    s[FIRST_AT] = start
                if unsliced[0] or len(slices) >= max_slices:
                    unsliced[0] += 1
                else:
                    slices.append((name, start, ns, 0 if t[T_MAIN] else 1))
                if eager or start >= t[T_FLUSH_AT]:
                    flush(t)

    span.__stagebench_span__ = name
    return span


def _timed_cpu(func, name):
    """A plain function's span that also takes its thread's CPU time
    (``STAGEBENCH_SPANS_CPU=1``): through _spans.begin and _spans.end,
    which read it, rather than the inline steps above, which do not."""
    thread, begin, end, now = _spans.thread, _spans.begin, _spans.end, _spans.now
    START = L.START

    @functools.wraps(func)
    def span(*args, **kwargs):
        t = thread()
        s = begin(t, name)
        if s is None:
            return func(*args, **kwargs)
        start = s[START]
        try:
            return func(*args, **kwargs)
        finally:
            end(t, s, start, now() - start)

    span.__stagebench_span__ = name
    return span


def _timed_generator(func, name):
    now, running, stopped = _spans.now, _spans.running, _spans.stopped

    @functools.wraps(func)
    def span(*args, **kwargs):
        gen = func(*args, **kwargs)
        # This body runs from the first next(): the span starts there, and
        # is a call from then on, also if it is never finished.
        key = running(name, now())
        try:
            return (yield from gen)
        finally:
            stopped(key, now())

    span.__stagebench_span__ = name
    return span


def _timed_coroutine(func, name):
    now, running, stopped = _spans.now, _spans.running, _spans.stopped

    @functools.wraps(func)
    async def span(*args, **kwargs):
        key = running(name, now())
        try:
            return await func(*args, **kwargs)
        finally:
            stopped(key, now())

    span.__stagebench_span__ = name
    return span


def _timed_asyncgen(func, name):
    now, running, stopped = _spans.now, _spans.running, _spans.stopped

    @functools.wraps(func)
    async def span(*args, **kwargs):
        agen = func(*args, **kwargs)
        key = running(name, now())
        try:
            sent = None
            while True:
                try:
                    item = await agen.asend(sent)
                except StopAsyncIteration:
                    return
                sent = yield item
        finally:
            stopped(key, now())
            await agen.aclose()

    span.__stagebench_span__ = name
    return span


class Refused(Exception):
    """A target that cannot be wrapped, with the reason."""


def _redirected(func, name):
    """Makes the Python function ``func`` the span ``name`` in place
    (``_trampoline``); whether it could."""
    if _trampoline.kind_of(func) is None:
        return False
    was = _trampoline.original(func)
    fast = _spans.fast
    plain = _trampoline.kind_of(func) == "function"
    if plain and fast is not None and type(name) is str and name not in _spans.EAGER:
        # The compiled bookkeeping in the trampoline itself: one frame and
        # one call fewer than a wrapper (``_compiled``'s same steps).
        _trampoline.redirect(func, was, was, (fast.enter, name, fast.leave))
    else:
        _trampoline.redirect(func, timed(was, name), was)
    func.__stagebench_span__ = str(name)
    return True


def _function_of(raw):
    """The Python function a class or module attribute holds: itself, a
    static or class method's, a property's getter, a cached property's."""
    if isinstance(raw, (staticmethod, classmethod)):
        return raw.__func__
    if isinstance(raw, property):
        return raw.fget
    if isinstance(raw, functools.cached_property):
        return raw.func
    return raw


def _outside_the_helper(span, func):
    """The span of a callable the program shares with the helper (a
    builtin, ``os.write``), counted only for calls made outside the
    helper's own work (``_own``): the helper, and the standard library it
    uses, call ``func`` uncounted."""
    state = _own.state

    @functools.wraps(func)
    def call(*args, **kwargs):
        if getattr(state, "busy", False):
            return func(*args, **kwargs)
        return span(*args, **kwargs)

    call.__stagebench_span__ = span.__stagebench_span__
    return call


def wrap(module, qualname, name, spelled=None):
    """Wraps MODULE.QUALNAME in place; whether it was found. Raises
    :class:`Refused` for what cannot be wrapped without changing what the
    program does."""
    spelled = spelled or "%s:%s" % (module.__name__, qualname)
    if callable(name):
        # A preset's own installer (see stagebench._presets).
        name(module)
        _sink.append({"wrapped": spelled})
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
    func = _function_of(raw)
    already = getattr(func, "__stagebench_span__", None) or getattr(raw, "__stagebench_span__", None)
    if already:
        if isinstance(already, str) and already != str(name):
            raise Refused("already the span '%s': one function has one span name" % already)
        _sink.append({"wrapped": spelled, "span": str(name)})
        return True
    # In place where the attribute is the owner's own (a method inherited
    # from a base class is the base's: naming it on a subclass times the
    # subclass's calls only, so it is replaced there).
    own = not isinstance(owner, type) or last in owner.__dict__
    if own and not isinstance(raw, type) and _redirected(func, name):
        _sink.append({"wrapped": spelled, "span": str(name)})
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
        wrapped = _outside_the_helper(timed(raw, name), raw)
    else:
        raise Refused("not callable (a %s)" % type(raw).__name__)
    try:
        setattr(owner, last, wrapped)
    except (TypeError, AttributeError) as e:
        if isinstance(owner, type):
            raise Refused("an attribute of an immutable built-in type cannot be wrapped") from e
        raise Refused("cannot be replaced: %s" % e) from e
    # Replaced, not redirected: a reference taken before is not counted.
    _sink.append({"wrapped": spelled, "span": str(name), "at_least": True})
    return True


@_own.own
def attempt(module, qualname, name, spelled):
    """Wraps one target; a refusal is reported for it alone, and no error
    of ours ever reaches the program."""
    try:
        return wrap(module, qualname, name, spelled)
    except Refused as why:
        _sink.append({"refused": spelled, "why": str(why)})
    except Exception as e:  # noqa: BLE001 - never break the program we measure
        _sink.append({"refused": spelled, "why": "%s: %s" % (type(e).__name__, e)})
    return True
