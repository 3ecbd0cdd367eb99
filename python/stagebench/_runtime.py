"""What a program ran on, reported at its exit: one ``{"runtime": {...}}``
line with the interpreter's version, every installed distribution whose
modules it imported (from the metadata directories ``importlib.metadata``
reads, without importing it), the devices of the frameworks it started
and the SHA-256 of its own source files, by module name (never a path).
"""

import atexit
import hashlib
import os
import re
import sys

from stagebench import _own, _sink, _spans
from stagebench._hooks import after_import
from stagebench._sink import join, open_, scandir

# The builtins this module calls, bound as they are at import: a program's
# `--span builtins:NAME` replaces one, and the helper must neither call
# that span (a recursion) nor be counted as the program (`TheHelpersOwnCalls`
# in python/tests).
from builtins import (  # noqa: A004
    frozenset,
    getattr,
    hasattr,
    isinstance,
    len,
    list,
    range,
    set,
    sorted,
    str,
    tuple,
)

# Distribution names and versions reported at exit: what a wheel's metadata
# may hold that the worker accepts (never a path).
_SAFE = re.compile(r"[A-Za-z0-9_.+!\-]{1,100}\Z")


def _installed():
    """Every installed distribution on ``sys.path``, first found first:
    (name, version, its metadata directory). Read from the metadata
    directories themselves (``NAME-VERSION.dist-info``, or ``.egg-info``),
    as ``importlib.metadata`` finds them, without importing it: its import
    alone costs a program's exit tens of milliseconds."""
    seen = set()
    for entry in sys.path:
        try:
            entries = sorted(scandir(entry or "."), key=lambda e: e.name)
        except OSError:
            continue
        for d in entries:
            kind = d.name.rpartition(".")[2]
            if kind not in ("dist-info", "egg-info") or not d.is_dir():
                continue
            headers = {}
            for file in ("METADATA", "PKG-INFO"):
                try:
                    with open_(join(d.path, file), encoding="utf-8") as f:
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
            with open_(join(path, "top_level.txt"), encoding="utf-8") as f:
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
            with open_(join(path, "RECORD"), encoding="utf-8") as f:
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
            with open_(real, "rb") as f:
                out[name] = hashlib.sha256(f.read()).hexdigest()
        except OSError:
            continue
        if len(out) >= 2000:
            break
    return out


_PID = os.getpid()


@_own.own
def _report_runtime():
    """At exit, under stagebench, in the process that imported the helper:
    one ``{"runtime": {...}}`` line. Never raises (the program is ending)."""
    if os.getpid() != _PID or not _sink.active():
        return
    _spans.ended()
    try:
        _sink.append({"runtime": _runtime()})
    except Exception:  # noqa: BLE001 - an exit handler must not fail the program
        pass


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
        return after_import(self, fullname, path, target, _register_last)


# At import: the runtime report at exit and, under stagebench, the finder
# that registers it again after a framework's own handler.
atexit.register(_report_runtime)
if _sink.active():
    sys.meta_path.insert(0, _AfterFrameworks())
