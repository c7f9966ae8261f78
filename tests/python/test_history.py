"""Repl.history, Repl.undo and Repl.checkout against the real ./dolsot:
a destructive cell undone and its state checked out again, the states as
--history --json lists them, the binary's refusals as DolsotError, and
the caller's mistakes raised before any process starts."""

import os
import unittest
from unittest import mock

import support
from support import env

import dolsot
import dolsot.repl
from dolsot import DolsotError, InvalidSession, Move, Repl


class History(support.StoreCase):

    def test_undo_brings_back_what_a_destructive_cell_changed(self):
        repl = Repl()
        repl.run("h", "df = list(range(5))")
        repl.run("h", "df = df[:2]")
        states = repl.history("h")
        self.assertEqual([s["state"] for s in states], [1, 2])
        self.assertEqual([s["current"] for s in states], [False, True])
        self.assertEqual(states[1]["code"], "df = df[:2]")
        self.assertEqual(states[1]["result"]["session"]["held"], ["df"])
        m = repl.undo("h")
        self.assertIsInstance(m, Move)
        self.assertEqual(m, Move("h", "undo", 1, 3))
        self.assertEqual(repl.run("h", "df").value, "[0, 1, 2, 3, 4]")
        self.assertEqual(repl.checkout("h", 2), Move("h", "checkout", 2, 5))
        self.assertEqual(repl.run("h", "df").value, "[0, 1]")
        states = repl.history("h")
        self.assertEqual([s["status"] for s in states],
                         ["ok", "ok", "undo:1", "ok", "checkout:2", "ok"])
        self.assertEqual([s["kind"] for s in states[2:5]], ["undo", "cell", "checkout"])
        self.assertEqual(states[4]["from"], 2)

    def test_a_move_with_no_history_kept_has_no_new_state(self):
        repl = Repl()
        repl.run("z", "a = 1")
        repl.run("z", "a = 2")
        with env(DOLSOT_HISTORY="0"):
            self.assertEqual(repl.undo("z"), Move("z", "undo", 1, None))
        self.assertEqual(repl.run("z", "a").value, "1")

    def test_refusals_are_dolsot_errors_with_the_binarys_message(self):
        repl = Repl()
        for call in (lambda: repl.history("nosuch"), lambda: repl.undo("nosuch"),
                     lambda: repl.checkout("nosuch", 1)):
            with self.assertRaises(DolsotError) as cm:
                call()
            self.assertIn("session 'nosuch' does not exist", str(cm.exception))
        repl.run("one", "x = 1")
        with self.assertRaises(DolsotError) as cm:
            repl.undo("one")
        self.assertIn("has no earlier state to go back to", str(cm.exception))
        with self.assertRaises(DolsotError) as cm:
            repl.checkout("one", 9)
        self.assertIn("session 'one' has no state 9", str(cm.exception))
        self.assertEqual(len(repl.history("one")), 1)

    def test_caller_mistakes_start_no_process(self):
        repl = Repl()
        with mock.patch.object(dolsot.repl.subprocess, "run") as run:
            for sid in ["", "a/b", "all", None]:
                with self.subTest(sid=sid):
                    self.assertRaises(InvalidSession, repl.history, sid)
                    self.assertRaises(InvalidSession, repl.undo, sid)
                    self.assertRaises(InvalidSession, repl.checkout, sid, 1)
            for n, exc in [(0, ValueError), (-1, ValueError), ("2", TypeError),
                           (True, TypeError), (1.0, TypeError), (None, TypeError)]:
                with self.subTest(n=n):
                    self.assertRaises(exc, repl.checkout, "s", n)
            run.assert_not_called()

    def test_move_is_public(self):
        self.assertIs(dolsot.Move, Move)
        self.assertIn("Move", dolsot.__all__)
        self.assertEqual(Move._fields, ("session", "action", "to", "state"))

    def test_a_separate_store(self):
        repl = Repl(store=os.path.join(self.tmp, "other"))
        repl.run("s", "v = 1")
        repl.run("s", "v = 2")
        self.assertEqual(repl.undo("s").to, 1)
        self.assertEqual(repl.run("s", "v").value, "1")
        with self.assertRaises(DolsotError):
            Repl().history("s")
        support.stop_server(os.path.join(self.tmp, "other"))


if __name__ == "__main__":
    unittest.main()
