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


HERE = os.path.dirname(os.path.abspath(__file__))
BOOTSTRAP = os.path.join(HERE, "..", "stagebench", "bootstrap")


def tally(lines):
    """The agg lines merged per name, as the worker merges them: calls,
    sum, self, beside and main-thread self (ns), min, max, first, and the
    histogram's total."""
    out = {}
    for line in lines:
        agg = line.get("agg")
        if agg is None:
            continue
        for name, s in agg["spans"].items():
            t = out.setdefault(name, {"n": 0, "sum": 0, "self": 0, "main": 0, "beside": 0,
                                      "min": None, "max": 0, "first": None, "at": None, "h": 0})
            t["n"] += s["n"]
            t["sum"] += s["sum"]
            t["self"] += s["self"]
            t["beside"] += s["beside"]
            if agg["main"] and not agg["forked"]:
                t["main"] += s["self"] - s["beside"]
            t["min"] = s["min"] if t["min"] is None else min(t["min"], s["min"])
            t["max"] = max(t["max"], s["max"])
            if t["at"] is None or s["at"] < t["at"]:
                t["first"], t["at"] = s["first"], s["at"]
            t["h"] += sum(s["h"][1::2])
    return out


class Helper(unittest.TestCase):
    def setUp(self):
        # Whatever an earlier test left tallied goes nowhere.
        os.environ.pop("STAGEBENCH_SPANS", None)
        stagebench._spans.flush_all()
        fd, self.path = tempfile.mkstemp()
        os.close(fd)
        os.environ["STAGEBENCH_SPANS"] = self.path

    def tearDown(self):
        os.environ.pop("STAGEBENCH_SPANS", None)
        os.unlink(self.path)

    def lines(self, flush=True):
        if flush:
            stagebench._spans.flush_all()
        with open(self.path) as f:
            return [json.loads(line) for line in f]

    def test_spans_are_tallied_not_written_per_call_and_progress_is_one_line(self):
        with stagebench.span("load"):
            pass

        @stagebench.spanned("fit")
        def fit(x):
            return x * 2

        self.assertEqual(fit(21), 42)
        self.assertEqual(fit.__name__, "fit")
        stagebench.progress(0.5)
        self.assertEqual(self.lines(flush=False), [{"progress": 0.5}], "no line per span")
        got = tally(self.lines())
        self.assertEqual({k: v["n"] for k, v in got.items()}, {"load": 1, "fit": 1})
        # Each first call says when it began on the monotonic clock.
        self.assertTrue(got["load"]["at"] <= got["fit"]["at"] <= time.monotonic_ns())
        for v in got.values():
            self.assertEqual(v["h"], v["n"], "the histogram holds every call")

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

    def test_at_exit_a_script_reports_the_hashes_of_its_own_sources_by_module_name(self):
        import hashlib
        import subprocess
        import sys

        with tempfile.TemporaryDirectory() as project:
            with open(os.path.join(project, "train.py"), "w") as f:
                f.write("import mylib, json\n")
            with open(os.path.join(project, "mylib.py"), "w") as f:
                f.write("X = 1\n")
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
            subprocess.run(
                [sys.executable, "-c", "import stagebench, runpy; runpy.run_path('train.py', run_name='__main__')"],
                env=env,
                cwd=project,
                check=True,
            )
            got = self.lines()[0]["runtime"]
            with open(os.path.join(project, "mylib.py"), "rb") as f:
                self.assertEqual(got["sources"]["mylib"], hashlib.sha256(f.read()).hexdigest())
            # Its own code only: no library, no helper, no path anywhere.
            self.assertEqual(sorted(got["sources"]), ["mylib"])
            self.assertNotIn(project, json.dumps(got))
            self.assertEqual(got["devices"], [], "no framework imported, no device")

    def test_a_span_that_raises_is_still_reported(self):
        with self.assertRaises(KeyError):
            with stagebench.span("boom"):
                raise KeyError("x")
        self.assertEqual(tally(self.lines())["boom"]["n"], 1)

    def test_threads_and_a_forked_child_are_counted_exactly_and_apart(self):
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
            # As multiprocessing leaves: no atexit, the helper still writes.
            os._exit(0)
        for t in threads:
            t.join()
        _, status = os.waitpid(pid, 0)
        self.assertEqual(status, 0)
        got = tally(self.lines())
        self.assertEqual(got["thread"]["n"], 800)
        self.assertEqual(got["child"]["n"], 200)
        self.assertEqual(got["thread"]["main"], 0, "another thread's time is no share of the wall")
        self.assertEqual(got["child"]["main"], 0, "a forked child's neither")

    def test_nesting_and_threads_are_counted_once(self):
        """run 0.20 s holds outer 0.10 s, which holds inner twice at 0.03 s;
        two threads run worker 0.05 s at once."""

        def worker():
            with stagebench.span("worker"):
                time.sleep(0.05)

        with stagebench.span("run"):
            with stagebench.span("outer"):
                for _ in range(2):
                    with stagebench.span("inner"):
                        time.sleep(0.03)
                time.sleep(0.04)
            ts = [threading.Thread(target=worker) for _ in range(2)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            time.sleep(0.05)
        got = tally(self.lines())
        ms = lambda ns: ns / 1e6  # noqa: E731
        run, outer, inner = got["run"], got["outer"], got["inner"]
        self.assertEqual(outer["self"], outer["sum"] - inner["sum"])
        self.assertEqual(run["self"], run["sum"] - outer["sum"])
        self.assertAlmostEqual(ms(inner["sum"]), 60, delta=10)
        self.assertAlmostEqual(ms(outer["self"]), 40, delta=10)
        main = sum(v["main"] for v in got.values())
        self.assertEqual(main, run["sum"], "main-thread self times add up to the top level")
        self.assertAlmostEqual(ms(got["worker"]["sum"]), 100, delta=15)
        self.assertEqual(got["worker"]["main"], 0)
        # Each slice says whether it ran beside the main thread: report.html
        # never draws a thread's span as the child of the main one it overlaps.
        flags = {(s[0], s[3]) for line in self.lines() if "agg" in line for s in line["agg"]["slices"]}
        self.assertEqual(flags, {("run", 0), ("outer", 0), ("inner", 0), ("worker", 1)})

    def test_a_million_calls_are_counted_exactly_in_a_few_lines(self):
        @stagebench.spanned("tick")
        def tick():
            pass

        for _ in range(1_000_000):
            tick()
        got = self.lines()
        size = os.path.getsize(self.path)
        self.assertEqual(tally(got)["tick"]["n"], 1_000_000)
        # At most one line a second, each with at most 4,096 slices: a few
        # hundred kilobytes, not the 60 MB of a line per call.
        self.assertLess(size, 4 << 20, size)

    def test_a_recursive_call_is_timed_once(self):
        @stagebench.spanned("fact")
        def fact(n):
            return 1 if n <= 1 else n * fact(n - 1)

        self.assertEqual(fact(10), 3628800)
        got = tally(self.lines())["fact"]
        self.assertEqual(got["n"], 1)
        self.assertEqual(got["self"], got["sum"])

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


class Callables(unittest.TestCase):
    """``--span`` on every kind of callable, through the bootstrap a worker
    installs: the program's own output and exit code are the same as
    without it, and each target is counted, or refused with its reason."""

    PROGRAM = """
import asyncio, functools, sys, time
import json as j
import thing

def mainfn(x):
    return x + 1

async def collect():
    return [i async for i in thing.agen()]

t = thing.Thing()
print(mainfn(1), list(thing.gen(3)), asyncio.run(thing.coro()), asyncio.run(collect()))
print(t.prop, t.cached, t.cached, thing.Thing.smeth(2), thing.Thing.cmeth(), t.meth())
print(isinstance(t, thing.Thing), {"a": 1}.get("a"), j.dumps([1]))
import inspect
print(inspect.isgeneratorfunction(thing.gen), inspect.iscoroutinefunction(thing.coro))
sys.exit(3)
"""

    THING = """
import asyncio, functools, time

def gen(n):
    for i in range(n):
        time.sleep(0.01)
        yield i

async def coro():
    await asyncio.sleep(0.02)
    return 7

async def agen():
    for i in range(2):
        await asyncio.sleep(0.005)
        yield i

class Thing:
    @property
    def prop(self):
        return "p"

    @functools.cached_property
    def cached(self):
        return "c"

    @staticmethod
    def smeth(x):
        return x * 2

    @classmethod
    def cmeth(cls):
        return cls.__name__

    def meth(self):
        return "m"

def never():
    pass
"""

    TARGETS = [
        ("thing", "gen"), ("thing", "coro"), ("thing", "agen"), ("thing", "Thing.prop"),
        ("thing", "Thing.cached"), ("thing", "Thing.smeth"), ("thing", "Thing.cmeth"),
        ("thing", "Thing.meth"), ("thing", "Thing"), ("builtins", "dict.get"),
        ("thing", "never"), ("__main__", "mainfn"), ("os.path", "join"), ("json", "dumps"),
    ]

    def run_program(self, targets):
        named = [(m, q, q.replace(".", "_")) for m, q in targets]
        return run_spanned(self.PROGRAM, named, [("thing.py", self.THING)])

    def test_a_script_function_loaded_before_it_was_wrapped_is_still_timed(self):
        # `outer(inner(1))` right after the definitions: the line loads
        # outer, then calls inner, the first call the watch sees; outer's
        # call through the reference already loaded is timed all the same,
        # and every later one through its wrapper, each once.
        import subprocess
        import sys

        d = tempfile.mkdtemp()
        with open(os.path.join(d, "prog.py"), "w") as f:
            f.write("def inner(x):\n    return x\n\ndef outer(x):\n    return x\n\n"
                    "outer(inner(1))\nouter(inner(2))\nlate = outer\nlate(3)\n")
        spans = os.path.join(d, "spans.jsonl")
        open(spans, "w").close()
        env = dict(os.environ, STAGEBENCH_SPANS=spans)
        env["PYTHONPATH"] = os.pathsep.join([BOOTSTRAP, os.path.join(HERE, "..")])
        env["STAGEBENCH_SPAN_TARGETS"] = json.dumps(
            [{"module": "__main__", "qualname": q, "name": q} for q in ("outer", "inner")]
        )
        p = subprocess.run([sys.executable, "prog.py"], cwd=d, env=env, capture_output=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        with open(spans) as f:
            calls = {k: v["n"] for k, v in tally([json.loads(line) for line in f]).items()}
        self.assertEqual(calls, {"outer": 3, "inner": 2})

    def test_every_kind_is_wrapped_or_refused_and_the_program_is_unchanged(self):
        bare, _ = self.run_program([])
        spanned, lines = self.run_program(self.TARGETS)
        self.assertEqual(spanned.returncode, 3, spanned.stderr.decode())
        self.assertEqual(spanned.stdout, bare.stdout)
        self.assertEqual(bare.returncode, 3)
        self.assertNotIn(b"sitecustomize", spanned.stderr, spanned.stderr.decode())
        wrapped = {line["wrapped"]: line.get("span") for line in lines if "wrapped" in line}
        refused = {line["refused"]: line["why"] for line in lines if "refused" in line}
        self.assertEqual(refused.get("thing:Thing"), "a class: name one of its methods")
        self.assertIn("immutable built-in type", refused.get("builtins:dict.get", ""))
        for m, q in self.TARGETS:
            if (m, q) not in [("thing", "Thing"), ("builtins", "dict.get")]:
                self.assertIn("%s:%s" % (m, q), wrapped, (m, q, refused))
        got = tally(lines)
        calls = {k: v["n"] for k, v in got.items()}
        for name in ["gen", "coro", "agen", "Thing_prop", "Thing_smeth", "Thing_cmeth",
                     "Thing_meth", "mainfn", "dumps"]:
            self.assertEqual(calls.get(name), 1, (name, calls))
        self.assertEqual(calls.get("Thing_cached"), 1, "cached: computed once")
        self.assertNotIn("never", calls)
        # A generator's time runs from its first next() to its end (three
        # sleeps of 10 ms), beside its consumer: concurrent, no share.
        self.assertGreater(got["gen"]["sum"], 25e6)
        self.assertEqual(got["gen"]["main"], 0)
        self.assertGreater(got["coro"]["sum"], 15e6)

    def test_the_compiled_path_tallies_what_the_python_path_tallies(self):
        """A wrapped call's bookkeeping in C (_fast.c, where it was built)
        and in Python (STAGEBENCH_SPANS_PURE_PYTHON=1) give the same calls,
        histogram totals and self times, exactly: nesting, recursion, an
        exception, a span left open inside a call, a thread, and a call
        that writes its thread's tally on the way out."""
        import subprocess
        import sys

        if stagebench._spans.fast is None:
            self.skipTest("the compiled path was not built here")
        code = r"""
import stagebench, threading, time, json, sys
from stagebench import _layout, _spans, _wrap
assert (_spans.fast is None) == (sys.argv[1] == "pure"), _spans.fast
def inner(x):
    time.sleep(0.002)
    return x
inner = _wrap.timed(inner, "inner")
def outer():
    return inner(1) + inner(2)
outer = _wrap.timed(outer, "outer")
def rec(n):
    return 0 if n == 0 else 1 + rec(n - 1)
rec = _wrap.timed(rec, "rec")
def boom():
    raise KeyError("boom")
boom = _wrap.timed(boom, "boom")
def leaky():
    stagebench.span("left_open").__enter__()
    return 7
leaky = _wrap.timed(leaky, "leaky")
assert outer() == 3 and outer() == 3
assert rec(5) == 5
try:
    boom()
except KeyError as e:
    assert e.args == ("boom",)
else:
    raise AssertionError("the exception was lost")
assert leaky() == 7
t = threading.Thread(target=lambda: [inner(i) for i in range(3)])
t.start(); t.join()
_spans.local.t[_layout.T_FLUSH_AT] = 0  # the next end writes the thread's tally
assert inner(9) == 9
"""
        got, beside = {}, {}
        with tempfile.TemporaryDirectory() as tmp:
            for path in ("fast", "pure"):
                spans = os.path.join(tmp, path + ".jsonl")
                open(spans, "w").close()
                env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), STAGEBENCH_SPANS=spans)
                env.pop("STAGEBENCH_SPANS_PURE_PYTHON", None)
                if path == "pure":
                    env["STAGEBENCH_SPANS_PURE_PYTHON"] = "1"
                subprocess.run([sys.executable, "-c", code, path], env=env, check=True)
                with open(spans) as f:
                    lines = [json.loads(line) for line in f]
                got[path] = tally(lines)
                beside[path] = sorted(
                    (sl[0], sl[3]) for line in lines if "agg" in line for sl in line["agg"]["slices"] if sl[3]
                )
        for path, t in got.items():
            self.assertEqual(
                {k: v["n"] for k, v in t.items()},
                # A span left open inside a call ends with it, uncounted.
                {"inner": 8, "outer": 2, "rec": 1, "boom": 1, "leaky": 1},
                path,
            )
            for name, v in t.items():
                self.assertEqual(v["h"], v["n"], (path, name))
                self.assertTrue(0 < v["min"] <= v["first"] <= v["max"] <= v["sum"], (path, name, v))
            # outer's self time is its time less its two inner calls', to the ns.
            outer_inner = t["outer"]["sum"] - t["outer"]["self"]
            self.assertGreaterEqual(outer_inner, 4 * 2_000_000 // 2, path)
            self.assertLess(outer_inner, t["outer"]["sum"], path)
            # The thread's three calls are not the main thread's five.
            self.assertGreaterEqual(t["inner"]["main"], 5 * 2_000_000, path)
            self.assertLess(t["inner"]["main"], t["inner"]["self"], path)
            # Its three slices, and only those, are marked as beside it.
            self.assertEqual(beside[path], [("inner", 1)] * 3, path)

    def test_the_workers_copy_of_the_helper_uses_the_installed_compiled_path(self):
        """The worker puts a pure-Python copy of the helper first on a
        command's PYTHONPATH; where the helper is also installed with its
        compiled part, the copy uses that part."""
        import shutil
        import subprocess
        import sys

        if stagebench._spans.fast is None:
            self.skipTest("the compiled path was not built here")
        with tempfile.TemporaryDirectory() as boot:
            skip = shutil.ignore_patterns("*.so", "*.c", "bootstrap", "__pycache__")
            shutil.copytree(os.path.join(HERE, "..", "stagebench"), os.path.join(boot, "stagebench"), ignore=skip)
            env = dict(os.environ, PYTHONPATH=os.pathsep.join([boot] + sys.path))
            code = "import os, stagebench._spans as s; print(os.path.dirname(s.__file__)); print(s.fast and s.fast.__file__)"
            out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True)
            copy, compiled = out.stdout.split("\n")[:2]
            self.assertEqual(os.path.realpath(copy), os.path.realpath(os.path.join(boot, "stagebench")))
            self.assertEqual(compiled, stagebench._spans.fast.__file__)
            env["STAGEBENCH_SPANS_PURE_PYTHON"] = "1"
            out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True)
            self.assertEqual(out.stdout.split("\n")[1], "None")

