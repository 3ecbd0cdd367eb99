"""The helper on its own: lines as stagebench reads them, from threads and
forked children, and silence outside stagebench. (Through stagebench itself:
tests/tests/python_helper.rs.)"""

import json
import time
import os
import tempfile
import threading
import unittest

import stagebench


class Helper(unittest.TestCase):
    def setUp(self):
        fd, self.path = tempfile.mkstemp()
        os.close(fd)
        os.environ["STAGEBENCH_SPANS"] = self.path

    def tearDown(self):
        os.environ.pop("STAGEBENCH_SPANS", None)
        os.unlink(self.path)

    def lines(self):
        with open(self.path) as f:
            return [json.loads(line) for line in f]

    def test_a_span_a_decorated_call_and_progress_are_one_line_each(self):
        with stagebench.span("load"):
            pass

        @stagebench.spanned("fit")
        def fit(x):
            return x * 2

        self.assertEqual(fit(21), 42)
        self.assertEqual(fit.__name__, "fit")
        stagebench.progress(0.5)
        got = self.lines()
        self.assertEqual([g.get("name", g.get("progress")) for g in got], ["load", "fit", 0.5])
        self.assertTrue(all(g["seconds"] >= 0 for g in got[:2]))
        # Each span says when it began on the monotonic clock, in order.
        self.assertTrue(got[0]["start"] <= got[1]["start"] <= time.monotonic())

    def test_at_exit_one_runtime_line_names_the_interpreter_and_imported_libraries(self):
        import subprocess
        import sys

        # A process that imports the helper and json (standard library: no
        # distribution), under stagebench, and one outside it.
        code = "import json, stagebench"
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        subprocess.run([sys.executable, "-c", code], env=env, check=True)
        got = self.lines()
        self.assertEqual(len(got), 1, got)
        runtime = got[0]["runtime"]
        self.assertEqual(runtime["python"], "%d.%d.%d" % sys.version_info[:3])
        self.assertNotIn("json", runtime["distributions"])
        installed = stagebench.__file__ and "site-packages" in stagebench.__file__
        if installed:
            self.assertEqual(runtime["distributions"].get("stagebench"), stagebench.__version__)
        for name, version in runtime["distributions"].items():
            self.assertRegex(name + version, r"\A[A-Za-z0-9_.+!-]+\Z")
        del env["STAGEBENCH_SPANS"]
        subprocess.run([sys.executable, "-c", code], env=env, check=True)
        self.assertEqual(len(self.lines()), 1, "outside stagebench, nothing at exit")

    def test_a_span_that_raises_is_still_reported(self):
        with self.assertRaises(KeyError):
            with stagebench.span("boom"):
                raise KeyError("x")
        self.assertEqual(self.lines()[0]["name"], "boom")

    def test_threads_and_a_forked_child_never_interleave(self):
        def many():
            for _ in range(200):
                with stagebench.span("thread"):
                    pass

        threads = [threading.Thread(target=many) for _ in range(4)]
        for t in threads:
            t.start()
        pid = os.fork()
        if pid == 0:
            for _ in range(200):
                with stagebench.span("child"):
                    pass
            os._exit(0)
        for t in threads:
            t.join()
        _, status = os.waitpid(pid, 0)
        self.assertEqual(status, 0)
        names = [g["name"] for g in self.lines()]
        self.assertEqual(names.count("thread"), 800)
        self.assertEqual(names.count("child"), 200)

    def test_bad_names_and_progress_are_refused(self):
        for bad in ["", "x" * 65, "a/b", "with space", None]:
            with self.assertRaises(ValueError):
                stagebench.span(bad)
        for bad in [-0.1, 1.5, float("nan"), float("inf")]:
            with self.assertRaises(ValueError):
                stagebench.progress(bad)
        self.assertEqual(self.lines(), [])

    def test_outside_stagebench_every_call_is_a_silent_no_op(self):
        del os.environ["STAGEBENCH_SPANS"]
        self.assertFalse(stagebench.active())
        with stagebench.span("quiet"):
            pass
        stagebench.progress(1.0)
        self.assertEqual(self.lines(), [])


if __name__ == "__main__":
    unittest.main()


class Serve(unittest.TestCase):
    """`serve` as a worker sees it: a child process speaking the item
    protocol over two pipes (docs/item-protocol.md)."""

    PROGRAM = (
        "import os, stagebench\n"
        "def prepare(item, out):\n"
        "    if item == 'bad':\n"
        "        raise ValueError('no good')\n"
        "    with open(os.path.join(out, item), 'w') as f:\n"
        "        f.write(item)\n"
        "stagebench.serve(prepare)\n"
    )

    def start(self):
        import subprocess
        import sys

        items_r, self.items_w = os.pipe()
        self.answers_r, answers_w = os.pipe()
        env = dict(os.environ, STAGEBENCH_ITEMS_FD=str(items_r), STAGEBENCH_ANSWERS_FD=str(answers_w))
        env.pop("STAGEBENCH_SPANS", None)
        self.child = subprocess.Popen(
            [sys.executable, "-c", self.PROGRAM], env=env, pass_fds=(items_r, answers_w),
            stderr=subprocess.PIPE,
        )
        os.close(items_r)
        os.close(answers_w)
        self.answers = os.fdopen(self.answers_r, "rb")
        self.addCleanup(self.answers.close)
        self.addCleanup(self.child.stderr.close)

    def answer(self):
        return json.loads(self.answers.readline())

    def test_items_are_answered_in_turn_and_the_end_of_input_ends_the_program(self):
        self.start()
        out = tempfile.mkdtemp()
        self.assertEqual(self.answer(), {"ready": True})
        for item in ["a", "bad", "c"]:
            os.write(self.items_w, (json.dumps({"item": item, "out": out}) + "\n").encode())
            got = self.answer()
            if item == "bad":
                self.assertEqual(got, {"error": "ValueError: no good"})
            else:
                self.assertEqual(got, {"done": item})
        os.close(self.items_w)
        _, err = self.child.communicate(timeout=30)
        self.assertEqual(self.child.returncode, 0)
        self.assertIn(b"ValueError: no good", err, "the traceback goes to stderr")
        self.assertEqual(sorted(os.listdir(out)), ["a", "c"])
        self.assertEqual(self.answers.read(), b"", "nothing after the last answer")

    def test_outside_stagebench_serve_says_so(self):
        os.environ.pop("STAGEBENCH_ITEMS_FD", None)
        with self.assertRaises(RuntimeError) as e:
            stagebench.serve(lambda item, out: None)
        self.assertIn("--prepare", str(e.exception))
