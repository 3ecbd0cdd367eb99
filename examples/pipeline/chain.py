"""A stage of the fitting chain (fitting.py) that reports its spans and
progress with the `stagebench` helper (python/ in this repository): each of
the chain's four steps is a span, and the search reports its progress.
Outside stagebench they cost nothing.

Usage: chain.py STAGE SCRATCH
"""

import os
import sys

try:
    import stagebench
except ImportError:  # run from a checkout without `pip install ./python`
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
    import stagebench

import fitting

for name in ("samples_load", "max_lh_fit_recompute", "search_fit", "visualise"):
    setattr(fitting, name, stagebench.spanned(name)(getattr(fitting, name)))

if __name__ == "__main__":
    fitting.main(sys.argv[1:], report=stagebench.progress)
