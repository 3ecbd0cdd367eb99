"""A command that reports through the `stagebench` Python helper
(tests/tests/pipelines/main.rs).

Usage:
  helper_user.py tree            a span from a thread, one from a forked child,
                                 one from the main process, and progress
  helper_user.py nest            a span "outer" holding two spans "inner"
  helper_user.py steps N PIDFILE starts a grandchild that sleeps (its pid in
                                 PIDFILE; PIDFILE.term if SIGTERM reached
                                 it), then N spans called "step", each
                                 followed by progress and a line in
                                 PIDFILE.steps, 50 ms apart
"""
import os
import sys
import threading
import time

import stagebench


def tree():
    def in_thread():
        with stagebench.span("from_thread"):
            time.sleep(0.01)

    t = threading.Thread(target=in_thread)
    t.start()
    pid = os.fork()
    if pid == 0:
        with stagebench.span("from_child"):
            time.sleep(0.01)
        os._exit(0)
    with stagebench.span("from_main"):
        time.sleep(0.02)
    t.join()
    os.waitpid(pid, 0)
    stagebench.progress(1.0)


def nest():
    with stagebench.span("outer"):
        for _ in range(2):
            with stagebench.span("inner"):
                time.sleep(0.01)


def steps(n, pidfile):
    import subprocess

    # A grandchild in a session of its own: only a tree kill reaches it. On
    # SIGTERM it leaves PIDFILE.term, so the test can tell SIGKILL from a
    # polite end.
    trap = (
        "import signal, sys, time\n"
        "def term(*_):\n"
        "    open(sys.argv[1], 'w').write('SIGTERM')\n"
        "    sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, term)\n"
        "time.sleep(300)\n"
    )
    sleeper = subprocess.Popen(
        [sys.executable, "-c", trap, pidfile + ".term"], start_new_session=True
    )
    with open(pidfile + ".tmp", "w") as f:
        f.write(str(sleeper.pid))
    os.replace(pidfile + ".tmp", pidfile)
    for i in range(n):
        with stagebench.span("step"):
            time.sleep(0.05)
        stagebench.progress((i + 1) / n)
        with open(pidfile + ".steps", "a") as f:
            f.write("%d\n" % (i + 1))
    # The grandchild is left running: the worker contains it (SIGTERM first).


if sys.argv[1] == "nest":
    nest()
elif sys.argv[1] == "tree":
    tree()
else:
    steps(int(sys.argv[2]), sys.argv[3])
