"""A preparation program for `--prepare` that behaves as ITEM_MODE says
(tests/tests/cold_prep/items/). Every mode writes its pid into
ITEM_PIDS/ so the test can check that none outlived the run.

  ok              writes OUT/ID.txt (the id three times), with a span "work"
  clock           as ok, and for item ITEM_SPECIAL a file time.txt holding
                  the current time
  error           answers error for item ITEM_SPECIAL
  crash           exits 3 in the middle of its second item
  before_ready    exits 4 before it says ready
  never_ready     sleeps without saying ready
  wrong_id        answers done for another id
  malformed       answers a line that is not JSON
  leak            as ok, and starts `sleep 60` on its first item, left running
                  (its pid written to $ITEM_LEAK_PID_FILE, if set)
  touch_inputs    as ok, and writes a file into ITEM_INPUTS on its first item
  touch_items     as ok, and appends a line to the items file (ITEM_ITEMS) on
                  its first item
  stubborn        as ok, but does not exit when its input closes
  stray           as ok, and writes OUT/../stray.txt (beside its output
                  directory, in the run directory) on its first item
  empty_dir       as ok, and leaves an empty directory OUT/empty
  extra_done      as ok, and answers done once more after its last item
  hang            as ok, but never answers item ITEM_SPECIAL (sleeps 60 s)
  close_answers   says ready, closes its answers pipe, and stays alive 60 s
  hang_parallel   as ok, but never answers an item of the parallel phase
"""
import json
import os
import subprocess
import sys
import time

import stagebench

MODE = os.environ["ITEM_MODE"]
pids = os.environ.get("ITEM_PIDS")
if pids:
    open(os.path.join(pids, str(os.getpid())), "w").close()

answers = int(os.environ["STAGEBENCH_ANSWERS_FD"])


def say(line):
    os.write(answers, (line + "\n").encode())


if MODE == "before_ready":
    sys.exit(4)
if MODE == "never_ready":
    time.sleep(60)
    sys.exit(0)

seen = []


def prepare(item, out):
    seen.append(item)
    with stagebench.span("work"):
        with open(os.path.join(out, item + ".txt"), "w") as f:
            f.write(item * 3)
    if MODE == "clock" and item == os.environ["ITEM_SPECIAL"]:
        with open(os.path.join(out, "time.txt"), "w") as f:
            f.write(repr(time.time_ns()))
    if MODE == "error" and item == os.environ["ITEM_SPECIAL"]:
        raise ValueError("cannot prepare %s" % item)
    if MODE == "crash" and len(seen) == 2:
        os._exit(3)
    if MODE == "leak" and len(seen) == 1:
        sleeper = subprocess.Popen(["sleep", "60"], start_new_session=False)
        if os.environ.get("ITEM_LEAK_PID_FILE"):
            with open(os.environ["ITEM_LEAK_PID_FILE"], "w") as f:
                f.write(str(sleeper.pid))
    if MODE == "hang" and item == os.environ["ITEM_SPECIAL"]:
        time.sleep(60)
    if MODE == "hang_parallel" and out.rstrip("/").endswith("-parallel"):
        time.sleep(60)
    if MODE == "stray" and len(seen) == 1:
        with open(os.path.join(out, "..", "stray.txt"), "w") as f:
            f.write("mine")
    if MODE == "empty_dir":
        os.makedirs(os.path.join(out, "empty"), exist_ok=True)
    if MODE == "touch_items" and len(seen) == 1:
        with open(os.environ["ITEM_ITEMS"], "a") as f:
            f.write("added\t1\n")
    if MODE == "touch_inputs" and len(seen) == 1:
        with open(os.path.join(os.environ["ITEM_INPUTS"], "touched"), "w") as f:
            f.write("x")


if MODE == "close_answers":
    say('{"ready": true}')
    os.close(answers)
    time.sleep(60)
    sys.exit(0)

if MODE in ("wrong_id", "malformed"):
    say('{"ready": true}')
    items = os.fdopen(int(os.environ["STAGEBENCH_ITEMS_FD"]), "rb", buffering=0)
    items.read(1)
    say('{"done": "not-an-item-it-was-given"}' if MODE == "wrong_id" else "{not json")
    time.sleep(60)
    sys.exit(0)

extra = os.dup(answers) if MODE == "extra_done" else None
stagebench.serve(prepare)
if extra is not None:
    os.write(extra, b'{"done":"secret-a"}\n')
if MODE == "stubborn":
    time.sleep(60)
