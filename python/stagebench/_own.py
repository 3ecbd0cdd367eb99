"""The helper's own work, marked: while a thread runs it (a wrap, a line
written, the exit's report), a builtin the program spans
(``--span builtins:NAME``, ``os:write``) is called through without being
counted, also where the standard library the helper uses calls it. The
program's calls are the program's alone.

A floor of its own: it imports nothing of the package.
"""

import threading

# The builtins this module calls, bound as they are at import (see
# `TheHelpersOwnCalls` in python/tests).
from builtins import getattr  # noqa: A004

# Per thread: `busy` is True while the helper's own work runs on it.
state = threading.local()


def busy():
    """Whether this thread is running the helper's own work."""
    return getattr(state, "busy", False)


def own(func):
    """``func`` marked as the helper's own work for as long as it runs."""

    def run(*args, **kwargs):
        was = getattr(state, "busy", False)
        state.busy = True
        try:
            return func(*args, **kwargs)
        finally:
            state.busy = was

    run.__name__, run.__qualname__, run.__doc__ = func.__name__, func.__qualname__, func.__doc__
    return run
