"""Code run right after a module's own, when it is imported: a finder first
on ``sys.meta_path`` asks the others for the module's spec and makes its
loader call back once the module has run. ``--span`` wraps a target's
module so (``autospan``), and the runtime report registers itself again
after a framework's own exit handler (``_runtime``).
"""

import sys

# The builtins this module calls, bound as they are at import: a program's
# `--span builtins:NAME` replaces one, and the helper must neither call
# that span (a recursion) nor be counted as the program (`TheHelpersOwnCalls`
# in python/tests).
from builtins import hasattr  # noqa: A004


def after_import(finder, fullname, path, target, then):
    """The spec the other finders on ``sys.meta_path`` give ``fullname``,
    its loader made to call ``then(module)`` once the module has run; None
    when none finds it. (``finder`` is the caller, first on the path.)"""
    for other in sys.meta_path:
        if other is finder or not hasattr(other, "find_spec"):
            continue
        spec = other.find_spec(fullname, path, target)
        if spec is not None:
            break
    else:
        return None
    loader = spec.loader
    if loader is None or not hasattr(loader, "exec_module"):
        return spec
    exec_module = loader.exec_module

    def exec_then(module):
        exec_module(module)
        then(module)

    loader.exec_module = exec_then
    return spec
