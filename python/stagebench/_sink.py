"""Where every line the helper writes goes: the spans file that the worker
names in ``STAGEBENCH_SPANS``, one ``write`` per line on a descriptor opened
with ``O_APPEND`` (lines from threads and forked processes never
interleave), and nowhere outside stagebench.

The helper's lowest floor with I/O: it imports nothing of the package.
"""

import json
import os
import threading

# The builtins this module calls, bound as they are at import: a program's
# `--span builtins:NAME` replaces one, and the helper must neither call
# that span (a recursion) nor be counted as the program (`TheHelpersOwnCalls`
# in python/tests).
from builtins import bool, getattr, open  # noqa: A004

# os.write likewise: `--span os:write` times the program's writes, never the
# helper's own lines.
_os_write = os.write

# The variable naming the spans file (set by the worker).
ENV = "STAGEBENCH_SPANS"


def active():
    """Whether this process runs under stagebench (its reports go somewhere)."""
    return bool(os.environ.get(ENV))


# The spans file's descriptor, opened once per path and never closed (a
# forked child inherits it; O_APPEND keeps every line whole). A lock makes
# threads that write their first span at once share one descriptor.
_fds = {}
_fds_lock = threading.Lock()


def _spans_fd():
    """The descriptor of the spans file ``STAGEBENCH_SPANS`` names, or None."""
    path = os.environ.get(ENV)
    if not path:
        return None
    fd = _fds.get(path)
    if fd is None:
        with _fds_lock:
            fd = _fds.get(path)
            if fd is None:
                flags = os.O_WRONLY | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
                fd = _fds[path] = os.open(path, flags)
    return fd


def open_now():
    """Opens the spans file now (before the program's first line), so no
    span's first call pays for it."""
    _spans_fd()


def write(line):
    """Writes one line (bytes, with its newline) to the spans file."""
    fd = _spans_fd()
    if fd is not None:
        _os_write(fd, line)


# What the helper itself calls, taken before any ``--span`` target is
# wrapped: its own lines and its exit never count as the program's calls.
encode = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
join, open_, scandir = os.path.join, open, os.scandir


def append(record):
    """Writes ``record`` as one JSON line."""
    write((encode(record) + "\n").encode())