def run_spanned(program, targets, files=(), args=()):
    """Runs ``program`` (prog.py in a fresh directory, with ``files``) under
    the bootstrap with ``targets`` as (module, qualname, name), or bare
    when there are none; its process and the spans file's lines."""
    import subprocess
    import sys

    d = tempfile.mkdtemp()
    for name, text in [("prog.py", program), *files]:
        with open(os.path.join(d, name), "w") as f:
            f.write(text)
    spans = os.path.join(d, "spans.jsonl")
    open(spans, "w").close()
    env = dict(os.environ, STAGEBENCH_SPANS=spans)
    env.pop("PYTHONPATH", None)
    if targets:
        env["PYTHONPATH"] = os.pathsep.join([BOOTSTRAP, os.path.join(HERE, "..")])
        env["STAGEBENCH_SPAN_TARGETS"] = json.dumps(
            [{"module": m, "qualname": q, "name": n} for m, q, n in targets]
        )
    p = subprocess.run([sys.executable, "prog.py", *args], cwd=d, env=env, capture_output=True, timeout=120)
    with open(spans) as f:
        lines = [json.loads(line) for line in f]
    return p, lines


def helper_builtins():
    """Per module of the helper, the builtins its code calls (names it
    loads that are builtins and that it does not define itself)."""
    import ast
    import builtins

    pkg = os.path.join(HERE, "..", "stagebench")
    out = {}
    for name in sorted(os.listdir(pkg)):
        if not name.endswith(".py"):
            continue
        with open(os.path.join(pkg, name)) as f:
            tree = ast.parse(f.read())
        defined, bound = set(), set()
        for n in ast.walk(tree):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defined.add(n.name)
            elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                defined.add(n.id)
            elif isinstance(n, ast.arg):
                defined.add(n.arg)
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                names = {(a.asname or a.name).split(".")[0] for a in n.names}
                if isinstance(n, ast.ImportFrom) and n.module == "builtins" and n in tree.body:
                    bound |= names
                else:
                    defined |= names
        used = {
            n.id for n in ast.walk(tree)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in dir(builtins)
            and n.id not in defined and not n.id[0].isupper() and not n.id.startswith("__")
        }
        out[name] = (used, bound)
    return out


