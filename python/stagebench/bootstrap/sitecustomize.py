"""Put on PYTHONPATH by a stagebench worker for every command: imports the
helper, which reports at exit the interpreter, the libraries, devices and
own sources the program imported; with ``--span``, wraps the named
functions as spans (``stagebench.autospan``); then runs the
``sitecustomize`` the user would have had without it, if any."""

import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))

try:
    if os.environ.get("STAGEBENCH_SPAN_TARGETS"):
        from stagebench import autospan

        autospan.start()
    else:
        import stagebench  # noqa: F401 - its exit handler reports the runtime
except Exception as _e:  # noqa: BLE001 - the program runs whatever we make of its targets
    try:
        from stagebench._sink import append

        append({"refused": "--span", "why": "%s: %s" % (type(_e).__name__, _e)})
    except Exception:  # noqa: BLE001
        pass
finally:
    import importlib.machinery
    import importlib.util

    _rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != _here]
    _spec = importlib.machinery.PathFinder.find_spec("sitecustomize", _rest)
    if _spec is not None and _spec.loader is not None:
        _theirs = importlib.util.module_from_spec(_spec)
        _spec.loader.exec_module(_theirs)
