"""Repl against the real ./dolsot: the original README's library examples,
Result, exceptions, timeouts, dropped names, housekeeping, settings
precedence, stores and the binary's discovery."""

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

import support
from support import BIN, EXAMPLES, ROOT, env

import mytools
import dolsot
from dolsot import (BinaryNotFound, DolsotError, InvalidSession, InvalidToolbox,
                    Repl, Result, SessionInfo)
from dolsot.store import FileStore, MemoryStore


class Counting(support.StoreCase):
    """A binary that logs each start, then runs the real one: proof of which
    calls start a process and which do not."""

    def counting_binary(self):
        d = tempfile.mkdtemp(dir=self.tmp)
        self.log = os.path.join(d, "starts")
        path = os.path.join(d, "dolsot")
        with open(path, "w") as f:
            f.write(f"#!/bin/sh\necho \"$*\" >> '{self.log}'\nexec '{BIN}' \"$@\"\n")
        os.chmod(path, 0o755)
        return path

    def starts(self):
        try:
            with open(self.log) as f:
                return f.read().splitlines()
        except FileNotFoundError:
            return []


class ReadmeExamples(support.StoreCase):
    """The library section of the original README, as written."""

    def test_library_usage(self):
        repl = Repl(inject={"mt": mytools})
        r = repl.run("task-42", "mt.add(1, 2)")
        self.assertIsInstance(r, Result)
        self.assertEqual(r.value, "3")
        r = repl.run("task-42", "df = mt.load('orders')")
        self.assertTrue(r.ok)
        self.assertEqual(r.held, ["df"])
        r = repl.run("task-42", "len(df)")
        self.assertEqual(r.value, "5")

    def test_module_object_directory_reaches_the_worker(self):
        from dolsot.repl import _module_root
        import json
        self.assertEqual(_module_root(mytools), EXAMPLES)
        self.assertIsNone(_module_root(json))      # the worker has its own stdlib
        self.assertIsNone(_module_root(sys))
        self.assertNotIn(EXAMPLES, os.environ.get("PYTHONPATH", ""))
        r = Repl(inject={"mt": mytools, "js": json}).run("root", "mt.add(js.loads('1'), 1)")
        self.assertEqual(r.value, "2")

    def test_inject_by_name(self):
        with env(PYTHONPATH=EXAMPLES):
            repl = Repl(inject={"mt": "mytools"})
            self.assertEqual(repl.run("byname", "mt.scale([1, 2], 3)").value, "[3, 6]")

    def test_arun(self):
        repl = Repl(inject={"mt": mytools})

        async def main():
            return await repl.arun("task-42", "mt.add(1, 2)")
        self.assertEqual(asyncio.run(main()).value, "3")

    def _waiting_cell(self):
        """A FIFO, and a cell that prints, flushes and then waits for a
        line on it; a callback that writes it once the first chunk came
        (so the chunk arrived while the cell ran)."""
        fifo = os.path.join(tempfile.mkdtemp(dir=self.tmp), "go.fifo")
        os.mkfifo(fifo)
        code = (f"import sys\nprint('first', flush=True)\nopen({fifo!r}).read()\n"
                "print('second')\nsys.stderr.write('e\\n')\n7")
        got = []

        def on(stream):
            def take(text):
                got.append((stream, text))
                if stream == "out" and text.startswith("first") and \
                        sum(1 for s, _ in got if s == "out") == 1:
                    with open(fifo, "w") as f:
                        f.write("go")
            return take
        return code, got, on

    def test_run_streams_output_to_callbacks(self):
        code, got, on = self._waiting_cell()
        r = Repl().run("streamed", code, on_stdout=on("out"), on_stderr=on("err"))
        self.assertEqual((r.value, r.stdout, r.stderr), ("7", "first\nsecond\n", "e\n"))
        self.assertEqual("".join(t for s, t in got if s == "out"), r.stdout)
        self.assertEqual("".join(t for s, t in got if s == "err"), r.stderr)

    def test_arun_streams_output_to_callbacks(self):
        code, got, on = self._waiting_cell()

        async def main():
            return await Repl().arun("astreamed", code, on_stdout=on("out"))
        r = asyncio.run(main())
        self.assertEqual((r.value, r.stdout), ("7", "first\nsecond\n"))
        self.assertEqual("".join(t for s, t in got if s == "out"), r.stdout)

    def test_a_raising_callback_ends_the_call(self):
        def boom(text):
            raise RuntimeError("host says stop")
        repl = Repl()
        with self.assertRaises(RuntimeError):
            repl.run("cb", "x = 1\nprint('a', flush=True)\nimport time\ntime.sleep(60)",
                     on_stdout=boom)
        self.assertEqual(repl.run("cb", "'x' in dir()").value, "False")

    def test_housekeeping(self):
        repl = Repl(store=os.path.join(self.tmp, "house"))
        repl.run("house-a", "a = 1")
        repl.run("house-b", "b = [1, 2, 3]")
        infos = repl.sessions()
        self.assertEqual([s.id for s in infos], ["house-a", "house-b"])
        for s in infos:
            self.assertIsInstance(s, SessionInfo)
            self.assertGreater(s.size_bytes, 0)
            self.assertEqual(s.last_used.utcoffset().total_seconds(), 0)
            self.assertLess(abs(time.time() - s.last_used.timestamp()), 600)
        self.assertEqual(repl.reset("house-a"), 1)
        self.assertEqual([s.id for s in repl.sessions()], ["house-b"])
        self.assertEqual(repl.reset("house-a"), 0)
        repl.run("house-c", "c = 3")
        self.assertEqual(repl.reset("all"), 2)
        self.assertEqual(repl.sessions(), [])
        self.assertEqual(repl.run("house-b", "'b' in dir()").value, "False")
        support.stop_server(os.path.join(self.tmp, "house"))