class TheHelpersOwnCalls(unittest.TestCase):
    """Issue 75: a program's `--span builtins:NAME` must neither crash it
    (the helper calling the span it wraps: a RecursionError) nor count the
    helper's own calls as the program's."""

    def test_every_builtin_the_helper_calls_is_bound_at_import(self):
        for module, (used, bound) in helper_builtins().items():
            self.assertEqual(used - bound, set(), "%s calls these through builtins" % module)

    def test_a_builtin_the_helper_uses_is_timed_as_the_programs_alone(self):
        p, lines = run_spanned("print(len([1]))\n", [("builtins", "len", "len")])
        self.assertEqual(p.returncode, 0, p.stderr.decode()[-2000:])
        self.assertEqual(p.stdout, b"1\n")
        calls = {k: v["n"] for k, v in tally(lines).items()}
        self.assertEqual(calls.get("len"), 1, calls)

    def test_the_program_reads_its_own_recursion_limit_at_every_moment(self):
        # Read between a target's def and its first call (the watch wraps it
        # at that very call), and after; and a recursion sized by it.
        program = (
            "import sys\n"
            "def f():\n    return 1\n"
            "print(sys.getrecursionlimit())\n"
            "f()\n"
            "print(sys.getrecursionlimit())\n"
            "def r(n):\n    return 0 if n == 0 else 1 + r(n - 1)\n"
            "print(r(sys.getrecursionlimit() - 50))\n"
        )
        bare, _ = run_spanned(program, [])
        spanned, _ = run_spanned(program, [("__main__", "f", "f"), ("__main__", "r", "r")])
        self.assertEqual(bare.returncode, 0, bare.stderr.decode()[-2000:])
        self.assertEqual(spanned.returncode, 0, spanned.stderr.decode()[-2000:])
        self.assertEqual(spanned.stdout, bare.stdout)

    def test_only_the_programs_own_calls_of_a_builtin_are_counted(self):
        # Not the helper's, nor the standard library's it uses (its exit's
        # report, its wraps), nor the interpreter's start-up after it
        # (site's look for a usercustomize): 10 and none, not 1,372 and 204.
        program = "for i in range(10):\n    isinstance(i, int)\nprint('x')\n"
        targets = [("builtins", "isinstance", "isinstance"), ("builtins", "getattr", "getattr"),
                   ("os", "write", "os_write")]
        p, lines = run_spanned(program, targets)
        self.assertEqual(p.returncode, 0, p.stderr.decode()[-2000:])
        self.assertEqual((p.stdout, p.stderr), (b"x\n", b""))
        self.assertEqual({k: v["n"] for k, v in tally(lines).items()}, {"isinstance": 10})

    def test_every_builtin_the_helper_calls_can_be_spanned_at_once(self):
        used = set().union(*(u for u, _ in helper_builtins().values()))
        targets = [("builtins", n, n) for n in sorted(used)] + [("os", "write", "os_write")]
        p, lines = run_spanned("print('x')\n", targets)
        self.assertEqual(p.returncode, 0, p.stderr.decode()[-2000:])
        self.assertEqual(p.stdout, b"x\n")
        calls = {k: v["n"] for k, v in tally(lines).items()}
        # The helper writes its lines with its own os.write.
        self.assertNotIn("os_write", calls)
        self.assertNotIn("len", calls)


