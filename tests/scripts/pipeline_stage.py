"""One stage of a small external pipeline (tests/tests/campaign.rs).

Usage: pipeline_stage.py NAME SCRATCH [PREVIOUS]. Reads SCRATCH/PREVIOUS/out.txt
when given, writes SCRATCH/NAME/out.txt (deterministic), reports two inner
spans to STAGEBENCH_SPANS, and writes its completion marker last.
"""
import json
import os
import sys
import time

name, scratch = sys.argv[1], sys.argv[2]
previous = sys.argv[3] if len(sys.argv) > 3 else None
spans = []

t = time.monotonic()
data = ""
if previous:
    with open(os.path.join(scratch, previous, "out.txt")) as f:
        data = f.read()
spans.append(("read_input", time.monotonic() - t))

t = time.monotonic()
out = os.path.join(scratch, name)
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "out.txt"), "w") as f:
    f.write(data + name + ":" + os.environ.get("STAGE_FLAVOUR", "plain") + "\n")
spans.append(("compute_" + name, time.monotonic() - t))

with open(os.environ["STAGEBENCH_SPANS"], "a") as f:
    for span, seconds in spans:
        f.write(json.dumps({"name": span, "seconds": seconds}) + "\n")
with open(os.path.join(out, "done"), "w") as f:
    f.write("complete\n")
