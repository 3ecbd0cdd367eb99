"""An unmodified program whose functions tests time with `--span`
(tests/tests/pipelines/spans.rs): a function, a method, a classmethod, a
staticmethod, recursion, nesting, a forked child, a module imported late.
It never imports stagebench."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import autospan_lib as lib  # noqa: E402


def late():
    import autospan_late

    return autospan_late.work()


def main():
    lib.plain(3)
    lib.Shape().area()
    lib.Shape.make()
    lib.Shape.unit()
    lib.recurse(3)
    lib.outer()
    pid = os.fork()
    if pid == 0:
        lib.plain(1)
        os._exit(0)
    os.waitpid(pid, 0)
    assert late() == 42
    assert "stagebench" not in sys.modules or os.environ.get("STAGEBENCH_SPAN_TARGETS")


main()