class EveryCall(unittest.TestCase):
    """Issue 63: every call of a ``--span`` target is counted, whatever
    reference it goes through; spanning costs no recursion depth, no false
    "never called", and nothing the program sees."""

    def calls(self, lines):
        return {k: v["n"] for k, v in tally(lines).items()}

    def test_calls_through_references_taken_before_the_wrap_are_all_counted(self):
        # serve-like (the function passed to a library call on the line that
        # defines nothing), map, a callback registered at definition, a dict
        # of functions: 4 + 5 + 3 + 2 calls, each counted once.
        lib = "def serve(fn, items):\n    return [fn(i) for i in items]\n"
        program = """
import lib
def prep(x):
    return x * 2
def f(x):
    return x + 1
def cb(x):
    return x
def g(x):
    return -x
table = {"g": g}
hooks = [cb]
lib.serve(prep, range(4))
list(map(f, range(5)))
for _ in range(3):
    for h in hooks:
        h(1)
table["g"](1); table["g"](2)
"""
        targets = [("__main__", q, q) for q in ("prep", "f", "cb", "g")]
        p, lines = run_spanned(program, targets, [("lib.py", lib)])
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        self.assertEqual(self.calls(lines), {"prep": 4, "f": 5, "cb": 3, "g": 2})
        # The same through a library module's own references.
        lib2 = "def h(x):\n    return x\nTABLE = {'h': h}\nHOOKS = [h]\n"
        program = "import lib2\nlib2.TABLE['h'](1)\nlib2.HOOKS[0](2)\nlib2.h(3)\n"
        p, lines = run_spanned(program, [("lib2", "h", "h")], [("lib2.py", lib2)])
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        self.assertEqual(self.calls(lines), {"h": 3})

    def test_the_deepest_recursion_that_runs_bare_also_runs_spanned(self):
        lib = "def rec(n):\n    return 0 if n == 0 else 1 + rec(n - 1)\n"
        program = """
import sys, lib
lo, hi = 1, 100000
while lo < hi:
    mid = (lo + hi + 1) // 2
    try:
        lib.rec(mid)
        lo = mid
    except RecursionError:
        hi = mid - 1
print(lo, sys.getrecursionlimit())
"""
        bare, _ = run_spanned(program, [], [("lib.py", lib)])
        self.assertEqual(bare.returncode, 0, bare.stderr.decode())
        deepest, limit = bare.stdout.split()
        self.assertGreater(int(deepest), 900)
        check = "import sys, lib\nlib.rec(int(sys.argv[1]))\nprint(sys.getrecursionlimit())\n"
        spanned, lines = run_spanned(check, [("lib", "rec", "rec")], [("lib.py", lib)], [deepest])
        self.assertEqual(spanned.returncode, 0, spanned.stderr.decode()[-400:])
        self.assertEqual(spanned.stdout.split(), [limit], "the program reads its own limit")
        self.assertEqual(self.calls(lines), {"rec": 1})

    def test_a_started_generator_is_a_call_and_os_exit_loses_nothing(self):
        lib = "def gen():\n    yield 1\n    yield 2\ndef f():\n    return 1\n"
        program = """
import os, sys, lib
g = lib.gen()
next(g)
lib.f()
if sys.argv[1] == "exit":
    sys.stdout.flush()
    os._exit(0)
"""
        for how in ("exit", "return"):
            p, lines = run_spanned(program, [("lib", "gen", "gen"), ("lib", "f", "f")],
                                   [("lib.py", lib)], [how])
            self.assertEqual(p.returncode, 0, p.stderr.decode())
            self.assertEqual(self.calls(lines), {"gen": 1, "f": 1}, how)

    def test_a_call_running_at_os_exit_is_a_call_and_a_forked_childs_is_not(self):
        lib = "import os, sys\ndef f():\n    sys.stdout.flush()\n    os._exit(0)\n"
        main = "import os, sys\ndef f():\n    sys.stdout.flush()\n    os._exit(0)\nf()\n"
        for program, files, target in [
            ("import lib\nlib.f()\n", [("lib.py", lib)], ("lib", "f", "f")),
            (main, [], ("__main__", "f", "f")),
        ]:
            p, lines = run_spanned(program, [target], files)
            self.assertEqual(p.returncode, 0, p.stderr.decode())
            self.assertEqual(self.calls(lines), {"f": 1}, target)
        # A child forked inside the span leaves at once: the call open in it
        # is its parent's, counted once, by the parent.
        lib = "import os\ndef f():\n    pid = os.fork()\n    if pid == 0:\n        os._exit(0)\n    os.waitpid(pid, 0)\n"
        p, lines = run_spanned("import lib\nlib.f()\n", [("lib", "f", "f")], [("lib.py", lib)])
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        self.assertEqual(self.calls(lines), {"f": 1})

    def test_a_scripts_generator_made_before_its_wrap_is_one_call_beside_the_wall(self):
        # Looped over at once (the wrap comes at its first resume), made and
        # then started (the wrap comes at next(), a C call, before it), and
        # abandoned after two next(): each one call, from its first resume
        # to its end, beside the main thread's time, never its self.
        looped = (
            "import time\ndef gen():\n    for i in range(3):\n        yield i\n"
            "for x in gen():\n    time.sleep(0.01)\n"
        )
        made = "import time\ndef gen():\n    yield 1\n    yield 2\ng = gen()\nnext(g)\ntime.sleep(0.03)\nlist(g)\n"
        abandoned = "def gen():\n    yield 1\n    yield 2\n    yield 3\ng = gen()\nnext(g); next(g)\n"
        for program in (looped, made, abandoned):
            p, lines = run_spanned(program, [("__main__", "gen", "gen")])
            self.assertEqual(p.returncode, 0, p.stderr.decode())
            self.assertEqual(p.stderr, b"")
            t = tally(lines)
            self.assertEqual(self.calls(lines), {"gen": 1}, program)
            self.assertEqual(t["gen"]["main"], 0, program)
            self.assertEqual(t["gen"]["beside"], t["gen"]["sum"], program)
            if program is not abandoned:
                self.assertGreater(t["gen"]["sum"], 25_000_000, program)

    def test_wrapping_many_script_targets_is_outside_the_first_call(self):
        # The watch wraps every target at the first call after their defs;
        # that work (about 10 ms for 400) is never inside the call it times.
        n = 400
        program = "".join("def fn_%03d():\n    return %d\n" % (i, i) for i in range(n)) + "fn_000()\n"
        p, lines = run_spanned(program, [("__main__", "fn_%03d" % i, "fn_%03d" % i) for i in range(n)])
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        wrapped = [line for line in lines if "wrapped" in line]
        self.assertEqual(len(wrapped), n)
        self.assertEqual(self.calls(lines), {"fn_000": 1})
        self.assertLess(tally(lines)["fn_000"]["first"], 2_000_000, "ns")

    def test_one_function_has_one_span_name(self):
        lib = "def f():\n    return 1\n"
        p, lines = run_spanned("import lib\nlib.f()\n", [("lib", "f", "a"), ("lib", "f", "b")],
                               [("lib.py", lib)])
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        refused = {line["refused"]: line["why"] for line in lines if "refused" in line}
        self.assertEqual(refused, {"lib:f": "already the span 'a': one function has one span name"})
        self.assertEqual(self.calls(lines), {"a": 1})

    def test_a_wrapped_function_shows_its_code_and_defaults_through_wrapped(self):
        lib = "def f(x, y=5, *, z=7):\n    return x + y + z\n"
        program = """
import inspect, lib
w = lib.f.__wrapped__ if hasattr(lib.f, "__wrapped__") else lib.f
print(lib.f(1), lib.f.__defaults__, lib.f.__kwdefaults__, w.__code__.co_varnames[:3],
      w.__defaults__, str(inspect.signature(lib.f)), lib.f.__name__)
"""
        bare, _ = run_spanned(program, [], [("lib.py", lib)])
        spanned, lines = run_spanned(program, [("lib", "f", "f")], [("lib.py", lib)])
        self.assertEqual(spanned.returncode, 0, spanned.stderr.decode())
        self.assertEqual(spanned.stdout, bare.stdout)
        self.assertEqual(self.calls(lines), {"f": 1})

    def test_the_first_call_costs_the_program_no_more_than_a_later_one(self):
        # The program's own clock around its first call against the span's
        # time for it: what the wrapper set up inside the call is the gap.
        # The script's own function, first called through a library on the
        # line that makes the wrap: the worst case.
        lib = "def run(fn):\n    return fn()\n"
        program = """
import time, lib
def f():
    time.sleep(0.03)
t0 = time.perf_counter_ns(); lib.run(f); t1 = time.perf_counter_ns()
print(t1 - t0)
"""
        gaps = []
        for _ in range(3):
            p, lines = run_spanned(program, [("__main__", "f", "f")], [("lib.py", lib)])
            self.assertEqual(p.returncode, 0, p.stderr.decode())
            gaps.append(int(p.stdout) - tally(lines)["f"]["first"])
        self.assertLess(min(gaps), 500_000, "ns the program saw beyond the span: %s" % gaps)


