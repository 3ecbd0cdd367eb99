"""Report spans and progress of your own pipeline to stagebench.

Under stagebench, the worker running your command names a fresh file in
``STAGEBENCH_SPANS``. Spans are tallied in the process (``_spans``: calls,
inclusive and self time, first call, min, max and a histogram per name and
thread) and each thread appends its tally as one ``{"agg": ...}`` line at
most once a second and at exit; each progress report is one line
``{"progress": 0.4}``. stagebench turns them into the stage's span figures
(``span:NAME_s``, ``span:NAME_n``, ``span:NAME_median_s``, …) and can kill
the stage at a declared span or progress (a campaign's ``kill_at``).

At exit, a process that imported the helper under stagebench adds one line,
``{"runtime": {"python": "3.11.7", "distributions": {"numpy": "2.4.6"}}}``:
the interpreter's version and every installed distribution whose modules
it imported (from the metadata directories ``importlib.metadata`` reads),
which the report keeps per stage.

``serve(fn)`` makes a per-item preparation program of your function for
``coordinator --mode cold-prep --prepare 'python3 prep.py' --items FILE``:
stagebench starts the program once per worker process and hands it items
one at a time (docs/item-protocol.md).

Every line is one ``write`` on a descriptor opened with ``O_APPEND``, so
lines from threads and forked processes never interleave. Outside
stagebench (no ``STAGEBENCH_SPANS``) every call is a silent no-op. Names
are checked either way, so a bad one fails in your own tests first.
"""

import json
import math
import os
import re
import threading
import time

from stagebench import _spans  # noqa: E402

__all__ = ["span", "spanned", "progress", "active", "serve"]
__version__ = "0.1.0"

_ENV = "STAGEBENCH_SPANS"
_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,64}\Z")


def active():
    """Whether this process runs under stagebench (its reports go somewhere)."""
    return bool(os.environ.get(_ENV))


def _check_name(name):
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(
            "stagebench span name %r must be 1 to 64 of A-Z a-z 0-9 _ . -" % (name,)
        )
    return name


# The spans file's descriptor, opened once per path and never closed (a
# forked child inherits it; O_APPEND keeps every line whole). A lock makes
# threads that write their first span at once share one descriptor.
_fds = {}
_fds_lock = threading.Lock()


def _spans_fd():
    """The descriptor of the spans file ``STAGEBENCH_SPANS`` names, or None."""
    path = os.environ.get(_ENV)
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


def _write(line):
    fd = _spans_fd()
    if fd is not None:
        os.write(fd, line)


# What the helper itself calls, taken before any ``--span`` target is
# wrapped: its own lines and its exit never count as the program's calls.
_encode = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
_join, _open, _scandir = os.path.join, open, os.scandir


def _append(record):
    _write((_encode(record) + "\n").encode())


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
        from stagebench import autospan

        return autospan.timed(func, name)

    return wrap


def progress(fraction):
    """Reports that ``fraction`` (0 to 1) of this stage is done."""
    f = float(fraction)
    if math.isnan(f) or not 0.0 <= f <= 1.0:
        raise ValueError("stagebench progress %r is not between 0 and 1" % (fraction,))
    _append({"progress": f})


# Distribution names and versions reported at exit: what a wheel's metadata
# may hold that the worker accepts (never a path).
_SAFE = re.compile(r"[A-Za-z0-9_.+!\-]{1,100}\Z")


def _installed():
    """Every installed distribution on ``sys.path``, first found first:
    (name, version, its metadata directory). Read from the metadata
    directories themselves (``NAME-VERSION.dist-info``, or ``.egg-info``),
    as ``importlib.metadata`` finds them, without importing it: its import
    alone costs a program's exit tens of milliseconds."""
    import sys

    seen = set()
    for entry in sys.path:
        try:
            entries = sorted(_scandir(entry or "."), key=lambda e: e.name)
        except OSError:
            continue
        for d in entries:
            kind = d.name.rpartition(".")[2]
            if kind not in ("dist-info", "egg-info") or not d.is_dir():
                continue
            headers = {}
            for file in ("METADATA", "PKG-INFO"):
                try:
                    with _open(_join(d.path, file), encoding="utf-8") as f:
                        for line in f:
                            if not line.strip():
                                break
                            key, _, value = line.partition(":")
                            headers.setdefault(key, value.strip())
                    break
                except OSError:
                    continue
            name, version = headers.get("Name"), headers.get("Version")
            key = (name or "").lower().replace("-", "_").replace(".", "_")
            if name and version and key not in seen:
                seen.add(key)
                yield name, version, d.path


