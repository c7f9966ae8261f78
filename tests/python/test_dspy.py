"""dolsot.dspy.DolsotInterpreter: DSPy's CodeInterpreter protocol (3.3.1)
driven the way RLM drives it, by a scripted loop replaying model turns
from rlm_turns.json over the real binary: tools called from cells, errors
fed back and corrected, SUBMIT ending the loop, eight threads sharing one
interpreter, the callbacks in order; and mounts, limits, timeouts, the
execution instructions, and DSPy's own classes used when it is
importable."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest

import support

from dolsot import dspy as dd
from dolsot.dspy import (CodeExecutionError, CodeInterpreterError, DolsotInterpreter,
                         FinalOutput, Mount)

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "rlm_turns.json")) as f:
    FIXTURE = json.load(f)


def search(query: str, limit: int = 3) -> list:
    """Search the docs."""
    if not query:
        raise ValueError("empty query")
    return [f"{query} #{i}" for i in range(limit)]


def llm_query(prompt: str) -> str:
    """Query the sub-LM (here: an echo)."""
    return "sub-LM: " + prompt


def rlm_loop(interp, inputs, turns, search=search):
    """RLM.forward's shape: inject the tools and output fields, then for
    each model turn execute it with the inputs as variables; a
    CodeExecutionError or SyntaxError goes back to the model as an
    "[Error] ..." output; a FinalOutput with every output field ends the
    loop. Returns (the final dict or None, the outputs fed back)."""
    interp.tools.update({"search": search, "llm_query": llm_query})
    interp.output_fields = FIXTURE["output_fields"]
    names = [f["name"] for f in FIXTURE["output_fields"]]
    interp.start()
    history = []
    for turn in turns:
        try:
            result = interp.execute(turn["code"], variables=dict(inputs))
        except (CodeExecutionError, SyntaxError) as e:
            result = f"[Error] {type(e).__name__}: {e}"
        if isinstance(result, FinalOutput):
            out = result.output
            if isinstance(out, dict) and set(names) <= set(out):
                return out, history
            result = f"[Error] Missing output fields. Use SUBMIT({', '.join(names)})"
        history.append(str(result) if result else "")
    return None, history


class RLMLoop(support.StoreCase):

    def test_the_scripted_run_uses_tools_corrects_errors_and_ends_at_submit(self):
        interp = DolsotInterpreter()
        try:
            final, history = rlm_loop(interp, FIXTURE["inputs"], FIXTURE["turns"])
        finally:
            interp.shutdown()
        turns = FIXTURE["turns"]
        submit = next(i for i, t in enumerate(turns) if "final" in t)
        self.assertEqual(final, turns[submit]["final"])
        self.assertEqual(len(history), submit)   # nothing ran after SUBMIT
        for out, turn in zip(history, turns):
            for want in turn["expect"]:
                self.assertIn(want, out, turn["code"])

    def test_eight_threads_share_one_interpreter_each_with_its_own_session(self):
        interp = DolsotInterpreter(max_sessions=3)
        results, sessions, errors = {}, {}, []
        turns = FIXTURE["turns"]
        cells = {"inside": 0, "most": 0}
        gauge = threading.Condition()

        def counted_search(query: str, limit: int = 3) -> list:
            """search, counting the cells inside at once (a tool runs while
            its cell does): the first ones wait until the pool is full."""
            with gauge:
                cells["inside"] += 1
                cells["most"] = max(cells["most"], cells["inside"])
                if cells["inside"] == 3:   # how many hold a slot now: no more than these
                    cells["held"] = interp.max_sessions - interp._pool._value
                gauge.notify_all()
                gauge.wait_for(lambda: cells["most"] >= 3, timeout=60)
                cells["inside"] -= 1
            return search(query, limit)

        def run(k):
            try:
                inputs = {"context": " ".join([str(k)] * 5), "question": "sum?"}
                results[k], _ = rlm_loop(interp, inputs, turns, counted_search)
                sessions[k] = interp.session
            except BaseException as e:   # reported below, on the main thread
                errors.append(e)

        threads = [threading.Thread(target=run, args=(k,)) for k in range(1, 9)]
        try:
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        finally:
            interp.shutdown()
        self.assertEqual(errors, [])
        self.assertEqual((cells["most"], cells["held"]), (3, 3))   # max_sessions at once
        self.assertEqual(len(set(sessions.values())), 8)
        for k in range(1, 9):
            self.assertEqual(results[k], {"answer": f"sub-LM: the sum is {5 * k}",
                                          "total": 5 * k})

    def test_callbacks_fire_in_order_with_tool_calls_under_their_execute(self):
        events = []

        class Recorder(dd.BaseCallback):
            pass

        for op in ("startup", "execute", "tool_call", "shutdown"):
            def start(self, call_id, instance, inputs, op=op):
                events.append((op, "start", call_id, dd.ACTIVE_CALL_ID.get(), inputs))

            def end(self, call_id, outputs, exception=None, op=op):
                events.append((op, "end", call_id, outputs, exception))
            setattr(Recorder, f"on_interpreter_{op}_start", start)
            setattr(Recorder, f"on_interpreter_{op}_end", end)

        interp = DolsotInterpreter(tools={"search": search}, callbacks=[Recorder()])
        interp.start()
        interp.execute("print(search(query='a', limit=1))")
        interp.shutdown()
        self.assertEqual([(e[0], e[1]) for e in events],
                         [("startup", "start"), ("startup", "end"),
                          ("execute", "start"), ("tool_call", "start"),
                          ("tool_call", "end"), ("execute", "end"),
                          ("shutdown", "start"), ("shutdown", "end")])
        execute_id = events[2][2]
        tool_start, tool_end, execute_end = events[3], events[4], events[5]
        self.assertEqual(tool_start[3], execute_id)   # the tool's parent call
        self.assertEqual(tool_start[4], {"tool_name": "search",
                                         "kwargs": {"query": "a", "limit": 1}})
        self.assertEqual(tool_end[3], ["a #0"])
        self.assertEqual(events[2][4], {"code": "print(search(query='a', limit=1))",
                                        "variables": None})
        self.assertEqual(execute_end[3], "['a #0']")


class Semantics(support.StoreCase):

    def setUp(self):
        super().setUp()
        self.dir = tempfile.mkdtemp(prefix="dolsot-dspy-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)
        super().tearDown()

    def test_a_timeout_is_terminal_but_keeps_the_session_usable(self):
        with DolsotInterpreter(timeout=1) as interp:
            self.assertIsNone(interp.execute("x = 41"))
            with self.assertRaises(CodeInterpreterError) as cm:
                interp.execute("x = 0\nwhile True: pass")
            self.assertNotIsInstance(cm.exception, CodeExecutionError)
            self.assertIn("timeout", str(cm.exception))
            self.assertEqual(interp.execute("x + 1"), "42")

    def test_output_is_stdout_then_the_value_and_none_when_empty(self):
        with DolsotInterpreter() as interp:
            self.assertEqual(interp.execute("print('a')\n1 + 1"), "a\n2")
            self.assertIsNone(interp.execute("y = 2"))
            self.assertEqual(interp("y"), "2")
            with self.assertRaises(CodeExecutionError) as cm:
                interp.execute("print('so far')\n[][1]")
            self.assertEqual(str(cm.exception),
                             "so far\nIndexError: list index out of range (line 2)")

    def test_a_tool_call_past_tool_timeout_is_a_timeout_error_in_the_cell(self):
        never = threading.Event()

        def slow() -> None:
            never.wait(1)   # outlives tool_timeout; its late answer is dropped

        raised, hook = [], threading.excepthook
        threading.excepthook = raised.append   # the late answer must not break a thread
        try:
            with DolsotInterpreter(tools={"slow": slow}, tool_timeout=0.2) as interp:
                self.assertEqual(interp.execute(
                    "try:\n    slow()\nexcept TimeoutError:\n    print('timed out')"),
                    "timed out")
        finally:
            threading.excepthook = hook
        self.assertEqual([r.exc_type for r in raised], [])
        with self.assertRaises(ValueError):
            DolsotInterpreter(tool_timeout=0)

    def test_a_tool_result_that_is_not_json_reaches_the_cell_as_its_str(self):
        with DolsotInterpreter(tools={"obj": lambda: {1, 2}}) as interp:
            self.assertEqual(interp.execute("obj()"), "'{1, 2}'")

    def test_submit_ends_the_step_even_when_the_cell_catches_it(self):
        with DolsotInterpreter() as interp:
            self.assertEqual(interp.execute(
                "try:\n    SUBMIT(1)\nexcept Exception:\n    print('went on')"),
                FinalOutput(1))

    def test_a_coroutine_tool_is_run_to_its_end(self):
        async def double(x: int) -> int:
            return 2 * x

        with DolsotInterpreter(tools={"double": double}) as interp:
            self.assertEqual(interp.execute("double(21)"), "42")

    def test_submit_without_output_fields_takes_one_value(self):
        with DolsotInterpreter() as interp:
            self.assertEqual(interp.execute("SUBMIT([1, 'two'])"), FinalOutput([1, "two"]))

    def test_variables_round_trip_as_json_and_bad_names_are_refused(self):
        with DolsotInterpreter() as interp:
            out = interp.execute("print(repr(t), repr(d), repr(s))",
                                 variables={"t": (1, 2), "d": {"k": [None, True]}, "s": "é"})
            self.assertEqual(out, "[1, 2] {'k': [None, True]} 'é'")
            with self.assertRaises(CodeInterpreterError):
                interp.execute("1", variables={"class": 1})
            with self.assertRaises(CodeInterpreterError):
                interp.execute("1", variables={"f": object()})

    def test_mounts_ro_rw_overlay(self):
        for d in ("ro", "rw", "ov"):
            os.mkdir(os.path.join(self.dir, d))
            with open(os.path.join(self.dir, d, "a.txt"), "w") as f:
                f.write(d)
        if os.getuid() == 0:   # root's sandbox writes as 2000000000 (README, "Isolation")
            os.chown(os.path.join(self.dir, "rw"), 2000000000, 2000000000)
        mounts = [Mount("/ro", os.path.join(self.dir, "ro"), "ro"),
                  {"virtual_path": "/rw", "host_path": os.path.join(self.dir, "rw"),
                   "mode": "read-write"},
                  ("/ov", os.path.join(self.dir, "ov"), "overlay")]
        with DolsotInterpreter(mounts=mounts) as interp:
            self.assertEqual(interp.execute("open('/ro/a.txt').read()"), "'ro'")
            with self.assertRaises(CodeExecutionError) as cm:
                interp.execute("open('/ro/b.txt', 'w')")
            self.assertIn("Read-only", str(cm.exception))
            interp.execute("open('/rw/b.txt', 'w').write('kept')")
            self.assertEqual(interp.execute(
                "open('/ov/a.txt', 'w').write('new')\nopen('/ov/a.txt').read()"), "'new'")
            self.assertEqual(interp.execute("open('/ov/a.txt').read()"), "'ov'")
        with open(os.path.join(self.dir, "rw", "b.txt")) as f:
            self.assertEqual(f.read(), "kept")
        with open(os.path.join(self.dir, "ov", "a.txt")) as f:
            self.assertEqual(f.read(), "ov")

    def test_a_bad_mount_is_refused_by_the_constructor(self):
        with self.assertRaises(ValueError):
            DolsotInterpreter(mounts=[Mount("/d", os.path.join(self.dir, "nope"))])
        with self.assertRaises(ValueError):
            DolsotInterpreter(mounts=[Mount("/d", self.dir, "rwx")])

    def test_without_mounts_the_sandbox_shows_no_host_files(self):
        with DolsotInterpreter() as interp:
            self.assertEqual(interp.execute(f"import os; os.path.exists({self.dir!r})"),
                             "False")

    def test_memory_and_recursion_limits_are_correctable_errors(self):
        limits = {"max_memory": 128 << 20, "max_recursion_depth": 60}
        with DolsotInterpreter(resource_limits=limits) as interp:
            interp.execute("kept = 1")
            with self.assertRaises(CodeExecutionError) as cm:
                interp.execute("b = bytearray(512 << 20)")
            self.assertIn("MemoryError", str(cm.exception))
            with self.assertRaises(CodeExecutionError) as cm:
                interp.execute("def f(n): return f(n + 1)\nf(0)")
            self.assertIn("RecursionError", str(cm.exception))
            self.assertEqual(interp.execute("kept"), "1")
        with self.assertRaises(ValueError):
            DolsotInterpreter(resource_limits={"gc_interval": 5})

    def test_after_shutdown_it_refuses_and_its_sessions_are_gone(self):
        interp = DolsotInterpreter()
        interp.execute("x = 1")
        sid = interp.session
        self.assertIn(sid, [s.id for s in interp._repl.sessions()])
        interp.shutdown()
        self.assertNotIn(sid, [s.id for s in interp._repl.sessions()])
        with self.assertRaises(CodeInterpreterError):
            interp.execute("1")

    def test_it_is_a_code_interpreter_and_a_factory_is_not(self):
        self.assertIsInstance(DolsotInterpreter(), dd.CodeInterpreter)
        factory = DolsotInterpreter.factory(timeout=5)
        self.assertNotIsInstance(factory, dd.CodeInterpreter)
        interp = factory()
        self.assertIsInstance(interp, DolsotInterpreter)
        self.assertEqual(interp._repl.timeout, 5)
        self.assertEqual(factory.execution_instructions, interp.execution_instructions)
        self.assertIsInstance(DolsotInterpreter.execution_instructions, str)


class Instructions(unittest.TestCase):

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="dolsot-dspy-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def touch(self, *names):
        for n in names:
            open(os.path.join(self.dir, n), "w").close()

    def test_a_small_mount_is_listed_by_name(self):
        os.mkdir(os.path.join(self.dir, "q3"))
        self.touch("readme.md", "x" * 50 + ".txt")
        text = DolsotInterpreter.factory(
            mounts=[Mount("/data", self.dir, "ro")]).execution_instructions
        self.assertIn(f"/data (read-only) holding q3/, readme.md, {'x' * 39}…", text)

    def test_a_large_mount_is_summed_up_by_extension(self):
        os.mkdir(os.path.join(self.dir, "sub"))
        self.touch(*[f"{i:04}.csv" for i in range(30)], "a.md", "b.md")
        self.assertEqual(dd.listing(self.dir),
                         "32 files and 1 directory (.csv ×30, .md ×2; e.g. 0000.csv, "
                         "0001.csv, 0002.csv)")
        self.assertEqual(dd.listing(self.dir, 40).count(","), 32)

    def test_the_scan_stops_at_its_bound(self):
        self.touch(*[f"{i}.txt" for i in range(6)])
        old, dd.SCAN_MAX = dd.SCAN_MAX, 4
        try:
            self.assertTrue(dd.listing(self.dir, 2).startswith("over 4 files and 0 directories"))
        finally:
            dd.SCAN_MAX = old

    def test_an_empty_mount_a_zero_limit_and_no_mounts(self):
        text = dd.instructions([Mount("/s", self.dir, "overlay")])
        self.assertIn("/s (writable, but what a step writes is gone when the step ends) "
                      "holding (empty)", text)
        self.assertNotIn("holding", dd.instructions([Mount("/s", self.dir, "overlay")],
                                                    listing_limit=0))
        self.assertIn("none of the host's", DolsotInterpreter.execution_instructions)

    def test_limits_are_stated(self):
        text = DolsotInterpreter.factory(resource_limits={
            "max_memory": 256 << 20, "max_duration_secs": 10,
            "max_recursion_depth": 500}).execution_instructions
        self.assertIn("10 s per step", text)
        self.assertIn("256 MiB of memory", text)
        self.assertIn("call depth 500", text)


STUB = {
    "dspy/__init__.py": "",
    "dspy/primitives/__init__.py": "",
    "dspy/primitives/code_interpreter.py": (
        "class CodeInterpreterError(RuntimeError): pass\n"
        "class CodeExecutionError(CodeInterpreterError): pass\n"
        "class FinalOutput:\n"
        "    def __init__(self, output): self.output = output\n"
        "class CodeInterpreter: pass\n"),
    "dspy/utils/__init__.py": "",
    "dspy/utils/callback.py": (
        "SEEN = []\n"
        "class BaseCallback: pass\n"
        "def with_callbacks(fn):\n"
        "    def wrapper(self, *a, **k):\n"
        "        SEEN.append(fn.__name__)\n"
        "        return fn(self, *a, **k)\n"
        "    return wrapper\n"),
}

STUB_CHECK = """
import dspy.primitives.code_interpreter as ci, dspy.utils.callback as cb
from dolsot import dspy as dd
assert dd.HAVE_DSPY
assert dd.FinalOutput is ci.FinalOutput and dd.CodeInterpreter is ci.CodeInterpreter
assert dd.CodeInterpreterError is ci.CodeInterpreterError
assert dd.CodeExecutionError is ci.CodeExecutionError and dd.BaseCallback is cb.BaseCallback
i = dd.DolsotInterpreter()
out = i.execute("SUBMIT(7)")
assert type(out) is ci.FinalOutput and out.output == 7, out
try:
    i.execute("1/0")
