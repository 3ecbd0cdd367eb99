"""One stage of a small three-stage fitting chain, shaped like the seed's
SLaM pipeline: each stage loads the previous stage's samples, recomputes a
max-likelihood fit from them, runs its own (expensive) search unless a
completion marker says it already finished, and draws a summary.

Usage: chain.py STAGE SCRATCH

Stages: source, light, mass. On a resume the searches that finished are
skipped, while loading, the max-likelihood recompute and the drawing run
again: the inter-stage work a resume repeats. Everything it writes is
deterministic, so a resumed chain leaves the cold chain's files byte for
byte. It reports spans and progress with the `stagebench` helper
(python/ in this repository); outside stagebench they cost nothing.
"""

import json
import math
import os
import random
import sys

try:
    import stagebench
except ImportError:  # run from a checkout without `pip install ./python`
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
    import stagebench

ORDER = ["source", "light", "mass"]
# Work per stage, in units of 10 000 likelihood evaluations.
SEARCH_UNITS = 200
RECOMPUTE_UNITS = 50


def likelihood(params, data):
    """A Gaussian log-likelihood of the data under (mean, log sigma)."""
    mean, log_sigma = params
    sigma = math.exp(log_sigma)
    return sum(-0.5 * ((x - mean) / sigma) ** 2 - log_sigma for x in data)


def evaluate(rng, data, units, report=None):
    """`units` batches of random proposals; the best one and its samples."""
    best, best_l, samples = (0.0, 0.0), -math.inf, []
    for u in range(units):
        for _ in range(10000 // len(data)):
            p = (rng.uniform(-2, 4), rng.uniform(-1, 1))
            l = likelihood(p, data)
            if l > best_l:
                best, best_l = p, l
        samples.append([round(best[0], 12), round(best[1], 12), round(best_l, 9)])
        if report:
            report((u + 1) / units)
    return best, samples


def write_atomically(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def main():
    stage, scratch = sys.argv[1], sys.argv[2]
    here = os.path.join(scratch, stage)
    os.makedirs(here, exist_ok=True)
    i = ORDER.index(stage)
    with stagebench.span("samples_load"):
        if i == 0:
            rng = random.Random(7)
            data = [rng.gauss(1.0, 0.5) for _ in range(50)]
        else:
            with open(os.path.join(scratch, ORDER[i - 1], "samples.json")) as f:
                data = [s[0] for s in json.load(f)["samples"]][:50]
    with stagebench.span("max_lh_fit_recompute"):
        fit, _ = evaluate(random.Random(i), data, RECOMPUTE_UNITS)
    done = os.path.join(here, "search.done")
    if not os.path.exists(done):
        with stagebench.span("search_fit"):
            _, samples = evaluate(random.Random(100 + i), data, SEARCH_UNITS, stagebench.progress)
            text = json.dumps({"stage": stage, "start": fit, "samples": samples}, sort_keys=True)
            write_atomically(os.path.join(here, "samples.json"), text)
        write_atomically(done, "complete\n")
    with stagebench.span("visualise"):
        with open(os.path.join(here, "samples.json")) as f:
            samples = json.load(f)["samples"]
        rows = ["%s %.6f %.6f" % (stage, s[0], s[1]) for s in samples]
        write_atomically(os.path.join(here, "summary.txt"), "\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