class Layout(unittest.TestCase):
    """The tally layout is named once (_layout.py): the compiled path's
    SB_ #defines are its names and values, and the lists the Python path
    makes are as long as it says."""

    def test_the_c_path_defines_every_name_of_the_layout_with_its_value(self):
        import re

        from stagebench import _layout

        with open(os.path.join(HERE, "..", "stagebench", "_fast.c")) as f:
            defined = {m.group(1): int(m.group(2)) for m in re.finditer(r"^#define SB_(\w+) (\d+)$", f.read(), re.M)}
        named = {k: v for k, v in vars(_layout).items() if k.isupper()}
        self.assertGreater(len(named), 20)
        self.assertEqual(defined, named)
        # Each list's indices are 0 to its size, each once.
        tally = sorted(v for k, v in named.items() if not k.startswith("T_") and k not in ("LAYOUT", "TALLY_SIZE", "STATE_SIZE"))
        self.assertEqual(tally, list(range(named["TALLY_SIZE"])))
        state = sorted(v for k, v in named.items() if k.startswith("T_"))
        self.assertEqual(state, list(range(named["STATE_SIZE"])))

    def test_the_lists_the_python_path_makes_have_the_layouts_sizes(self):
        from stagebench import _layout, _spans

        t = _spans.thread()
        s = _spans.tally(t, "layout_probe")
        self.assertEqual((len(t), len(s)), (_layout.STATE_SIZE, _layout.TALLY_SIZE))
        self.assertEqual(s[_layout.NAME], "layout_probe")
        self.assertIs(t[_layout.T_TALLIES]["layout_probe"], s)
        del t[_layout.T_TALLIES]["layout_probe"]



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


if __name__ == "__main__":
    unittest.main()