def _runtime():
    """The interpreter's version, and the name and version of every installed
    distribution whose modules were imported.

    A distribution provides the top-level names of its ``top_level.txt`` and
    its own name, normalised; only a module imported from site-packages that
    neither names has the distributions' file lists (``RECORD``, costlier)
    searched for it."""
    import sys

    stdlib = set(getattr(sys, "stdlib_module_names", ())) | set(sys.builtin_module_names)
    tops = {}
    for name, module in list(sys.modules.items()):
        if "." in name or name in stdlib or name == "__main__" or module is None:
            continue
        tops[name] = getattr(module, "__file__", None) or ""
        if ".spans-bootstrap-" in tops[name]:
            # The helper a worker put on the path, not an installed one.
            del tops[name]
    found = {}
    unmatched = set(tops)
    rest = []
    for name, version, path in _installed():
        try:
            with _open(_join(path, "top_level.txt"), encoding="utf-8") as f:
                provides = set(f.read().split())
        except OSError:
            provides = set()
        provides.add(name.lower().replace("-", "_").replace(".", "_"))
        hit = provides & tops.keys()
        if hit:
            found[name] = version
            unmatched -= hit
        else:
            rest.append((name, version, path))
    unmatched = {
        n for n in unmatched if "site-packages" in tops[n] or "dist-packages" in tops[n]
    }
    for name, version, path in rest:
        if not unmatched:
            break
        try:
            with _open(_join(path, "RECORD"), encoding="utf-8") as f:
                provides = {line.split("/")[0].split(",")[0].rsplit(".py", 1)[0] for line in f}
        except OSError:
            continue
        if provides & unmatched:
            found[name] = version
            unmatched -= provides
    safe = {k: v for k, v in found.items() if _SAFE.match(k) and _SAFE.match(v)}
    return {
        "python": "%d.%d.%d" % tuple(sys.version_info[:3]),
        "distributions": safe,
        "devices": _devices(),
        "sources": _sources(),
    }


_DEVICE = re.compile(r"[A-Za-z0-9_.+\-: ()]{1,100}\Z")


