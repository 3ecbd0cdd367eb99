"""The spans a preset installs (``--span preset:NAME``): what a framework's
own loop does, timed where the framework does it, with no change to the
user's code.

``PRESETS`` maps a preset to ``(module, qualname, installer)`` entries: each
installer runs when its module has been imported (see
:mod:`stagebench.autospan`), and raises :class:`_wrap.Refused`, with the
reason, when the module has not what it hooks (another version).

``preset:torch`` (PyTorch's DataLoader and optimizers):

- ``loader_start``: the first ``next()`` of a DataLoader iterator (it also
  starts the loader's workers); ``loader_wait``: every later ``next()`` that
  returns a batch; ``loader_stop``: the ``next()`` that ends an epoch (it
  waits for the workers to stop); ``step``: from a batch's arrival to the
  next ``next()`` on the same thread; ``backward``; ``optimizer_step``: the
  whole call, PyTorch's own profiler block and hooks included.

``preset:keras`` (Keras 3, on the JAX, TensorFlow and torch backends):

- ``train_step``: each call of the per-step function the trainer builds
  (``make_train_function``), one batch or ``steps_per_execution`` batches;
  its first call, which traces and compiles it, is ``first_step``.
  ``eval_step``/``first_eval_step`` and ``predict_step``/
  ``first_predict_step`` likewise.
- On JAX, a step's span ends when its outputs are ready
  (``jax.block_until_ready``): JAX dispatches asynchronously, and a step
  timed to its return would look free while its work lands in the next
  one. The outputs are what the trainer itself reads next; waiting for
  them changes no value, only whether the next batch's loading on the
  main thread overlaps this step.
- ``loader_produce``: each ``PyDataset.__getitem__`` (any subclass) and
  each batch a generator yields, in whichever thread or process makes it.
- ``loader_wait``: on JAX, each ``next()`` the train step function makes
  on the batch iterator, inside ``train_step`` (the first step's is
  ``loader_start``; an eval step's ``eval_loader_wait``, a predict step's
  ``predict_loader_wait``); on torch, each ``next()`` of the epoch
  iterator, fit's, evaluate's and predict's alike.
  TensorFlow pulls batches inside its compiled graph, where Python sees no
  wait: there the verdict is estimated from a resident reference.
- ``resident_step`` (with ``STAGEBENCH_KERAS_RESIDENT=N``, set by
  ``--keras-resident N``): at exit, N ``train_on_batch`` steps of the last
  fitted model on the last batch it was given, already in memory; the
  first is ``first_resident_step``. Every variable of the model, its
  optimizer and its metrics is restored afterwards, so what the program
  saved or printed is what it would have without them.
"""

import atexit
import functools
import os
import threading

from stagebench import _sink, _spans
from stagebench._wrap import Refused, timed

# The builtins this module calls, bound as they are at import: a program's
# `--span builtins:NAME` replaces one, and the helper must neither call
# that span (a recursion) nor be counted as the program (`TheHelpersOwnCalls`
# in python/tests).
from builtins import (  # noqa: A004
    classmethod,
    getattr,
    hasattr,
    id,
    int,
    isinstance,
    iter,
    list,
    max,
    next,
    range,
    set,
    setattr,
    super,
    tuple,
    type,
    vars,
)


# ---------------------------------------------------------------- torch


def _torch_steps(module):
    """Every optimizer's whole ``step`` call is a span ``optimizer_step``:
    PyTorch wraps each optimizer class's ``step`` once, when its first
    instance is made (``_patch_step_function``: a profiler block that runs
    the step hooks around it); the preset wraps that wrapper, so the span
    holds the block's own cost too (its hooks, timed from inside, missed
    0.25 to 0.9 ms a call). A subclass's ``step`` calling its parent's is
    one call."""
    cls = getattr(module, "Optimizer", None)
    patch = getattr(cls, "_patch_step_function", None)
    if patch is None:
        raise Refused("torch: %s has no Optimizer._patch_step_function" % module.__name__)

    @functools.wraps(patch)
    def _patch_step_function(self):
        patch(self)
        klass = self.__class__
        step = klass.step
        if not getattr(step, "__stagebench_span__", False):
            wrapped = timed(step, "optimizer_step")
            wrapped.hooked = True
            klass.step = wrapped

    cls._patch_step_function = _patch_step_function


def _torch_loader(module):
    """Each ``next()`` on a DataLoader iterator that returns a batch is a
    span ``loader_wait``, except an iterator's first, which also starts its
    worker processes: ``loader_start``. The time from one batch's arrival to
    the next ``next()`` on the same thread (what the loop did with the
    batch) is a span ``step``, with the loop's own spans inside it. The
    input-wait fraction is loader_wait / (loader_wait + step): the steady
    state, start-up apart."""
    cls = module._BaseDataLoaderIter
    original = cls.__next__
    local = threading.local()

    @functools.wraps(original)
    def __next__(self):
        t = _spans.thread()
        step = getattr(local, "step", None)
        if step is not None:
            s, start = step
            if s is not None:
                _spans.end(t, s, start, _spans.now() - start)
            local.step = None
        first = not getattr(self, "_stagebench_started", False)
        name = "loader_start" if first else "loader_wait"
        s = _spans.begin(t, name)
        start = _spans.now()
        try:
            batch = original(self)
        except StopIteration:
            # The call that ends an epoch returns no batch: it waits for the
            # loader's workers to stop, a span of its own (``loader_stop``).
            if s is not None:
                _spans.cancel(t, s)
                stop = _spans.begin(t, "loader_stop")
                if stop is not None:
                    _spans.end(t, stop, start, _spans.now() - start)
            raise
        except BaseException:
            if s is not None:
                _spans.cancel(t, s)
            raise
        done = _spans.now()
        self._stagebench_started = True
        if s is not None:
            _spans.end(t, s, start, done - start)
        local.step = (_spans.begin(t, "step"), done)
        return batch

    cls.__next__ = __next__


