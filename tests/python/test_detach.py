"""Repl.run(..., detach_after=) against the real ./dolsot: a Handle's
wait, peek and cancel, Repl.list_running and the async variants. The cell
says it runs by opening a FIFO the test reads, and goes on when the test
writes another: no sleeps."""

import asyncio
import os
import threading
import unittest

import support

from dolsot import Handle, Repl, Result


class Detached(support.StoreCase):

    def setUp(self):
        super().setUp()
        d = os.path.join(self.tmp, f"fifos-{self.id().rsplit('.', 1)[-1]}")
        os.mkdir(d)
        self.ready = os.path.join(d, "ready")
        self.go_fifo = os.path.join(d, "go")
        os.mkfifo(self.ready)
        os.mkfifo(self.go_fifo)
        self.repl = Repl(timeout=60)

    def cell(self):
        return (f"print('first')\nopen({self.ready!r}, 'w').close()\n"
                f"open({self.go_fifo!r}).read()\nprint('second')\n"
                "n = globals().get('n', 0) + 1\n")

    def wait_ready(self):
        with open(self.ready) as f:
            f.read()

    def go(self):
        with open(self.go_fifo, "w") as f:
            f.write("go")

    def test_a_quick_cell_is_its_result(self):
        r = self.repl.run("q", "6 * 7", detach_after=600)
        self.assertIsInstance(r, Result)
        self.assertEqual(r.value, "42")

    def test_wait_peek_and_list(self):
        h = self.repl.run("s", self.cell(), detach_after=0)
        self.assertIsInstance(h, Handle)
        self.assertRegex(h.id, r"^[0-9a-f]{32}$")
        self.assertEqual(h.session, "s")
        self.wait_ready()
        self.assertIn(h.id, [x.id for x in self.repl.list_running()])
        self.assertEqual(h.peek().state, "running")
        with self.assertRaises(TimeoutError):
            h.wait(timeout=0.1)
        self.go()
        r = h.wait()
        self.assertTrue(r.ok)
        self.assertEqual(r.stdout, "first\nsecond\n")
        self.assertEqual(h.wait().stdout, "first\nsecond\n")
        self.assertEqual(self.repl.list_running(), [])
        self.assertEqual(self.repl.run("s", "n").value, "1")
        self.assertFalse(h.cancel())

    def test_cancel_leaves_the_session(self):
        self.repl.run("c", "before = 1")
        h = self.repl.run("c", self.cell(), detach_after=0)
        self.wait_ready()
        self.assertTrue(h.cancel())
        self.assertFalse(h.wait().ok)
        self.assertEqual(self.repl.run("c", "('n' in globals(), before)").value,
                         "(False, 1)")

    def test_async(self):
        async def main():
            h = await self.repl.arun("a", self.cell(), detach_after=0)
            self.assertIsInstance(h, Handle)
            await asyncio.get_running_loop().run_in_executor(None, self.wait_ready)
            self.assertEqual((await h.peek_async()).state, "running")
            threading.Thread(target=self.go).start()
            return await h.wait_async()
        r = asyncio.run(main())
        self.assertEqual(r.stdout, "first\nsecond\n")

    def test_refusals(self):
        with self.assertRaises(ValueError):
            self.repl.run("s", "1", detach_after=-1)
        with self.assertRaises(ValueError):
            self.repl.run("s", "1", detach_after=1, on_stdout=print)


if __name__ == "__main__":
    unittest.main()
