"""What a user's code calls: :class:`span`, :func:`spanned` and
:func:`progress` (re-exported by the package). Names are checked whether
or not stagebench runs the program, so a bad one fails in its own tests
first.
"""

import math
import re

from stagebench import _sink, _spans
from stagebench._wrap import timed

# The builtins this module calls, bound as they are at import: a program's
# `--span builtins:NAME` replaces one, and the helper must neither call
# that span (a recursion) nor be counted as the program (`TheHelpersOwnCalls`
# in python/tests).
from builtins import float, isinstance, str  # noqa: A004

_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,64}\Z")


def _check_name(name):
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(
            "stagebench span name %r must be 1 to 64 of A-Z a-z 0-9 _ . -" % (name,)
        )
    return name


class span:
    """A span of your code, timed with a monotonic clock::

        with stagebench.span("adapt_images"):
            ...

    It is counted when the block ends, also when it raises. A span inside
    another span of the same name on the same thread is not timed again.
    """

    __slots__ = ("name", "_t", "_open", "_start")

    def __init__(self, name):
        self.name = _check_name(name)
        self._open = None

    def __enter__(self):
        self._t = t = _spans.thread()
        self._open = _spans.begin(t, self.name)
        self._start = _spans.now()
        return self

    def __exit__(self, *exc):
        ns = _spans.now() - self._start
        if self._open is not None:
            _spans.end(self._t, self._open, self._start, ns)
            self._open = None
        return False


def spanned(name):
    """A decorator: every call of the function is a span called ``name``
    (a generator's from its first ``next`` to its end, a coroutine's until
    its result)."""
    _check_name(name)

    def wrap(func):
        return timed(func, name)

    return wrap


def progress(fraction):
    """Reports that ``fraction`` (0 to 1) of this stage is done."""
    f = float(fraction)
    if math.isnan(f) or not 0.0 <= f <= 1.0:
        raise ValueError("stagebench progress %r is not between 0 and 1" % (fraction,))
    _sink.append({"progress": f})
