"""Repl(tools=...): callables of this process called from cells as plain
functions over --tools-fd, with the signatures inspect gives; their errors
as the cell's exceptions; coroutine functions awaited by arun; and a bad
tool refused at construction."""

import asyncio
import threading
import unittest

import support

from dolsot import InProcessSession, Repl


def search(query: str, limit: int = 3) -> list[str]:
    """Search the docs."""
    return [f"{query} #{i}" for i in range(limit)]


def fails(why: str) -> None:
    raise ValueError(why)


class Tools(support.StoreCase):

    def test_a_callable_is_a_function_with_its_signature(self):
        r = Repl(tools={"search": search}).run(
            "t", "import inspect\nprint(search('q', limit=2))\n"
            "print(inspect.signature(search))\nprint(search.__doc__)")
        self.assertTrue(r.ok, r.error)
        self.assertEqual(r.stdout, "['q #0', 'q #1']\n"
                         "(query: str, limit: int = 3) -> list[str]\nSearch the docs.\n")

    def test_it_runs_in_this_process(self):
        seen = []

        def note(x: int) -> int:
            seen.append((x, threading.current_thread().name))
            return x + 1

        r = Repl(tools={"note": note}).run("t", "note(41)")
        self.assertEqual(r.value, "42")
        self.assertEqual([x for x, _ in seen], [41])

    def test_an_exception_is_the_cells_with_its_message_and_the_session_is_intact(self):
        repl = Repl(tools={"fails": fails})
        self.assertTrue(repl.run("e", "x = 1").ok)
        r = repl.run("e", "try:\n    fails('no such order')\nexcept RuntimeError as e:\n"
                     "    print(type(e).__name__, e)\nx = 2\nfails('again')")
        self.assertFalse(r.ok)
        self.assertEqual(r.stdout, "HostToolError no such order\n")
        self.assertIn("HostToolError: again", r.error)
        self.assertEqual(repl.run("e", "x").value, "2")

    def test_arun_awaits_a_coroutine_function_on_the_loop(self):
        loops = []

        async def double(x: int) -> int:
            loops.append(asyncio.get_running_loop())
            await asyncio.sleep(0)
            return 2 * x

        async def main():
            repl = Repl(tools={"double": double, "search": search})
            r = await repl.arun("a", "print(double(21), search('z', 1))")
            return r, asyncio.get_running_loop()

        r, loop = asyncio.run(main())
        self.assertTrue(r.ok, r.error)
        self.assertEqual(r.stdout, "42 ['z #0']\n")
        self.assertEqual(loops, [loop])

    def test_a_bad_tool_is_refused_at_construction(self):
        with self.assertRaises(ValueError):
            Repl(tools={"_hidden": search})
        with self.assertRaises(TypeError):
            Repl(tools={"x": 3})


class InProcessTools(unittest.TestCase):
    """InProcessSession(tools=...): the same functions, in this process."""

    def test_a_tool_keeps_its_signature_and_its_error_is_host_tool_error(self):
        s = InProcessSession(tools={"search": search, "fails": fails})
        r = s.run("import inspect\nprint(search('q', 1), inspect.signature(search))\n"
                  "try:\n    fails('nope')\nexcept RuntimeError as e:\n"
                  "    print(type(e).__name__, e)")
        self.assertTrue(r.ok, r.error)
        self.assertEqual(r.stdout, "['q #0'] (query: str, limit: int = 3) -> list[str]\n"
                         "HostToolError nope\n")
        self.assertEqual(s.held, ["inspect"])
        s.reset()
        self.assertEqual(s.run("search('z', 1)").value, "['z #0']")

    def test_arun_awaits_a_coroutine_function_on_its_loop(self):
        loops = []

        async def double(x: int) -> int:
            loops.append(asyncio.get_running_loop())
            return 2 * x

        async def main():
            s = InProcessSession(tools={"double": double})
            return await s.arun("double(21)"), asyncio.get_running_loop()

        r, loop = asyncio.run(main())
        self.assertEqual(r.value, "42")
        self.assertEqual(loops, [loop])
        self.assertEqual(InProcessSession(tools={"double": double}).run("double(2)").value,
                         "4")


if __name__ == "__main__":
    unittest.main()
