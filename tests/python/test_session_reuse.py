"""session.py saves a large str or bytes value it loaded without pickling it
again while the name still holds that very object: the saved blob is byte
for byte the one a fresh pickle gives, and a value the cell changed, rebound
or shares is pickled again."""

import importlib.util
import os
import subprocess
import sys
import unittest

import support

sys.dont_write_bytecode = True      # no __pycache__ in the source tree
_spec = importlib.util.spec_from_file_location("dolsot_session", os.path.join(support.ROOT, "worker", "py", "session.py"))
session = importlib.util.module_from_spec(_spec)
sys.path.insert(0, os.path.join(support.ROOT, "worker", "py"))   # session.py imports files.py beside it
_spec.loader.exec_module(session)

BIG = 200_000


def blob_of(state, reuse=None):
    return b"".join(session.dump(state, {}, {}, reuse=reuse)[0])


def load(blob):
    stored = session.load("s", blob)
    ns = {}
    stored.load_into(ns)
    return stored, ns


class Reuse(unittest.TestCase):
    def setUp(self):
        self.state = {"raw": os.urandom(BIG), "text": "é" * BIG, "ascii": "a" * BIG,
                      "small": b"x" * 100, "n": list(range(10))}
        self.blob = blob_of(self.state)

    def test_an_untouched_session_saves_byte_identical(self):
        stored, ns = load(self.blob)
        self.assertEqual(sorted(stored.reuse), ["ascii", "raw", "text"])
        again = blob_of(ns, stored.reuse)
        self.assertEqual(again, self.blob)
        self.assertEqual(again, blob_of(ns))
        self.assertEqual(load(again)[1], self.state)

    def test_rebound_values_are_pickled_again(self):
        stored, ns = load(self.blob)
        ns["raw"] = os.urandom(BIG)             # same type and length, new object
        ns["text"] = ns["text"][:-1] + "z"
        del ns["ascii"]
        ns["ascii"] = "b" * BIG
        again = blob_of(ns, stored.reuse)
        self.assertEqual(again, blob_of(ns))
        self.assertEqual(load(again)[1], ns)

    def test_a_value_shared_with_a_new_name_is_still_one_object(self):
        stored, ns = load(self.blob)
        ns["alias"] = ns["raw"]
        again = blob_of(ns, stored.reuse)
        self.assertEqual(again, blob_of(ns))
        _, back = load(again)
        self.assertIs(back["alias"], back["raw"])

    def test_only_a_plain_pickle_of_the_value_is_reused(self):
        for value in (os.urandom(BIG), "q" * BIG):
            self.assertTrue(session._plain_body(self._body({"v": value}), value))
        raw = os.urandom(BIG)
        body = self._body({"v": raw})
        self.assertFalse(session._plain_body(body, "a str"))          # not its type
        self.assertFalse(session._plain_body(body[:-2] + b"0.", raw))  # more than the value
        self.assertFalse(session._plain_body(body + b"\x94.", raw))
        self.assertFalse(session._plain_body(self._body({"v": (raw,)}), raw))
        stored, _ = load(blob_of({"v": (raw,), "w": bytearray(raw)}))
        self.assertEqual(stored.reuse, {})

    def _body(self, state):
        stored = session.load("s", blob_of(state))
        return bytes(stored.units[0][2])


class ReuseThroughTheCli(support.StoreCase):
    def call(self, code):
        r = subprocess.run([support.BIN, "--session", "big", code], capture_output=True,
                           text=True, timeout=120, check=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout.strip()

    def test_values_survive_untouched_and_changed_calls(self):
        self.call(f"import hashlib\nt = 'é' * {BIG}\nb = bytes(range(256)) * {BIG // 256}")
        digest = "hashlib.sha256(t.encode() + b).hexdigest()"
        first = self.call(digest)
        self.assertEqual(self.call(digest), first)          # saved as loaded
        self.call("u = t; t = t[:-1] + 'z'")
        self.assertEqual(self.call("(t[-2:], u[-1], len(b), u is t)"), "('éz', 'é', 199936, False)")
        self.assertEqual(self.call("hashlib.sha256(u.encode() + b).hexdigest()"), first)


if __name__ == "__main__":
    unittest.main()
