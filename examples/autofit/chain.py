"""A small PyAutoFit chain in seed 002's shape, with no stagebench in it:
two Dynesty searches of a 1D Gaussian, the second's priors from the
first's result, each followed by a max-likelihood recompute and a plot.

    python chain.py OUTPUT_DIR

autofit writes each search's output under OUTPUT_DIR and marks it
complete, so run again it loads each search's result instead of sampling,
and repeats the recomputes and plots: the resume a campaign measures
(campaign.toml names autofit's internals as spans; nothing here is edited
for it).
"""

import os
import sys

import numpy as np

import autofit as af
from autofit.example.analysis import Analysis
from autofit.example.model import Gaussian

out = sys.argv[1] if len(sys.argv) > 1 else "output"
af.conf.instance.output_path = os.path.abspath(out)

# The data: one Gaussian on 200 pixels with seeded noise.
rng = np.random.default_rng(1)
xs = np.arange(200)
truth = 25.0 * np.exp(-0.5 * ((xs - 110.0) / 12.0) ** 2)
noise_map = np.full(200, 1.0)
data = truth + rng.normal(0.0, 1.0, 200)
analysis = Analysis(data=data, noise_map=noise_map)


def max_lh_recompute(result):
    """The max-likelihood model's data and log likelihood, recomputed from
    the result (a pipeline does this between stages, cold or resumed)."""
    instance = result.max_log_likelihood_instance
    total = 0.0
    for _ in range(400):
        total = analysis.log_likelihood_function(instance=instance)
    return instance.model_data_from(xvalues=xs), total


def plot_fit(model_data, name):
    """The fit over the data, as a PNG beside the search's output."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3))
    ax.errorbar(xs, data, yerr=noise_map, fmt=".", color="0.6")
    ax.plot(xs, model_data, color="C1")
    fig.savefig(os.path.join(out, f"{name}.png"), dpi=80, metadata={"Software": None})
    plt.close(fig)


model = af.Model(Gaussian)
model.centre = af.UniformPrior(lower_limit=0.0, upper_limit=200.0)
model.normalization = af.LogUniformPrior(lower_limit=1e-2, upper_limit=1e2)
model.sigma = af.UniformPrior(lower_limit=0.5, upper_limit=50.0)
search = af.DynestyStatic(name="search_1", path_prefix="chain", nlive=60, maxcall=6000, silence=True)
result_1 = search.fit(model=model, analysis=analysis)
plot_fit(max_lh_recompute(result_1)[0], "search_1")

# The second search starts from the first's posterior.
model_2 = af.Model(Gaussian)
model_2.centre = result_1.model.centre
model_2.normalization = result_1.model.normalization
model_2.sigma = result_1.model.sigma
search_2 = af.DynestyStatic(name="search_2", path_prefix="chain", nlive=60, maxcall=6000, silence=True)
result_2 = search_2.fit(model=model_2, analysis=analysis)
model_data, log_l = max_lh_recompute(result_2)
plot_fit(model_data, "search_2")
print(f"centre {result_2.max_log_likelihood_instance.centre:.2f}, log L {log_l:.1f}")
