"""A command that reports its own inner spans to stagebench (tests/tests/commands.rs).

Appends to the file named by STAGEBENCH_SPANS one JSON object per span; the
seconds are fixed, so the test can check exactly what reaches the report.
"""
import json
import os

with open(os.environ["STAGEBENCH_SPANS"], "a") as f:
    for name, seconds in [("load", 0.5), ("adapt_images", 54.7), ("load", 0.25)]:
        f.write(json.dumps({"name": name, "seconds": seconds}) + "\n")
