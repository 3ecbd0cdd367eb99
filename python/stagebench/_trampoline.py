"""A function object made to call another in place: every reference to it
(one a caller loaded before, ``map(f, ...)``, a callback, a dict of
functions, ``stagebench.serve(prepare)``) then calls the other, because
the object itself changed, not a name bound to it.

:func:`redirect` gives a function a new ``__code__``: a trampoline whose
one constant is the function to call. Everything else the program sees of
the object stays: its identity, ``__name__``, ``__qualname__``,
``__defaults__``, ``__dict__``, and its kind (a generator function stays
one, a coroutine function too). ``__wrapped__`` is the function as it
was, a copy with the original code, as ``functools.wraps`` exposes it.

Each call through a trampoline adds Python frames, so the first redirect
raises the recursion limit by what it adds (:func:`deepen`): the deepest
recursion that runs bare still runs. The program sees its own limit
(``sys.getrecursionlimit`` and ``sys.setrecursionlimit`` scale it).

The helper's floor with no import of the package.
"""

import sys
import types
import warnings

# The builtins this module calls, bound as they are at import: a program's
# `--span builtins:NAME` replaces one, and the helper must neither call
# that span (a recursion) nor be counted as the program (`TheHelpersOwnCalls`
# in python/tests).
from builtins import (  # noqa: A004
    compile,
    exec,
    getattr,
    hasattr,
    isinstance,
    len,
    range,
    str,
    tuple,
    zip,
)

# Each kind's trampoline: the same kind of function, whose string
# constants "@NAME" are placeholders for what :func:`redirect` is given.
_SOURCES = {
    "function": "def t(*args, **kwargs):\n    %sreturn '@target'(*args, **kwargs)\n",
    "generator": "def t(*args, **kwargs):\n    %sreturn (yield from '@target'(*args, **kwargs))\n",
    "coroutine": "async def t(*args, **kwargs):\n    %sreturn await '@target'(*args, **kwargs)\n",
    # A span's bookkeeping in the trampoline itself (the compiled path's
    # enter and leave): one frame fewer than calling a wrapper.
    "entered": (
        "def t(*args, **kwargs):\n    %ss = '@enter'('@name')\n    if s is None:\n"
        "        return '@target'(*args, **kwargs)\n    try:\n"
        "        return '@target'(*args, **kwargs)\n    finally:\n        '@leave'(s)\n"
    ),
}

# The frames one call costs through a redirect at most (the trampoline,
# the span's wrapper, the original) against one bare.
FRAMES = 3

_templates = {}


def _template(kind, freevars):
    """The trampoline code of ``kind`` with ``freevars`` free variables
    (a code object's may replace a function's only with as many as its
    closure has cells; the trampoline never reads them)."""
    key = (kind, freevars)
    code = _templates.get(key)
    if code is None:
        names = ["_sb_free%d" % i for i in range(freevars)]
        touch = "if 0: (%s,)\n    " % ", ".join(names) if names else ""
        body = _SOURCES[kind] % touch
        if names:
            body = "def outer():\n    %s = None\n    %sreturn t\n" % (
                " = ".join(names),
                body.replace("\n", "\n    "),
            )
        namespace = {}
        with warnings.catch_warnings():
            # "'str' object is not callable": the constants are replaced.
            warnings.simplefilter("ignore")
            exec(compile(body, "<stagebench span>", "exec"), namespace)
        made = namespace["outer"]() if names else namespace["t"]
        code = _templates[key] = made.__code__
    return code


def kind_of(func):
    """The trampoline kind ``func`` needs, or None when it cannot be
    redirected (not a plain Python function, or an async generator)."""
    if not isinstance(func, types.FunctionType):
        return None
    flags = func.__code__.co_flags
    if flags & 0x200:  # CO_ASYNC_GENERATOR
        return None
    if flags & 0x80:  # CO_COROUTINE
        return "coroutine"
    if flags & 0x20:  # CO_GENERATOR
        return "generator"
    return "function"


def original(func):
    """A copy of ``func`` as it is: its code, globals, defaults, closure,
    names and attributes, a new object (what a redirect calls)."""
    copy = types.FunctionType(
        func.__code__, func.__globals__, func.__name__, func.__defaults__, func.__closure__
    )
    copy.__kwdefaults__ = func.__kwdefaults__
    copy.__qualname__ = func.__qualname__
    copy.__module__ = func.__module__
    copy.__doc__ = func.__doc__
    copy.__dict__.update(func.__dict__)
    return copy


def redirect(func, target, was, entered=None):
    """Makes ``func`` call ``target`` with its arguments, in place;
    ``func.__wrapped__`` becomes ``was`` (the copy :func:`original` made).
    ``func`` must be of a :func:`kind_of` kind. With ``entered``, for a
    plain function only, ``(enter, name, leave)``: the trampoline itself
    calls ``s = enter(name)`` before ``target`` and ``leave(s)`` after it
    (unless ``s`` is None)."""
    code = func.__code__
    kind = kind_of(func)
    given = {"@target": target}
    if entered is not None:
        if kind != "function":
            raise ValueError("only a plain function's trampoline enters a span itself")
        kind = "entered"
        given.update(zip(("@enter", "@name", "@leave"), entered))
    template = _template(kind, len(code.co_freevars))
    named = {
        "co_consts": tuple(
            given[c] if isinstance(c, str) and c in given else c for c in template.co_consts
        ),
        "co_name": code.co_name,
        "co_filename": code.co_filename,
        "co_firstlineno": code.co_firstlineno,
    }
    if hasattr(code, "co_qualname"):
        named["co_qualname"] = code.co_qualname
    deepen()
    func.__code__ = template.replace(**named)
    func.__wrapped__ = was


def deepen():
    """Raises the recursion limit by :data:`FRAMES`, once, and makes
    ``sys``'s limit functions scale it, so the program reads and sets the
    limit it would have bare."""
    if getattr(sys.setrecursionlimit, "__stagebench__", False):
        return
    real_set, real_get = sys.setrecursionlimit, sys.getrecursionlimit

    def setrecursionlimit(limit):
        # One call: its checks raise what they raise bare (a scaled bad
        # value is still bad), and a limit the program may set bare at its
        # depth is not refused because the unscaled one is below the frames.
        real_set(limit * FRAMES)

    def getrecursionlimit():
        return real_get() // FRAMES

    setrecursionlimit.__stagebench__ = True
    setrecursionlimit.__doc__, getrecursionlimit.__doc__ = real_set.__doc__, real_get.__doc__
    real_set(real_get() * FRAMES)
    sys.setrecursionlimit, sys.getrecursionlimit = setrecursionlimit, getrecursionlimit