class Results(support.StoreCase):

    def setUp(self):
        super().setUp()
        self.repl = Repl(inject={"mt": mytools})

    def test_fields_of_a_good_cell(self):
        r = self.repl.run("fields", "import math\nprint('hi')\nx = 2\nmath.pi * x")
        self.assertTrue(r.ok)
        self.assertEqual(r.exit_code, 0)
        self.assertEqual(r.stdout, "hi\n")
        self.assertEqual(r.value, "6.283185307179586")
        self.assertIsNone(r.error)
        self.assertEqual(r.held, ["math", "x"])
        self.assertEqual(r.dropped, [])
        self.assertEqual(r.text, "hi\n6.283185307179586\nsession now holds: math, x")
        self.assertEqual((r.status, r.session_state, r.execution_count), ("ok", "created", 1))
        self.assertEqual(set(r.timings_ms), {"startup", "load", "gate", "cell", "dump",
                                             "save", "total"})
        r = self.repl.run("fields", "x = None")
        self.assertIsNone(r.value)
        self.assertEqual((r.session_state, r.execution_count), ("committed", 2))

    def test_toolbox_exception_exit_code(self):
        r = self.repl.run("tool-err", "mt.load('nope')")
        self.assertFalse(r.ok)
        self.assertEqual(r.exit_code, 3)
        self.assertEqual(r.status, "error")
        self.assertTrue(r.error.startswith("ToolError: no data set named 'nope'"), r.error)
        self.assertTrue(r.error.endswith("(line 1)"))
        self.assertIn("ToolError", r.traceback[-1])

    def test_other_exception_is_1_and_keeps_earlier_names(self):
        r = self.repl.run("exc", "a = 1\nprint('before')\n1 / 0")
        self.assertEqual((r.ok, r.exit_code), (False, 1))
        self.assertEqual(r.error, "ZeroDivisionError: division by zero (line 3)")
        self.assertEqual(r.stdout, "before\n")
        self.assertEqual(r.held, ["a"])
        self.assertIn("ZeroDivisionError: division by zero (line 3)\n", r.text)
        self.assertEqual(self.repl.run("exc", "a").value, "1")

    def test_hints_come_with_the_error(self):
        r = self.repl.run("hint", "mt.ad(1, 2)")
        self.assertEqual(r.hints, ["hint: did you mean mt.add?"])
        self.assertIn("\nhint: did you mean mt.add?", r.text)

    def test_timeout_is_124_and_the_session_is_kept(self):
        repl = Repl(timeout=1)
        repl.run("slow", "kept = 'yes'")
        r = repl.run("slow", "kept = 'no'\nimport time\ntime.sleep(30)")
        self.assertEqual((r.ok, r.exit_code, r.status), (False, 124, "timeout"))
        self.assertTrue(r.error.startswith("TimeoutError: cell killed after exceeding "
                                           "its 1s timeout"), r.error)
        self.assertEqual(r.session_state, "rolled_back")
        self.assertEqual(r.held, ["kept"])   # what the session holds, rolled back
        self.assertEqual(repl.run("slow", "kept").value, "'yes'")

    def test_dropped_names(self):
        r = self.repl.run("drop", "n = 1\ng = (i for i in range(3))\nn")
        self.assertTrue(r.ok)
        self.assertEqual(r.dropped, ["g"])
        self.assertEqual(r.held, ["n"])
        self.assertIn("generator", r.dropped_reasons["g"])
        self.assertIn("warning: dropped unpicklable names (gone next call): g (", r.text)
        r = self.repl.run("drop", "g")
        self.assertEqual(r.exit_code, 1)
        self.assertTrue(r.error.startswith("NameError"), r.error)

    def test_syntax_error(self):
        r = self.repl.run("syn", "x = 1\nif")
        self.assertEqual(r.exit_code, 1)
        self.assertTrue(r.error.startswith("SyntaxError"), r.error)
        self.assertTrue(r.error.endswith("(line 2)"), r.error)

    def test_large_cell_goes_on_stdin(self):
        code = "s = '" + "x" * (300 * 1024) + "'\nlen(s)"
        self.assertEqual(self.repl.run("big", code).value, str(300 * 1024))

    def test_code_that_starts_with_a_dash(self):
        self.assertEqual(self.repl.run("dash", "-1 + 3").value, "2")

    def test_failure_without_json_is_a_result(self):
        # The store directory refused: the binary prints only a dolsot: line.
        os.makedirs(os.path.join(self.tmp, "open"), mode=0o777, exist_ok=True)
        os.chmod(os.path.join(self.tmp, "open"), 0o777)
        repl = Repl(store=os.path.join(self.tmp, "open"))
        r = repl.run("refused", "1")
        self.assertEqual((r.ok, r.exit_code, r.session_state), (False, 1, "unchanged"))
        self.assertTrue(r.error.startswith("dolsot: "), r.error)


