"""Repl(store=...) over every store the binary has (a Redis server of the
test's own, the example store helper), and run(fork=...)."""

import asyncio
import os
import subprocess
import unittest

import support
from support import BIN, ROOT, env

from dolsot import DolsotError, InvalidSession, Repl
from dolsot.store import FileStore, Store

HELPER = os.path.join(ROOT, "examples", "dolsot-store-dir")


class SharedStores(support.StoreCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        os.makedirs(os.path.join(cls.tmp, "redis"))
        cls.redis = support.start_redis(os.path.join(cls.tmp, "redis"))

    @classmethod
    def tearDownClass(cls):
        support.stop_redis(cls.redis)
        super().tearDownClass()

    def values(self):
        """Each shared store's DOLSOT_STORE value."""
        out = {"cmd": f"cmd:{HELPER} {os.path.join(self.tmp, 'helper-store')}"}
        if self.redis is None:
            print("SKIP: redis-server is not installed", flush=True)
        else:
            out["redis"] = self.redis[1]
        return out

    def test_store_values_as_strings(self):
        for name, value in self.values().items():
            with self.subTest(store=name):
                repl = Repl(store=value)
                self.assertIsInstance(repl.store, Store)
                self.assertEqual(repl.store.env(), {"DOLSOT_STORE": value})
                self.assertEqual(repl.run(f"{name}-a", "x = 41").exit_code, 0)
                self.assertEqual(repl.run(f"{name}-a", "x + 1").value, "42")
                self.assertEqual([s.id for s in repl.sessions()], [f"{name}-a"])
                # The file store of the same directory does not hold it.
                self.assertEqual(Repl(store="file").run(f"{name}-a", "'x' in dir()").value,
                                 "False")
                self.assertEqual(repl.reset("all"), 1)
                self.assertEqual(repl.sessions(), [])

    def test_namespaces_on_every_store(self):
        values = dict(self.values(), file="file")
        for name, value in values.items():
            with self.subTest(store=name):
                mine, other = Repl(store=value, namespace="mine"), Repl(store=value)
                self.assertEqual(mine.run("s", "who = 'mine'").exit_code, 0)
                self.assertEqual(other.run("s", "who = 'default'").exit_code, 0)
                self.assertEqual([s.id for s in mine.sessions()], ["s"])
                self.assertEqual(mine.reset("all"), 1)
                self.assertEqual(mine.sessions(), [])
                self.assertEqual(other.run("s", "who").value, "'default'")
                self.assertEqual(other.reset("all"), 1)
        with self.assertRaises(InvalidSession):
            Repl(namespace="a+b")

    def test_store_objects_with_a_directory_of_their_own(self):
        for name, value in self.values().items():
            with self.subTest(store=name):
                here = os.path.join(self.tmp, f"host-{name}")
                repl = Repl(store=Store(value, cache_dir=here))
                repl.run("o", "y = 'kept'")
                self.assertEqual(repl.run("o", "y").value, "'kept'")
                # The key file sits in this host's own directory.
                self.assertTrue(os.path.exists(os.path.join(here, ".session.key")))
                self.assertEqual(repl.reset("o"), 1)
                support.stop_server(here)

    def test_fork_on_each_store(self):
        for name, value in dict(self.values(), file="file").items():
            with self.subTest(store=name):
                repl = Repl(store=value)
                src, dst = f"{name}-src", f"{name}-dst"
                repl.run(src, "x = [1]")
                r = repl.run(dst, "x.append(2)\nx", fork=src)
                self.assertEqual((r.ok, r.value), (True, "[1, 2]"))
                self.assertEqual(repl.run(src, "x").value, "[1]")
                r = repl.run(dst, "x", fork=src)
                self.assertFalse(r.ok)
                self.assertIn(f"'{dst}' already exists", r.error)
                self.assertEqual(repl.run(dst, "x").value, "[1, 2]")
                r = repl.run(dst, "x.append(3)\nx", fork=src, replace=True)
                self.assertEqual(r.value, "[1, 3]")
                self.assertEqual(repl.run(src, "x").value, "[1]")
                repl.reset("all")

    def test_bad_values_carry_the_binary_reason(self):
        for value in ("bogus:x", "redis://h:0", "redis://h/x", "rediss://h", "cmd:",
                      "cmd:   "):
            with self.subTest(value=value):
                want = subprocess.run([BIN, "--store", value, "--server-status"],
                                      capture_output=True, text=True, check=False)
                self.assertEqual(want.returncode, 2)
                with self.assertRaises(ValueError) as cm:
                    Repl(store=value)
                self.assertEqual(str(cm.exception),
                                 want.stderr.strip().removeprefix("dolsot: --"))
                self.assertTrue(str(cm.exception).startswith("store='"))
        with self.assertRaises(TypeError):
            Store(42)

    def test_paths_stay_paths(self):
        for path in ("rel/dir", "./odd:name", os.path.join(self.tmp, "p:q")):
            with self.subTest(path=path):
                self.assertIsInstance(Repl(store=path).store, FileStore)

    def test_a_bad_value_from_the_environment_is_dolsot_error(self):
        with env(DOLSOT_STORE="redis://h:0"):
            with self.assertRaises(DolsotError) as cm:
                Repl().run("e", "1")
        self.assertIn("the port is not a number", str(cm.exception))


class Fork(support.StoreCase):

    def test_a_missing_source_is_a_failed_result(self):
        r = Repl().run("f-new", "1", fork="f-nosuch")
        self.assertFalse(r.ok)
        self.assertEqual(r.exit_code, 1)
        self.assertIn("cannot fork session 'f-nosuch': there is no such session", r.error)
        self.assertNotIn("f-new", [s.id for s in Repl().sessions()])

    def test_arun_forks_too(self):
        repl = Repl()
        repl.run("fa-src", "n = 10")
        r = asyncio.run(repl.arun("fa-dst", "n += 1\nn", fork="fa-src"))
        self.assertEqual(r.value, "11")
        self.assertEqual(repl.run("fa-src", "n").value, "10")

    def test_mistakes_raise_before_any_process(self):
        repl = Repl(binary=BIN)
        for kw, exc in (({"fork": "s"}, InvalidSession), ({"fork": "all"}, InvalidSession),
                        ({"fork": "../x"}, InvalidSession), ({"fork": 7}, InvalidSession),
                        ({"replace": True}, InvalidSession),
                        ({"fork": "o", "replace": 1}, TypeError)):
            with self.subTest(**{k: repr(v) for k, v in kw.items()}):
                with self.assertRaises(exc):
                    repl.run("s", "1", **kw)
        self.assertNotIn("s", [s.id for s in repl.sessions()])


if __name__ == "__main__":
    unittest.main()
