"""A small Keras 3 training script in seed 000's shape, with no stagebench in
it: prepare windows of a two-channel sleep signal (anglez, enmo, as the CMI
"Detect Sleep States" series have), a ``PyDataset`` loader that computes
each batch's features on the fly, a Conv1D model, ``fit`` and ``evaluate``.

The backend is Keras's own choice (``KERAS_BACKEND``: jax, tensorflow or
torch). ``--loader-work N`` repeats the loader's per-batch feature work N
times: with the default it is the bottleneck; ``--loader-work 0`` is the
control. Each stage is a function of its own (``prepare``, ``build``,
``loader``, ``fit``, ``evaluate``), so stagebench can name them without an
edit (the imports run before the first):

    coordinator --mode trials --command 'python3 examples/keras/train.py' \\
        --span preset:keras --span __main__:fit=fit:stage ...

``--truth FILE`` makes the script time itself (its own clock, as a user
would check a tool): every ``__getitem__``, every train step (a callback
from batch begin to batch end), and each stage's wall, CPU and lifetime
peak RSS from ``getrusage``; written as JSON at the end. It is for tests:
the callback is a synchronisation point of its own.
"""

import argparse
import json
import os
import resource
import time

import numpy as np

os.environ.setdefault("KERAS_BACKEND", "jax")
import keras  # noqa: E402 - after the backend's default is set

CHANNELS = 2
LENGTH = 256


def args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--windows", type=int, default=4096, help="windows to prepare")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--loader-work", type=int, default=12, help="feature passes per batch")
    p.add_argument("--width", type=int, default=32, help="filters per Conv1D layer")
    p.add_argument("--workers", type=int, default=1, help="PyDataset workers")
    p.add_argument("--multiprocessing", action="store_true", help="PyDataset worker processes")
    p.add_argument("--truth", help="write the script's own timings here (JSON)")
    return p.parse_args()


def prepare(n):
    """Synthetic nights: a smoothed random walk of the arm's angle and its
    movement, asleep where movement stays low; one label per window."""
    rng = np.random.default_rng(0)
    raw = rng.normal(size=(n, LENGTH, CHANNELS)).astype("float32")
    kernel = np.ones(16, dtype="float32") / 16
    for c in range(CHANNELS):
        raw[:, :, c] = np.apply_along_axis(lambda r: np.convolve(r, kernel, "same"), 1, raw[:, :, c])
    asleep = (np.abs(raw[:, :, 1]).mean(axis=1) < np.median(np.abs(raw[:, :, 1]).mean(axis=1)))
    return raw, asleep.astype("float32")


def features(windows, passes):
    """Each window's signal with rolling means and spreads at several
    scales, recomputed ``passes`` times (the loader's per-batch work)."""
    if not passes:
        return np.concatenate([windows] * 7, axis=2)
    for _ in range(passes):
        parts = [windows]
        for w in (5, 11, 21):
            k = np.ones(w, dtype="float32") / w
            mean = np.apply_along_axis(lambda r: np.convolve(r, k, "same"), 1, windows)
            sq = np.apply_along_axis(lambda r: np.convolve(r, k, "same"), 1, windows * windows)
            parts.append(mean)
            parts.append(np.sqrt(np.maximum(sq - mean * mean, 0)))
        out = np.concatenate(parts, axis=2)
    return out


def loader(raw, labels, batch, passes, workers, multiprocessing, clock):
    class Batches(keras.utils.PyDataset):
        def __init__(self, **kw):
            super().__init__(**kw)

        def __len__(self):
            return len(raw) // batch

        def __getitem__(self, i):
            start = time.perf_counter()
            s = slice(i * batch, (i + 1) * batch)
            out = features(raw[s], passes), labels[s]
            if clock is not None:
                clock["produce"].append(time.perf_counter() - start)
            return out

    return Batches(workers=workers, use_multiprocessing=multiprocessing)


def build(width):
    model = keras.Sequential(
        [
            keras.Input((LENGTH, CHANNELS * 7)),
            keras.layers.Conv1D(width, 7, activation="relu"),
            keras.layers.MaxPooling1D(4),
            keras.layers.Conv1D(width, 5, activation="relu"),
            keras.layers.GlobalAveragePooling1D(),
            keras.layers.Dense(1, activation="sigmoid"),
        ]
    )
    model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
    return model


def fit(model, data, epochs, clock):
    callbacks = []
    if clock is not None:

        class Steps(keras.callbacks.Callback):
            def on_train_batch_begin(self, batch, logs=None):
                self.began = time.perf_counter()

            def on_train_batch_end(self, batch, logs=None):
                clock["steps"].append(time.perf_counter() - self.began)

        callbacks.append(Steps())
    model.fit(data, epochs=epochs, verbose=0, callbacks=callbacks)


def evaluate(model, data):
    return model.evaluate(data, verbose=0, return_dict=True)


def main():
    a = args()
    clock = {"produce": [], "steps": [], "stages": {}} if a.truth else None

    def stage(name, fn, *rest):
        before, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        out = fn(*rest)
        after, t1 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        if clock is not None:
            clock["stages"][name] = {
                "wall_s": t1 - t0,
                "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
                "maxrss_bytes": after.ru_maxrss * 1024,
            }
        return out

    raw, labels = stage("prepare", prepare, a.windows)
    model = stage("build", build, a.width)
    data = stage(
        "loader", loader, raw, labels, a.batch, a.loader_work, a.workers, a.multiprocessing, clock
    )
    stage("fit", fit, model, data, a.epochs, clock)
    result = stage("evaluate", evaluate, model, data)
    print(json.dumps({k: round(float(v), 6) for k, v in sorted(result.items())}))
    if a.truth:
        with open(a.truth, "w") as f:
            json.dump(clock, f)


if __name__ == "__main__":
    main()
