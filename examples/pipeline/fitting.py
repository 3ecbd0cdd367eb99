"""One stage of a small three-stage fitting chain, shaped like the seed's
SLaM pipeline: each stage loads the previous stage's samples, recomputes a
max-likelihood fit from them, runs its own (expensive) search unless a
completion marker says it already finished, and draws a summary.

This file is the chain's work and knows nothing of stagebench. Two ways to
run a stage, with the same results:

  chain.py STAGE SCRATCH   reports spans and progress with the stagebench
                           helper (the code calls it)
  plain.py STAGE SCRATCH   calls nothing: a campaign names the functions to
                           time in its file (``spans = ["fitting:search_fit"]``)

Stages: source, light, mass. On a resume the searches that finished are
skipped, while loading, the max-likelihood recompute and the drawing run
again: the inter-stage work a resume repeats. Everything it writes is
deterministic, so a resumed chain leaves the cold chain's files byte for
byte.
"""

import json
import math
import os
import random

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


def samples_load(i, scratch):
    """The previous stage's samples (the source stage draws its own)."""
    if i == 0:
        rng = random.Random(7)
        return [rng.gauss(1.0, 0.5) for _ in range(50)]
    with open(os.path.join(scratch, ORDER[i - 1], "samples.json")) as f:
        return [s[0] for s in json.load(f)["samples"]][:50]


def max_lh_fit_recompute(i, data):
    fit, _ = evaluate(random.Random(i), data, RECOMPUTE_UNITS)
    return fit


def search_fit(i, data, report=None):
    _, samples = evaluate(random.Random(100 + i), data, SEARCH_UNITS, report)
    return samples


def visualise(stage, here):
    with open(os.path.join(here, "samples.json")) as f:
        samples = json.load(f)["samples"]
    rows = ["%s %.6f %.6f" % (stage, s[0], s[1]) for s in samples]
    write_atomically(os.path.join(here, "summary.txt"), "\n".join(rows) + "\n")


def main(argv, report=None):
    """Runs stage argv[0] in scratch directory argv[1]; `report(fraction)`
    hears the search's progress."""
    stage, scratch = argv[0], argv[1]
    here = os.path.join(scratch, stage)
    os.makedirs(here, exist_ok=True)
    i = ORDER.index(stage)
    data = samples_load(i, scratch)
    fit = max_lh_fit_recompute(i, data)
    done = os.path.join(here, "search.done")
    if not os.path.exists(done):
        samples = search_fit(i, data, report)
        text = json.dumps({"stage": stage, "start": fit, "samples": samples}, sort_keys=True)
        write_atomically(os.path.join(here, "samples.json"), text)
        write_atomically(done, "complete\n")
    visualise(stage, here)