def _devices():
    """The devices of the frameworks the program imported, as
    ``FRAMEWORK:KIND``, asked only of a framework that has already started
    its runtime (asking would start it at exit otherwise)."""
    import sys

    out = []
    try:
        bridge = sys.modules.get("jax._src.xla_bridge")
        if bridge is not None and getattr(bridge, "_backends", None):
            import jax

            out += ["jax:%s" % getattr(d, "device_kind", d.platform) for d in jax.devices()]
    except Exception:  # noqa: BLE001 - an exit handler must not fail the program
        pass
    try:
        tf = sys.modules.get("tensorflow")
        if tf is not None and hasattr(tf, "config"):
            out += ["tensorflow:%s" % d.device_type for d in tf.config.list_physical_devices()]
    except Exception:  # noqa: BLE001
        pass
    try:
        torch = sys.modules.get("torch")
        if torch is not None and hasattr(torch, "cuda"):
            out.append("torch:cpu")
            if torch.cuda.is_initialized():
                out += ["torch:%s" % torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    except Exception:  # noqa: BLE001
        pass
    seen = []
    for d in out:
        if _DEVICE.match(d) and d not in seen:
            seen.append(d)
    return seen[:64]


_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")


def _sources():
    """The SHA-256 of every Python file under the working directory that
    the program imported (its own code, not an installed library's), by
    module name (``__main__`` for the script): never a path."""
    import hashlib
    import sys

    try:
        here = os.path.realpath(os.getcwd()) + os.sep
    except OSError:
        return {}
    out = {}
    for name, module in list(sys.modules.items()):
        # A script's __main__ loses its __file__ once it has run (before
        # exit handlers); its loader keeps the path.
        path = getattr(module, "__file__", None) or getattr(
            getattr(module, "__loader__", None), "path", None
        )
        if not isinstance(path, str) or not path.endswith(".py") or not _MODULE.match(name):
            continue
        if name == "stagebench" or name.startswith("stagebench.") or ".spans-bootstrap-" in path:
            continue
        real = os.path.realpath(path)
        if not real.startswith(here) or "site-packages" in real or "dist-packages" in real:
            continue
        try:
            with _open(real, "rb") as f:
                out[name] = hashlib.sha256(f.read()).hexdigest()
        except OSError:
            continue
        if len(out) >= 2000:
            break
    return out


_PID = os.getpid()


def _report_runtime():
    """At exit, under stagebench, in the process that imported the helper:
    one ``{"runtime": {...}}`` line. Never raises (the program is ending)."""
    if os.getpid() != _PID or not active():
        return
    try:
        _append({"runtime": _runtime()})
    except Exception:  # noqa: BLE001 - an exit handler must not fail the program
        pass


import atexit  # noqa: E402 - registered once the functions it needs exist

atexit.register(_report_runtime)


def _after_import(finder, fullname, path, target, then):
    """The spec the other finders on ``sys.meta_path`` give ``fullname``,
    its loader made to call ``then(module)`` once the module has run; None
    when none finds it. (``finder`` is the caller, first on the path.)"""
    import sys

    for other in sys.meta_path:
        if other is finder or not hasattr(other, "find_spec"):
            continue
        spec = other.find_spec(fullname, path, target)
        if spec is not None:
            break
    else:
        return None
    loader = spec.loader
    if loader is None or not hasattr(loader, "exec_module"):
        return spec
    exec_module = loader.exec_module

    def exec_then(module):
        exec_module(module)
        then(module)

    loader.exec_module = exec_then
    return spec


def _register_last(module):
    atexit.unregister(_report_runtime)
    atexit.register(_report_runtime)


class _AfterFrameworks:
    """Exit handlers run last registered first, and a framework registers
    its own that tears its runtime down (JAX forgets its backends): once a
    framework has been imported, the runtime report is registered again,
    after it, so it still sees the devices."""

    NAMES = frozenset(("jax", "tensorflow", "torch"))

    def find_spec(self, fullname, path, target=None):
        if fullname not in self.NAMES:
            return None
        return _after_import(self, fullname, path, target, _register_last)


if active():
    import sys as _sys

    _sys.meta_path.insert(0, _AfterFrameworks())


_ITEMS_FD = "STAGEBENCH_ITEMS_FD"
_ANSWERS_FD = "STAGEBENCH_ANSWERS_FD"


def serve(fn):
    """Serves items to ``fn(item_id, out_dir)`` until stagebench closes the
    input, then returns (exit 0 after it)::

        def prepare(item_id, out_dir):
            ...  # write this item's files below out_dir

        if __name__ == "__main__":
            stagebench.serve(prepare)

    Call it once your imports are done: the time until it says ready is the
    program's start-up, measured apart from the items. A function that
    raises answers ``error`` for its item (the traceback goes to stderr),
    and stagebench fails the run. Spans inside ``fn`` are the item's.
    Outside stagebench it raises ``RuntimeError``.
    """
    import sys
    import traceback

    try:
        items_fd = int(os.environ[_ITEMS_FD])
        answers_fd = int(os.environ[_ANSWERS_FD])
    except (KeyError, ValueError):
        raise RuntimeError(
            "stagebench.serve: %s and %s are not set; this program is started by "
            "coordinator --mode cold-prep --prepare" % (_ITEMS_FD, _ANSWERS_FD)
        ) from None

    def answer(record):
        line = (_encode(record) + "\n").encode()
        view = memoryview(line)
        while view:
            view = view[os.write(answers_fd, view):]

    answer({"ready": True})
    with os.fdopen(items_fd, "rb", buffering=0) as raw:
        for line in _lines(raw):
            request = json.loads(line)
            item_id, out_dir = request["item"], request["out"]
            try:
                fn(item_id, out_dir)
            except BaseException as e:  # noqa: BLE001 - every failure is answered
                traceback.print_exc(file=sys.stderr)
                answer({"error": "%s: %s" % (type(e).__name__, e)})
                if not isinstance(e, Exception):
                    raise
                continue
            # The item's spans reach the file before its answer does.
            _spans.flush_all()
            answer({"done": item_id})
    os.close(answers_fd)


def _lines(raw):
    """Complete lines of an unbuffered pipe, as each arrives (a buffered
    reader would wait to fill its buffer before handing over an item)."""
    pending = b""
    while True:
        chunk = raw.read(65536)
        if not chunk:
            return
        pending += chunk
        *done, pending = pending.split(b"\n")
        for line in done:
            if line.strip():
                yield line
