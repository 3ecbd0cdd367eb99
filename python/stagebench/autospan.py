"""Spans without editing code: wrap named functions as spans when their
module is imported (``--span MODULE:QUALNAME[=NAME]``).

The worker sets ``STAGEBENCH_SPAN_TARGETS`` to a JSON list of
``{"module", "qualname", "name"}`` or ``{"preset"}`` objects and puts a directory holding this package and a
``sitecustomize`` on ``PYTHONPATH``; that ``sitecustomize`` calls
:func:`install`. A target whose module is already imported is wrapped at
once; any other when its module finishes importing (a finder first on
``sys.meta_path`` wraps the module's loader). A function, a method, a
classmethod and a staticmethod are wrapped in place. Each wrap writes one
line ``{"wrapped": "MODULE:QUALNAME"}`` to the spans file, so the worker can
name the targets that never matched (``spans_not_found``): a typo must never
look like zero time.

A call of a wrapped function is a span called NAME. A call made while a
span of the same NAME is open on the same thread (recursion, or a wrapped
method calling its wrapped override) is not timed again: nesting of
different names is recorded as nesting, and no second is counted twice.
"""

import functools
import importlib.abc
import json
import os
import sys
import threading
import time

_TARGETS = "STAGEBENCH_SPAN_TARGETS"
_open = threading.local()


def _writer():
    """Writes a line to the spans file named when the bootstrap ran (fixed
    for the process's life: no environment lookup per span), through the
    helper's one descriptor, which a forked child inherits; a no-op
    without one."""
    from stagebench import _spans_fd

    fd = _spans_fd()
    if fd is None:
        return lambda line: None
    return functools.partial(os.write, fd)


# Spans open on each thread, by (thread id, name): a call inside an open
# span of its own name (recursion) is not timed again.
_open = set()


def _timed(func, name):
    from stagebench import _ONE_CLOCK

    write = _writer()
    head = b'{"name":"%s","seconds":' % name.encode()
    # Integer nanoseconds, written as "1234e-9": exact, and cheaper to
    # format than a float (a wrapped call's cost is mostly its line).
    now, ident, monotonic = time.perf_counter_ns, threading.get_ident, time.monotonic_ns

    @functools.wraps(func)
    def span(*args, **kwargs):
        key = (ident(), name)
        if key in _open:
            return func(*args, **kwargs)
        _open.add(key)
        start = now()
        try:
            return func(*args, **kwargs)
        finally:
            ns = now() - start
            _open.discard(key)
            at = start if _ONE_CLOCK else monotonic() - ns
            write(head + b'%de-9,"start":%de-9}\n' % (max(ns, 0), at))

    span.__stagebench_span__ = True
    return span


def _wrap(module, qualname, name):
    """Wraps MODULE.QUALNAME in place; whether it was found."""
    from stagebench import _append

    if callable(name):
        # A preset's own installer (see _PRESETS).
        name(module)
        _append({"wrapped": "preset:%s" % qualname})
        return True

    owner = module
    parts = qualname.split(".")
    for part in parts[:-1]:
        owner = getattr(owner, part, None)
        if owner is None:
            return False
    last = parts[-1]
    raw = owner.__dict__.get(last) if isinstance(owner, type) else None
    if isinstance(raw, staticmethod):
        wrapped = staticmethod(_timed(raw.__func__, name))
    elif isinstance(raw, classmethod):
        wrapped = classmethod(_timed(raw.__func__, name))
    else:
        target = getattr(owner, last, None)
        if target is None or not callable(target):
            return False
        if getattr(target, "__stagebench_span__", False):
            return True
        wrapped = _timed(target, name)
    setattr(owner, last, wrapped)
    _append({"wrapped": "%s:%s" % (module.__name__, qualname)})
    return True


def _torch_steps(module):
    """PyTorch's global optimizer step hooks: every optimizer's step, a
    subclass's own ``step`` included, is a span ``optimizer_step``."""
    from stagebench import _append

    local = threading.local()

    def pre(optimizer, args, kwargs):
        local.at = time.monotonic()
        local.start = time.perf_counter()

    def post(optimizer, args, kwargs):
        start = getattr(local, "start", None)
        if start is not None:
            seconds = time.perf_counter() - start
            _append({"name": "optimizer_step", "seconds": max(seconds, 0.0), "start": local.at})
            local.start = None

    module.register_optimizer_step_pre_hook(pre)
    module.register_optimizer_step_post_hook(post)


def _torch_loader(module):
    """Each ``next()`` on a DataLoader iterator that returns a batch is a
    span ``loader_wait``, except an iterator's first, which also starts its
    worker processes: ``loader_start``. The time from one batch's arrival to
    the next ``next()`` on the same thread (what the loop did with the
    batch) is a span ``step``. The input-wait fraction is loader_wait /
    (loader_wait + step): the steady state, start-up apart."""
    from stagebench import _append

    cls = module._BaseDataLoaderIter
    original = cls.__next__
    local = threading.local()

    @functools.wraps(original)
    def __next__(self):
        now_at, now = time.monotonic(), time.perf_counter()
        last = getattr(local, "last", None)
        if last is not None:
            _append({"name": "step", "seconds": max(now - last[1], 0.0), "start": last[0]})
        local.last = None
        # The call that ends an epoch (StopIteration) is no batch: only
        # waits that returned one are counted.
        batch = original(self)
        done = time.perf_counter()
        first = not getattr(self, "_stagebench_started", False)
        self._stagebench_started = True
        name = "loader_start" if first else "loader_wait"
        _append({"name": name, "seconds": max(done - now, 0.0), "start": now_at})
        local.last = (time.monotonic(), done)
        return batch

    cls.__next__ = __next__


# preset -> (module, qualname or preset name, span name or installer)
_PRESETS = {
    "torch": [
        ("torch.utils.data.dataloader", "torch", _torch_loader),
        ("torch._tensor", "Tensor.backward", "backward"),
        ("torch.optim.optimizer", "torch", _torch_steps),
    ],
}


class _Finder(importlib.abc.MetaPathFinder):
    """Wraps a target module's loader so its targets are wrapped as soon as
    the module has run."""

    def __init__(self, by_module):
        self.by_module = by_module

    def find_spec(self, fullname, path, target=None):
        targets = self.by_module.get(fullname)
        if not targets:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        exec_module = loader.exec_module

        def exec_and_wrap(module):
            exec_module(module)
            for qualname, name in targets:
                _wrap(module, qualname, name)

        loader.exec_module = exec_and_wrap
        return spec


def install():
    """Wraps every target named in ``STAGEBENCH_SPAN_TARGETS``."""
    raw = os.environ.get(_TARGETS)
    if not raw:
        return
    by_module = {}
    for t in json.loads(raw):
        if "preset" in t:
            for module, qualname, name in _PRESETS[t["preset"]]:
                by_module.setdefault(module, []).append((qualname, name))
        else:
            by_module.setdefault(t["module"], []).append((t["qualname"], t["name"]))
    for module in list(by_module):
        if module in sys.modules:
            for qualname, name in by_module.pop(module):
                _wrap(sys.modules[module], qualname, name)
    if by_module:
        sys.meta_path.insert(0, _Finder(by_module))