class CallIds(support.StoreCase):
    """run/arun(call_id=...) is the binary's --call-id: a retry of a call
    that saved returns the recorded Result and does not run the cell."""

    CELL = ("import os\n"
            "n = globals().get('n', 0) + 1\n"
            "with open(os.environ['DOLSOT_PYTEST_LOG'], 'a') as f:\n"
            "    f.write('ran\\n')\n"
            "print(n)\n"
            "n")

    def setUp(self):
        super().setUp()
        self.log = os.path.join(self.tmp, f"ran-{self._testMethodName}")
        os.environ["DOLSOT_PYTEST_LOG"] = self.log

    def runs(self):
        with open(self.log) as f:
            return len(f.read().splitlines())

    def test_a_retry_does_not_run_the_cell_again(self):
        repl = Repl()
        first = repl.run("cid", self.CELL, call_id="c-1")
        again = repl.run("cid", self.CELL, call_id="c-1")
        self.assertTrue(first.ok, first.error)
        self.assertEqual((first.value, first.stdout), ("1", "1\n"))
        self.assertEqual((again.value, again.stdout, again.exit_code),
                         (first.value, first.stdout, first.exit_code))
        self.assertEqual(self.runs(), 1)
        nxt = repl.run("cid", self.CELL, call_id="c-2")
        self.assertEqual(nxt.value, "2")
        self.assertEqual(repl.run("cid", self.CELL).value, "3")
        self.assertEqual(self.runs(), 3)

    def test_arun_retry(self):
        repl = Repl()

        async def main():
            a = await repl.arun("acid", self.CELL, call_id="a:1")
            b = await repl.arun("acid", self.CELL, call_id="a:1")
            return a, b
        a, b = asyncio.run(main())
        self.assertEqual((a.value, b.value), ("1", "1"))
        self.assertEqual(self.runs(), 1)

    def test_bad_call_ids_raise_before_a_process(self):
        repl = Repl()
        for bad in ["", "a b", "x" * 129, "é", 7]:
            with self.assertRaises(InvalidSession):
                repl.run("cid-bad", "1", call_id=bad)
        self.assertFalse(os.path.exists(self.log))


