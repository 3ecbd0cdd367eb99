"""A stage that loses its finished work when killed while writing it, as
autofit does with a truncated zip: `python3 fragile_chain.py STAGE SCRATCH`.

It writes its result in two halves (a span ends after the first), and on
every run first restores what it finds: a result without its end line is
unreadable, and the restore fails (exit 1), so a resume after a kill
between the halves crashes. Without a kill it runs cold and resumes.
"""

import os
import sys
import time

import stagebench

stage, scratch = sys.argv[1], sys.argv[2]
out = os.path.join(scratch, stage)
os.makedirs(out, exist_ok=True)
result = os.path.join(out, "result.txt")


@stagebench.spanned("restore")
def restore():
    with open(result) as f:
        text = f.read()
    if not text.endswith("end\n"):
        raise ValueError("result.txt is truncated: cannot restore " + stage)
    return text


@stagebench.spanned("search")
def search():
    time.sleep(0.2)


if os.path.exists(result):
    restore()
else:
    search()
    with open(result, "w") as f:
        with stagebench.span("half_written"):
            f.write(stage + "\n")
            f.flush()
        time.sleep(0.3)
        f.write("end\n")
