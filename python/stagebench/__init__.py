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

# Only re-exports, each from the floor that owns it (_sink < _layout <
# _spans < _hooks < _runtime < _serve < _trampoline < _wrap < _api < _presets <
# autospan;
# scripts/check-floors.py rejects an import circle among them). Importing
# _runtime registers the runtime report at exit.
from stagebench._api import progress, span, spanned
from stagebench import _runtime  # noqa: F401 - its import registers the runtime report
from stagebench._serve import serve
from stagebench._sink import active

__all__ = ["span", "spanned", "progress", "active", "serve"]
__version__ = "0.1.0"
