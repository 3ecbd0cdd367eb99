"""The tally layout, named once: where each figure sits in a span name's
tally and in a thread's state. Both are Python lists, for speed; the
Python path (``_spans``, ``_wrap``) and the compiled one (``_fast.c``, whose
``#define``\\ s a test holds to these names and values) index them by these
names. A compiled part of another :data:`LAYOUT` is not used.

Nothing here imports anything: it is the helper's lowest floor.
"""

# Bumped with any change below; _fast.c's LAYOUT must equal it.
LAYOUT = 1

# A span name's tally (``_spans.tally``).
CALLS = 0  # calls counted
SUM = 1  # their inclusive nanoseconds
SELF = 2  # their self nanoseconds (minus the spans inside them)
MIN = 3  # the shortest call
MAX = 4  # the longest call
FIRST_NS = 5  # the first call's nanoseconds
FIRST_AT = 6  # the first call's start
HIST = 7  # the histogram, a list by bucket
BESIDE = 8  # nanoseconds beside the thread's own spans
OPEN = 9  # a call of it is open now
CHILDREN = 10  # the open call's children's nanoseconds
NAME = 11  # the span's name
PARENT = 12  # the enclosing open tally, or None
START = 13  # the open call's start (where _fast times it)
TALLY_SIZE = 14

# A thread's state (``_spans.thread``).
T_INNER = 0  # the innermost open span's tally, or None
T_ID = 1  # the thread's id
T_TALLIES = 2  # tallies by name
T_MAIN = 3  # the main thread of a process not forked from another
T_TOP_NS = 4  # nanoseconds in top-level spans
T_TOP_FIRST = 5  # the first top-level start, or None
T_TOP_LAST = 6  # the last top-level end, or None
T_FLUSH_AT = 7  # when it next writes its tally
STATE_SIZE = 8
