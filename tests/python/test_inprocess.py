"""InProcessSession: live objects, the AST gate, the cooperative timeout
(what it does and what it cannot do), arun, and the same Result type."""

import asyncio
import socket
import threading
import time
import unittest

from support import env

import mytools
from dolsot import InProcessSession, InvalidSession, InvalidToolbox, Result
from dolsot.sandbox import UnsafeCode, check_ast


class LiveNamespace(unittest.TestCase):

    def test_live_objects_cross_cells_by_reference(self):
        a, b = socket.socketpair()
        self.addCleanup(a.close)
        self.addCleanup(b.close)
        lock = threading.Lock()
        s = InProcessSession(inject={"conn": a, "lock": lock, "mt": mytools})
        r = s.run("g = (i * i for i in range(5))\nconn.send(b'ping')\nnext(g)")
        self.assertEqual((r.ok, r.value, r.exit_code), (True, "0", 0))
        self.assertEqual(b.recv(4), b"ping")
        self.assertEqual(s.run("next(g)").value, "1")       # the same generator
        self.assertEqual(s.run("lock.acquire()").value, "True")
        self.assertTrue(lock.locked())                       # the host's own lock
        self.assertEqual(s.run("mt.add(2, 3)").value, "5")
        self.assertIs(s.namespace["conn"], a)
        self.assertEqual(r.held, ["g"])
        self.assertEqual(r.dropped, [])
        self.assertEqual(s.held, ["g"])

    def test_module_name_is_imported_here(self):
        s = InProcessSession(inject={"jj": "json"})
        self.assertEqual(s.run("jj.dumps([1])").value, "'[1]'")

    def test_result_like_repl(self):
        s = InProcessSession(inject={"mt": mytools})
        r = s.run("print('hi')\nx = 2\nx * 21")
        self.assertIsInstance(r, Result)
        self.assertEqual((r.stdout, r.value, r.error), ("hi\n", "42", None))
        self.assertEqual(r.text, "hi\n42")
        r = s.run("mt.load('nope')")
        self.assertEqual((r.ok, r.exit_code, r.status), (False, 3, "error"))
        self.assertTrue(r.error.startswith("ToolError: no data set named 'nope'"))
        self.assertTrue(r.error.endswith("(line 1)"))
        r = s.run("y = 1\n\n1 / 0")
        self.assertEqual(r.error, "ZeroDivisionError: division by zero (line 3)")
        self.assertEqual(r.exit_code, 1)
        self.assertEqual(s.run("y").value, "1")
        r = s.run("if")
        self.assertEqual(r.exit_code, 1)
        self.assertTrue(r.error.startswith("SyntaxError"))
        self.assertIsNone(s.run("x = None\nx").value)

    def test_top_level_await(self):
        s = InProcessSession()
        r = s.run("import asyncio\nawait asyncio.sleep(0)\nv = 7\nawait asyncio.sleep(0, v)")
        self.assertEqual(r.value, "7")

    def test_reset_keeps_injected(self):
        s = InProcessSession(inject={"mt": mytools})
        s.run("z = 1")
        s.reset()
        self.assertEqual(s.held, [])
        self.assertEqual(s.run("mt.add(1, 1)").value, "2")

    def test_mistakes(self):
        s = InProcessSession()
        for code in ["", "   \n", None]:
            with self.assertRaises(InvalidSession):
                s.run(code)
        with self.assertRaises(InvalidToolbox):
            InProcessSession(inject={"not an alias": 1})
        with self.assertRaises(InvalidToolbox):
            InProcessSession(inject={"m": "no_such_module_here"})
        with self.assertRaises(ValueError):
            InProcessSession(timeout=0)
        with self.assertRaises(TypeError):
            InProcessSession(ast_gate="no")

    def test_max_output(self):
        with env(DOLSOT_MAX_OUTPUT="10"):
            r = InProcessSession().run("print('x' * 50)")
            self.assertEqual(r.truncated["stdout"], {"kept": 10, "cut": 41, "head": 5,
                                                     "tail": 5, "cut_bytes": 41})
            self.assertTrue(r.stdout.startswith("xxxxx\n[output truncated: kept the first 5 "))
            r = InProcessSession(max_output=0).run("print('x' * 50)")
            self.assertEqual(r.truncated, {})

    def test_host_streams_keep_their_attributes(self):
        import sys
        enc, fileno = sys.stdout.encoding, sys.stderr.fileno()
        InProcessSession().run("print('x')")
        self.assertEqual((sys.stdout.encoding, sys.stderr.fileno()), (enc, fileno))

    def test_threads_print_to_their_own_capture(self):
        s = InProcessSession()
        box = []
        t = threading.Thread(target=lambda: box.append(s.run("print('mine')")))
        t.start()
        t.join()
        self.assertEqual(box[0].stdout, "mine\n")