class CallerMistakes(Counting):
    """Mistakes raise the documented exception and start no process."""

    def setUp(self):
        super().setUp()
        self.bin = self.counting_binary()
        self.repl = Repl(binary=self.bin)
        self.base = len(self.starts())

    def assertNoStart(self):
        self.assertEqual(len(self.starts()), self.base)

    def test_bad_session_ids(self):
        for sid in ["", "has space", ".hidden", "all", "x" * 129, "a/b", None, 7]:
            with self.subTest(sid=sid):
                with self.assertRaises(InvalidSession):
                    self.repl.run(sid, "1")
        self.assertNoStart()

    def test_empty_code(self):
        for code in ["", "  \n\t", None, b"1"]:
            with self.subTest(code=code):
                with self.assertRaises(InvalidSession):
                    self.repl.run("s", code)
        self.assertNoStart()

    def test_bad_inject(self):
        cases = [{"mt": object()}, {"mt": 42}, {"mt": "not a name"}, {"mt": "a..b"},
                 {"1x": "mytools"}, {"class": "mytools"}, {"mt": "import"}, ["mytools"]]
        for inject in cases:
            with self.subTest(inject=inject):
                repl = Repl(inject=inject, binary=self.bin)
                with self.assertRaises(InvalidToolbox):
                    repl.run("s", "1")
                with self.assertRaises(InvalidToolbox):
                    asyncio.run(repl.arun("s", "1"))
        self.assertNoStart()

    def test_arun_mistakes(self):
        with self.assertRaises(InvalidSession):
            asyncio.run(self.repl.arun("bad id", "1"))
        with self.assertRaises(InvalidSession):
            asyncio.run(self.repl.arun("s", ""))
        self.assertNoStart()

    def test_reset_ids(self):
        with self.assertRaises(InvalidSession):
            self.repl.reset("../x")
        self.assertNoStart()
        self.assertEqual(self.repl.reset("all"), 0)

    def test_exceptions_are_value_errors(self):
        self.assertTrue(issubclass(InvalidSession, ValueError))
        self.assertTrue(issubclass(InvalidToolbox, ValueError))

    def test_bad_settings_raise_at_construction(self):
        for kw in [{"timeout": 0}, {"timeout": -1}, {"timeout": float("inf")},
                   {"timeout": float("nan")}, {"max_output": -1}, {"ty_bin": ""}]:
            with self.subTest(kw=kw):
                self.assertRaises(ValueError, Repl, binary=self.bin, **kw)
        for kw in [{"timeout": "5"}, {"timeout": True}, {"max_output": 1.5},
                   {"typecheck": 1}, {"store": 42}, {"store": object()}]:
            with self.subTest(kw=kw):
                self.assertRaises(TypeError, Repl, binary=self.bin, **kw)

    def test_binary_checked_once(self):
        Repl(binary=self.bin)
        Repl(binary=self.bin)
        self.assertEqual(len(self.starts()), self.base)
        self.assertTrue(all("--help" in s for s in self.starts()))