# ---------------------------------------------------------------- keras

# The trainer's maker, the attribute it sets, the step's span, its first
# call's, and (JAX) the waits for a batch inside them.
_KERAS_STEPS = (
    ("make_train_function", "train_function", "train_step", "first_step", "loader_wait", "loader_start"),
    (
        "make_test_function",
        "test_function",
        "eval_step",
        "first_eval_step",
        "eval_loader_wait",
        "eval_loader_start",
    ),
    (
        "make_predict_function",
        "predict_function",
        "predict_step",
        "first_predict_step",
        "predict_loader_wait",
        "predict_loader_start",
    ),
)
_RESIDENT = "STAGEBENCH_KERAS_RESIDENT"
# What the resident reference needs: the last model fitted, the last batch
# it was given, and whether a resident step is running (its train_function
# calls are then not the fit's).
_keras = {"model": None, "batch": None, "resident": False}


def _resident_steps():
    try:
        n = int(os.environ.get(_RESIDENT, "0"))
    except ValueError:
        return 0
    return max(n, 0)


def _timed_call(name, fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` timed as a span ``name``; a call that raises
    is not counted (the step that found the data exhausted ran no step)."""
    t = _spans.thread()
    s = _spans.begin(t, name)
    start = _spans.now()
    try:
        return fn(*args, **kwargs)
    except BaseException:
        if s is not None:
            _spans.cancel(t, s)
            s = None
        raise
    finally:
        if s is not None:
            _spans.end(t, s, start, _spans.now() - start)


def _batch(name, fn, *args):
    """``fn(*args)``, a call that gives a batch, timed as ``name``; the
    batch kept for the resident reference while one is wanted."""
    batch = _timed_call(name, fn, *args)
    if _keras["model"] is not None:
        _keras["batch"] = batch
    return batch


class _Waited:
    """A batch iterator whose every ``next()`` is a span (the step
    function's wait for its batch, on JAX)."""

    __slots__ = ("_it", "_name")

    def __init__(self, it, name):
        self._it = it
        self._name = name

    def __iter__(self):
        return self

    def __next__(self):
        return _batch(self._name, next, self._it)


def _keras_step(fn, names, backend):
    """The trainer's step function ``fn`` timed: its first call
    ``names[1]``, the rest ``names[0]``; on JAX the waits for a batch
    inside them ``names[3]`` and ``names[2]``."""
    name, first_name, wait, first_wait = names
    state = {"first": True}
    sync = None
    if backend == "jax":
        import jax

        sync = jax.block_until_ready

    @functools.wraps(fn)
    def step(*args, **kwargs):
        if _keras["resident"]:
            return fn(*args, **kwargs)
        first = state["first"]
        state["first"] = False
        if backend == "jax" and args and hasattr(args[-1], "__next__"):
            args = args[:-1] + (_Waited(args[-1], first_wait if first else wait),)
        if sync is None:
            return _timed_call(first_name if first else name, fn, *args, **kwargs)

        def synced():
            out = fn(*args, **kwargs)
            sync(out)
            return out

        # A call that raised (found the data exhausted) ran no step: uncounted.
        return _timed_call(first_name if first else name, synced)

    step.__stagebench_span__ = True
    return step


def _keras_trainer(module):
    """A backend's trainer: every step function it makes is timed."""
    backend = module.__name__.split(".")[-2]
    cls = next(
        (
            c
            for c in vars(module).values()
            if isinstance(c, type) and "make_train_function" in c.__dict__
        ),
        None,
    )
    if cls is None:
        raise Refused("keras: %s has no trainer with make_train_function" % module.__name__)
    for maker, attr, *names in _KERAS_STEPS:
        original = cls.__dict__.get(maker)
        if original is None:
            raise Refused("keras: %s has no %s" % (cls.__name__, maker))
        setattr(cls, maker, _keras_maker(original, attr, names, backend))


def _keras_maker(original, attr, names, backend):
    @functools.wraps(original)
    def make(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        fn = getattr(self, attr, None)
        if fn is not None and not getattr(fn, "__stagebench_span__", False):
            wrapped = _keras_step(fn, names, backend)
            setattr(self, attr, wrapped)
            if result is fn:
                result = wrapped
        if attr == "train_function" and _resident_steps():
            if _keras["model"] is None:
                atexit.register(_keras_resident)
            _keras["model"] = self
        return result

    return make


def _keras_produce(func):
    """A loader's ``__getitem__`` timed as ``loader_produce``; in a forked
    worker process each call's tally is written at once, for a pool's
    workers are ended by a signal, not by exit."""

    @functools.wraps(func)
    def __getitem__(self, index):
        batch = _batch("loader_produce", func, self, index)
        if _spans._process["forked"]:
            _spans.flush(_spans.thread())
        return batch

    __getitem__.__stagebench_span__ = True
    return __getitem__


def _keras_pydataset(module):
    """Every ``PyDataset`` subclass's own ``__getitem__``, those defined
    before and after this ran."""
    base = getattr(module, "PyDataset", None)
    if base is None:
        raise Refused("keras: %s has no PyDataset" % module.__name__)

    def wrap(cls):
        own = cls.__dict__.get("__getitem__")
        if own is not None and not getattr(own, "__stagebench_span__", False):
            cls.__getitem__ = _keras_produce(own)

    theirs = base.__dict__.get("__init_subclass__")

    def __init_subclass__(cls, **kwargs):
        if theirs is not None:
            theirs.__get__(None, cls)(**kwargs)
        else:
            super(base, cls).__init_subclass__(**kwargs)
        wrap(cls)

    base.__init_subclass__ = classmethod(__init_subclass__)
    todo = list(base.__subclasses__())
    while todo:
        cls = todo.pop()
        wrap(cls)
        todo.extend(cls.__subclasses__())


def _keras_generator(module):
    """Each batch a generator given to ``fit``/``evaluate``/``predict``
    yields is a span ``loader_produce``."""
    cls = getattr(module, "GeneratorDataAdapter", None)
    if cls is None or "__init__" not in cls.__dict__:
        raise Refused("keras: %s has no GeneratorDataAdapter" % module.__name__)
    original = cls.__init__

    def produced(generator):
        it = iter(generator)
        while True:
            try:
                batch = _batch("loader_produce", next, it)
            except StopIteration:
                return
            yield batch

    @functools.wraps(original)
    def __init__(self, generator, *args, **kwargs):
        original(self, produced(generator), *args, **kwargs)

    cls.__init__ = __init__


def _keras_epoch(module):
    """On torch, the trainer pulls each batch through the epoch iterator's
    ``__next__`` (JAX's and TensorFlow's iterators override it): each call
    is a ``loader_wait``."""
    cls = getattr(module, "EpochIterator", None)
    if cls is None or "__next__" not in cls.__dict__:
        raise Refused("keras: %s has no EpochIterator.__next__" % module.__name__)
    original = cls.__next__

    @functools.wraps(original)
    def __next__(self):
        first = not getattr(self, "_stagebench_started", False)
        self._stagebench_started = True
        return _timed_call("loader_start" if first else "loader_wait", original, self)

    cls.__next__ = __next__


def _keras_resident():
    """At exit: N ``train_on_batch`` steps of the last fitted model on the
    last batch it was given, every variable restored after."""
    model, batch, n = _keras["model"], _keras["batch"], _resident_steps()
    _keras["model"] = _keras["batch"] = None
    if model is None or batch is None or not n:
        return
    try:
        import keras
        import numpy as np

        x, y, weight = keras.utils.unpack_x_y_sample_weight(batch)
        if not isinstance(batch, tuple):
            x, y, weight = batch, None, None
        held = list(model.variables)
        optimizer = getattr(model, "optimizer", None)
        if optimizer is not None:
            held += list(optimizer.variables)
        held += list(getattr(model, "metrics_variables", []))
        seen, kept = set(), []
        for v in held:
            if id(v) not in seen:
                seen.add(id(v))
                kept.append((v, np.array(keras.ops.convert_to_numpy(v.value))))
        _keras["resident"] = True
        try:
            for i in range(n + 1):
                _timed_call(
                    "first_resident_step" if i == 0 else "resident_step",
                    model.train_on_batch,
                    x,
                    y,
                    sample_weight=weight,
                )
        finally:
            _keras["resident"] = False
            for v, value in kept:
                v.assign(value)
    except Exception as e:  # noqa: BLE001 - never break the program we measure
        _sink.append({"refused": "--keras-resident", "why": "%s: %s" % (type(e).__name__, e)})


# preset -> (module, qualname or preset name, span name or installer)
PRESETS = {
    "torch": [
        ("torch.utils.data.dataloader", "torch", _torch_loader),
        ("torch._tensor", "Tensor.backward", "backward"),
        ("torch.optim.optimizer", "torch", _torch_steps),
    ],
    "keras": [
        ("keras.src.backend.jax.trainer", "keras", _keras_trainer),
        ("keras.src.backend.tensorflow.trainer", "keras", _keras_trainer),
        ("keras.src.backend.torch.trainer", "keras", _keras_trainer),
        ("keras.src.trainers.data_adapters.py_dataset_adapter", "keras", _keras_pydataset),
        ("keras.src.trainers.data_adapters.generator_data_adapter", "keras", _keras_generator),
        ("keras.src.trainers.epoch_iterator", "keras", _keras_epoch),
    ],
}
