"""The item protocol's program side (docs/item-protocol.md): ``serve(fn)``
answers ready, then hands ``fn`` one item at a time from stagebench's pipe
and answers each, until stagebench closes it.
"""

import json
import os
import sys
import traceback

from stagebench import _spans
from stagebench._sink import encode

# The builtins this module calls, bound as they are at import: a program's
# `--span builtins:NAME` replaces one, and the helper must neither call
# that span (a recursion) nor be counted as the program (`TheHelpersOwnCalls`
# in python/tests).
from builtins import int, isinstance, memoryview, type  # noqa: A004

# os.write likewise: `--span os:write` times the program's writes, never the
# helper's answers.
_os_write = os.write

_ITEMS_FD = "STAGEBENCH_ITEMS_FD"
_ANSWERS_FD = "STAGEBENCH_ANSWERS_FD"


def serve(fn):
    """Serves items to ``fn(item_id, out_dir)`` until stagebench closes the
    input, then returns (exit 0 after it)::

        def prepare(item_id, out_dir):
            ...  # write this item's files below out_dir

        if __name__ == "__main__":
            stagebench.serve(prepare)

    Call it once your imports are done: the time until it says ready is the
    program's start-up, measured apart from the items. A function that
    raises answers ``error`` for its item (the traceback goes to stderr),
    and stagebench fails the run. Spans inside ``fn`` are the item's.
    Outside stagebench it raises ``RuntimeError``.
    """
    try:
        items_fd = int(os.environ[_ITEMS_FD])
        answers_fd = int(os.environ[_ANSWERS_FD])
    except (KeyError, ValueError):
        raise RuntimeError(
            "stagebench.serve: %s and %s are not set; this program is started by "
            "coordinator --mode cold-prep --prepare" % (_ITEMS_FD, _ANSWERS_FD)
        ) from None

    def answer(record):
        line = (encode(record) + "\n").encode()
        view = memoryview(line)
        while view:
            view = view[_os_write(answers_fd, view):]

    answer({"ready": True})
    with os.fdopen(items_fd, "rb", buffering=0) as raw:
        for line in _lines(raw):
            request = json.loads(line)
            item_id, out_dir = request["item"], request["out"]
            try:
                fn(item_id, out_dir)
            except BaseException as e:  # noqa: BLE001 - every failure is answered
                traceback.print_exc(file=sys.stderr)
                answer({"error": "%s: %s" % (type(e).__name__, e)})
                if not isinstance(e, Exception):
                    raise
                continue
            # The item's spans reach the file before its answer does.
            _spans.flush_all()
            answer({"done": item_id})
    os.close(answers_fd)


def _lines(raw):
    """Complete lines of an unbuffered pipe, as each arrives (a buffered
    reader would wait to fill its buffer before handing over an item)."""
    pending = b""
    while True:
        chunk = raw.read(65536)
        if not chunk:
            return
        pending += chunk
        *done, pending = pending.split(b"\n")
        for line in done:
            if line.strip():
                yield line