class Precedence(support.StoreCase):
    """Explicit argument > environment variable > default, for each setting."""

    def test_timeout(self):
        code = "import time\ntime.sleep(2)\n'done'"
        with env(DOLSOT_TIMEOUT="1"):
            self.assertEqual(Repl().run("t-env", code).exit_code, 124)
            self.assertEqual(Repl(timeout=15).run("t-arg", code).value, "'done'")
        with env(DOLSOT_TIMEOUT="15"):
            self.assertEqual(Repl(timeout=0.5).run("t-arg2", code).exit_code, 124)

    def test_max_output(self):
        code = "print('y' * 300)\n'v' * 300"
        r = Repl().run("mo-default", code)
        self.assertEqual((len(r.stdout), r.truncated), (301, {}))
        with env(DOLSOT_MAX_OUTPUT="50"):
            r = Repl().run("mo-env", code)
            self.assertEqual(r.truncated["stdout"]["kept"], 50)
            self.assertEqual(r.truncated["value"]["kept"], 50)
            r = Repl(max_output=20).run("mo-arg", code)
            self.assertEqual(r.truncated["stdout"], {"kept": 20, "cut": 281, "head": 10,
                                                     "tail": 10, "cut_bytes": 281})
            self.assertEqual(r.stdout, "y" * 10 + "\n[output truncated: kept the first 10 "
                             "and the last 10 chars; cut 281 bytes (281 chars) here]\n" +
                             "y" * 9 + "\n")
            r = Repl(max_output=0).run("mo-zero", code)
            self.assertEqual(r.truncated, {})

    def test_typecheck_and_ty_bin(self):
        code = "x = mt.add(1, 2, 3)"
        inject = {"mt": mytools}
        with env(DOLSOT_TYPECHECK="1", DOLSOT_TY_BIN="mypy"):
            r = Repl(inject=inject).run("tc-env", code)
            self.assertEqual(r.status, "rejected")
            self.assertEqual(r.diagnostics[0]["code"], "call-arg")
            r = Repl(inject=inject, typecheck=False).run("tc-arg", code)
            self.assertEqual((r.status, r.error.split(":")[0]), ("error", "TypeError"))
        with env(DOLSOT_TYPECHECK="0", DOLSOT_TY_BIN="/nonexistent/checker"):
            r = Repl(inject=inject, typecheck=True, ty_bin="mypy").run("tc-arg2", code)
            self.assertEqual(r.status, "rejected")
            # The configured checker missing: the next installed one (mypy).
            r = Repl(inject=inject, typecheck=True).run("tc-env2", code)
            self.assertEqual(r.status, "rejected")
        empty = os.path.join(self.tmp, "no-checkers")
        with env(DOLSOT_TYPECHECK="1", PATH=empty):
            r = Repl(inject=inject).run("tc-none", code)
            self.assertEqual(r.status, "error")   # no checker: the gate fails open

    def test_store_argument_beats_cache_dir(self):
        other = os.path.join(self.tmp, "elsewhere")
        Repl(store=other).run("st-arg", "a = 1")
        self.assertTrue(os.path.exists(os.path.join(other, "st-arg.pkl")))
        self.assertEqual([s.id for s in Repl(store=FileStore(other)).sessions()],
                         ["st-arg"])
        self.assertEqual([s.id for s in Repl().sessions() if s.id == "st-arg"], [])
        support.stop_server(other)

    def test_malformed_environment_is_dolsot_error(self):
        with env(DOLSOT_MAX_OUTPUT="lots"):
            with self.assertRaises(DolsotError) as cm:
                Repl().run("bad-env", "1")
        self.assertIn("DOLSOT_MAX_OUTPUT", str(cm.exception))


