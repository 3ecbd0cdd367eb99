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