except ci.CodeExecutionError as e:
    assert "ZeroDivisionError" in str(e)
else:
    raise AssertionError("no error")
i.shutdown()
assert cb.SEEN == ["execute", "execute", "shutdown"], cb.SEEN
print("stub used")
"""


class WithDSPy(support.StoreCase):

    def test_dspys_own_classes_are_used_when_it_is_importable(self):
        stub = tempfile.mkdtemp(prefix="dolsot-dspy-stub-")
        try:
            for path, text in STUB.items():
                os.makedirs(os.path.join(stub, os.path.dirname(path)), exist_ok=True)
                with open(os.path.join(stub, path), "w") as f:
                    f.write(text)
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(
                [stub, os.path.join(support.ROOT, "python")]))
            p = subprocess.run([sys.executable, "-c", STUB_CHECK], env=env,
                               capture_output=True, text=True, timeout=120, check=False)
            self.assertEqual((p.returncode, p.stdout), (0, "stub used\n"), p.stderr)
        finally:
            shutil.rmtree(stub, ignore_errors=True)

    def test_without_dspy_ours_have_its_names(self):
        self.assertFalse(dd.HAVE_DSPY)
        self.assertTrue(issubclass(CodeExecutionError, CodeInterpreterError))
        self.assertTrue(issubclass(CodeInterpreterError, RuntimeError))
        self.assertEqual(repr(FinalOutput({"a": 1})), "FinalOutput({'a': 1})")
        for op in ("execute", "tool_call", "startup", "shutdown"):
            for which in ("start", "end"):
                self.assertTrue(hasattr(dd.BaseCallback, f"on_interpreter_{op}_{which}"))


if __name__ == "__main__":
    unittest.main()