class Stores(support.StoreCase):

    def test_memory_store(self):
        with env(DOLSOT_SERVER="auto"):
            a, b = MemoryStore(), MemoryStore()
            try:
                ra, rb = Repl(store=a), Repl(store=b)
                ra.run("mem", "m = 'a'")
                self.assertEqual(ra.run("mem", "m").value, "'a'")
                self.assertEqual(rb.run("mem", "'m' in dir()").value, "False")
                self.assertEqual([s.id for s in ra.sessions()], ["mem"])
                self.assertEqual(os.listdir(a.cache_dir).count("mem.pkl"), 0)
            finally:
                a.close()
                b.close()
            self.assertIsNone(a.cache_dir)

    def test_store_strings(self):
        self.assertIsInstance(Repl(store="file").store, FileStore)
        m = Repl(store="memory").store
        self.assertIsInstance(m, MemoryStore)
        m.close()

    def test_ttl_days(self):
        d = os.path.join(self.tmp, "ttl")
        repl = Repl(store=FileStore(d, ttl_days=1))
        repl.run("old", "x = 1")
        past = time.time() - 3 * 86400
        os.utime(os.path.join(d, "old.pkl"), (past, past))
        self.assertEqual(Repl(store=FileStore(d, ttl_days=0)).run(
            "other", "1").exit_code, 0)
        self.assertIn("old", [s.id for s in Repl(store=FileStore(d, ttl_days=0)).sessions()])
        repl.run("other", "1")
        self.assertNotIn("old", [s.id for s in repl.sessions()])
        support.stop_server(d)