class Gate(unittest.TestCase):

    def test_check_ast_rejects(self):
        s = InProcessSession(ast_gate=check_ast)
        for code in ["import os", "from subprocess import run", "open('/etc/passwd')",
                     "().__class__.__base__", "eval('1')", "__import__('os')"]:
            with self.subTest(code=code):
                r = s.run(f"ran = True\n{code}")
                self.assertEqual((r.ok, r.exit_code, r.status), (False, 1, "rejected"))
                self.assertTrue(r.error.startswith("UnsafeCode: "), r.error)
                self.assertIn("(line 2)", r.error)
                self.assertNotIn("ran", s.namespace)     # nothing of the cell ran
        self.assertEqual(s.run("import math\nmath.floor(2.5)").value, "2")

    def test_check_ast_directly(self):
        with self.assertRaises(UnsafeCode):
            check_ast("import ctypes")
        check_ast("x = [i for i in range(3)]")

    def test_own_gate(self):
        def no_loops(tree):
            import ast
            if any(isinstance(n, (ast.For, ast.While)) for n in ast.walk(tree)):
                raise PermissionError("loops are not allowed here")
        s = InProcessSession(ast_gate=no_loops)
        r = s.run("while True: pass")
        self.assertEqual(r.status, "rejected")
        self.assertTrue(r.error.startswith("PermissionError: loops are not allowed"))
        self.assertEqual(s.run("sum([1, 2])").value, "3")


class CooperativeTimeout(unittest.TestCase):

    def test_pure_python_cell_stops(self):
        s = InProcessSession(timeout=0.5)
        r = s.run("n = 0\nwhile True:\n    n += 1")
        self.assertEqual((r.ok, r.exit_code, r.status), (False, 124, "timeout"))
        self.assertTrue(r.error.startswith("TimeoutError: cell exceeded its 0.5s timeout"))
        self.assertIn("cooperative", r.error)
        self.assertEqual(r.warnings, ["warning: the cell stopped when asked"])
        self.assertGreater(s.namespace["n"], 0)     # not rolled back
        n = s.namespace["n"]
        time.sleep(0.2)
        self.assertEqual(s.namespace["n"], n)        # and no longer running

    def test_blocked_cell_keeps_running(self):
        """What it cannot do: a cell blocked in C outlives its timeout and
        goes on running; the stop request only lands when it is back in
        Python bytecode."""
        s = InProcessSession(timeout=0.3)
        t0 = time.monotonic()
        r = s.run("import time\nstarted = 1\ntime.sleep(1.5)\nlate = 'arrived'")
        self.assertLess(time.monotonic() - t0, 1.4)
        self.assertEqual(r.exit_code, 124)
        self.assertIn("leaked daemon thread", r.warnings[0])
        self.assertNotIn("late", s.namespace)
        leaked = [t for t in threading.enumerate() if t.name == "dolsot-inprocess-cell"]
        self.assertTrue(leaked)
        self.assertTrue(all(t.is_alive() for t in leaked))
        for t in leaked:
            t.join(30)
        self.assertEqual(s.namespace["started"], 1)
        self.assertNotIn("late", s.namespace)   # TimeoutError hit once sleep returned

    def test_cell_that_catches_the_request(self):
        s = InProcessSession(timeout=0.3)
        r = s.run("import time\nfor _ in range(20):\n    try:\n        time.sleep(0.05)\n"
                  "    except TimeoutError:\n        pass\nstubborn = True")
        self.assertEqual(r.exit_code, 124)
        for t in threading.enumerate():
            if t.name == "dolsot-inprocess-cell":
                t.join(30)
        self.assertTrue(s.namespace["stubborn"])

    def test_timeout_precedence(self):
        with env(DOLSOT_TIMEOUT="0.3"):
            self.assertEqual(InProcessSession().timeout, 0.3)
            self.assertEqual(InProcessSession(timeout=4).timeout, 4.0)
        with env(DOLSOT_TIMEOUT=None):
            self.assertEqual(InProcessSession().timeout, 20.0)
        with env(DOLSOT_TIMEOUT="soon"):
            with self.assertRaises(ValueError):
                InProcessSession()


class Async(unittest.TestCase):

    def test_arun(self):
        s = InProcessSession(inject={"mt": mytools})

        async def main():
            r1 = await s.arun("a = mt.add(1, 2)\na")
            r2 = await s.arun("a * 2")
            return r1, r2
        r1, r2 = asyncio.run(main())
        self.assertEqual((r1.value, r2.value), ("3", "6"))

    def test_arun_timeout_and_cancel(self):
        s = InProcessSession(timeout=0.3)

        async def main():
            r = await s.arun("while True: pass")
            s.timeout = 30
            task = asyncio.create_task(s.arun("k = 0\nwhile True:\n    k += 1"))
            await asyncio.sleep(0.2)
            task.cancel()
            with self.assertRaises(asyncio.CancelledError):
                await task
            return r
        r = asyncio.run(main())
        self.assertEqual(r.exit_code, 124)
        k = s.namespace["k"]
        time.sleep(0.3)
        self.assertEqual(s.namespace["k"], k)      # the cancelled cell stopped


if __name__ == "__main__":
    unittest.main()