class Arun(support.StoreCase):

    def test_concurrent_sessions(self):
        repl = Repl()

        async def main():
            return await asyncio.gather(*(repl.arun(f"par-{i}", f"v = {i}\nv * 10")
                                          for i in range(3)))
        self.assertEqual([r.value for r in asyncio.run(main())], ["0", "10", "20"])

    def test_cancel_kills_the_call_and_rolls_back(self):
        repl = Repl()
        repl.run("cancel", "x = 'before'")
        pidf = os.path.join(self.tmp, "child.pid")
        code = textwrap.dedent(f"""\
            import subprocess, time
            p = subprocess.Popen(["sleep", "300"])
            x = 'during'
            open({pidf!r}, "w").write(str(p.pid))
            time.sleep(60)
            """)
        procs = []

        async def main():
            task = asyncio.create_task(repl.arun("cancel", code))
            deadline = time.monotonic() + 30
            while not os.path.exists(pidf) and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.1)
            procs.extend(p for p in os.listdir("/proc") if p.isdigit()
                         and _cmdline(p).startswith(BIN) and _descends_from_us(p))
            task.cancel()
            with self.assertRaises(asyncio.CancelledError):
                await task
        asyncio.run(main())
        with open(pidf) as f:
            sleep_pid = int(f.read())
        deadline = time.monotonic() + 10
        while support.pid_alive(sleep_pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertFalse(support.pid_alive(sleep_pid), "the cell's child survived")
        self.assertTrue(procs, "the call's binary was not seen running")
        for p in procs:
            self.assertFalse(support.pid_alive(int(p)), f"dolsot process {p} survived")
        self.assertEqual(repl.run("cancel", "x").value, "'before'")

    def test_interrupted_run_kills_the_call(self):
        """run() in a host that gets SIGINT (KeyboardInterrupt) ends the call
        the same way a cancelled arun does."""
        pidf = os.path.join(self.tmp, "int.pid")
        cell = textwrap.dedent(f"""\
            import subprocess, time
            p = subprocess.Popen(["sleep", "300"])
            x = "during"
            open({pidf!r}, "w").write(str(p.pid))
            time.sleep(60)
            """)
        host = textwrap.dedent(f"""\
            import sys
            sys.path.insert(0, {os.path.join(ROOT, "python")!r})
            from dolsot import Repl
            repl = Repl()
            repl.run("intr", "x = 'before'")
            print("ready", flush=True)
            try:
                repl.run("intr", {cell!r})
            except KeyboardInterrupt:
                print("interrupted", flush=True)
            print(repl.run("intr", "x").value)
            """)
        p = subprocess.Popen([sys.executable, "-c", host], stdout=subprocess.PIPE,
                             text=True)
        self.assertEqual(p.stdout.readline(), "ready\n")
        deadline = time.monotonic() + 30
        while not os.path.exists(pidf) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.1)
        p.send_signal(signal.SIGINT)
        out, _ = p.communicate(timeout=60)
        self.assertEqual(out, "interrupted\n'before'\n")
        with open(pidf) as f:
            sleep_pid = int(f.read())
        deadline = time.monotonic() + 10
        while support.pid_alive(sleep_pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertFalse(support.pid_alive(sleep_pid), "the cell's child survived")

    def test_timeout_through_arun(self):
        r = asyncio.run(Repl(timeout=0.5).arun("atime", "import time\ntime.sleep(10)"))
        self.assertEqual(r.exit_code, 124)


def _descends_from_us(pid):
    """True when pid is a child of this process, or a child's child...: not
    a process of another suite running the same binary beside this one."""
    try:
        while int(pid) > 1:
            with open(f"/proc/{pid}/stat") as f:
                pid = f.read().rsplit(")", 1)[1].split()[1]
            if int(pid) == os.getpid():
                return True
    except (OSError, IndexError, ValueError):
        pass
    return False


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


class Discovery(support.StoreCase):

    def test_explicit_missing(self):
        with self.assertRaises(BinaryNotFound) as cm:
            Repl(binary=os.path.join(self.tmp, "nope"))
        self.assertIn("binary=", str(cm.exception))
        self.assertIn("make install", str(cm.exception))

    def test_dolsot_bin_missing_is_not_skipped(self):
        with env(DOLSOT_BIN=os.path.join(self.tmp, "nope")):
            with self.assertRaises(BinaryNotFound) as cm:
                Repl()
        self.assertIn("DOLSOT_BIN", str(cm.exception))

    def test_not_a_dolsot_with_json(self):
        with self.assertRaises(DolsotError) as cm:
            Repl(binary="/bin/true")
        self.assertIn("--json", str(cm.exception))

    def test_tree_then_path(self):
        """Outside the tree the package looks on PATH, and says so when the
        binary is not there."""
        pkg = os.path.join(self.tmp, "site")
        shutil.copytree(os.path.join(ROOT, "python", "dolsot"), os.path.join(pkg, "dolsot"))
        bindir = os.path.join(self.tmp, "bin")
        os.makedirs(bindir)
        os.symlink(BIN, os.path.join(bindir, "dolsot"))
        probe = "import dolsot; print(dolsot.Repl().binary)"
        base = {k: v for k, v in os.environ.items() if k != "DOLSOT_BIN"}
        p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                           env=dict(base, PYTHONPATH=pkg, PATH=bindir + ":/usr/bin:/bin"))
        self.assertEqual(p.stdout.strip(), os.path.join(bindir, "dolsot"), p.stderr)
        p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                           env=dict(base, PYTHONPATH=pkg, PATH="/usr/bin:/bin"))
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("BinaryNotFound: the dolsot binary is not on PATH", p.stderr)
        p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                           env=dict(base, PYTHONPATH=os.path.join(ROOT, "python"),
                                    PATH="/usr/bin:/bin"))
        self.assertEqual(p.stdout.strip(), os.path.join(ROOT, "dolsot"), p.stderr)


class Package(unittest.TestCase):

    def test_public_names(self):
        for name in ["Repl", "Result", "SessionInfo", "InProcessSession",
                     "InvalidSession", "InvalidToolbox"]:
            self.assertTrue(hasattr(dolsot, name), name)
        self.assertTrue(callable(dolsot.sandbox.check_ast)
                        if hasattr(dolsot, "sandbox") else
                        __import__("dolsot.sandbox").sandbox.check_ast)

    def test_result_fields(self):
        fields = list(Result.__dataclass_fields__)
        self.assertEqual(fields[:8], ["ok", "value", "stdout", "error", "exit_code",
                                      "held", "dropped", "text"])
        self.assertEqual(SessionInfo._fields, ("id", "size_bytes", "last_used"))


if __name__ == "__main__":
    unittest.main()
