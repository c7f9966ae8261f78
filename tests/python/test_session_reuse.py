"""session.py saves a value that cannot change unless rebound (str, bytes,
numbers, small tuples of these) without pickling it again while the name
still holds the very object it loaded: the saved blob is byte for byte the
one a fresh pickle gives, and a value the cell changed, rebound or shares
is pickled again.  So is a list, dict or set of such values in a live
process (worker/flat.c): only while it holds the very same items.  A save
that knows which units the store has already writes only the others."""

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
        self.assertEqual(sorted(stored.reuse), ["ascii", "raw", "small", "text"])
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

    def test_only_values_that_cannot_change_are_reused(self):
        for value in (os.urandom(BIG), "q" * BIG, 7, 2.5, None, (1, "a", (b"b",)),
                      frozenset({1, 2})):
            self.assertTrue(session._frozen(value), value)
        for value in (bytearray(b"x"), [1], (1, [2]), {"a": 1},
                      tuple(range(session._FROZEN_MAX + 1))):
            self.assertFalse(session._frozen(value), value)
        stored, _ = load(blob_of({"v": ([1],), "w": bytearray(b"x"), "t": (1, 2)}))
        self.assertEqual(sorted(stored.reuse), ["t"])

    def test_a_save_packs_only_what_the_store_lacks(self):
        stored, ns = load(self.blob)
        ns["n"].append(10)
        parts, _, _, _, _ = session.dump(ns, {}, {}, reuse=stored.reuse, units="-",
                                         have=stored.have)
        again = b"".join(parts)
        self.assertLess(len(again), 4096)       # the changed list, and the head
        head = session.load("s", again, "-")
        self.assertEqual(len(head.units), 5)
        packed = [body for _, _, body in head.units if body.hash not in stored.have]
        self.assertEqual(len(packed), 1)
        self.assertEqual(session._pickle.loads(packed[0].data()), list(range(11)))

    def test_a_damaged_unit_drops_only_its_names(self):
        blob = bytearray(self.blob)
        at = blob.index(self.state["raw"][:64])
        blob[at] ^= 1
        stored = session.load("s", bytes(blob), "-")   # checked against its hash
        ns = {}
        dropped = stored.load_into(ns)
        self.assertEqual([n for n, _ in dropped], ["raw"])
        self.assertIn("do not match their hash", dropped[0][1])
        self.assertEqual(ns["text"], self.state["text"])


class ReuseThroughTheCli(support.StoreCase):
    def call(self, code, session="big", flags=()):
        r = subprocess.run([support.BIN, *flags, "--session", session, code], capture_output=True,
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

    def test_a_flat_container_keeps_every_change(self):
        """A live process saves a list, dict or set of plain values by its
        old ref only while it holds the very same items: each kind of change
        in place is kept, by a --live process and by calls that load it."""
        modes = [((), "flat")]
        if os.environ.get("DOLSOT_SERVER") != "off":    # --live needs the server
            modes.append((("--live",), "flat-live"))
        for flags, session in modes:
            def call(code):
                return self.call(code, session, flags)
            call("l = list(range(1000)); d = {str(i): i for i in range(100)}\n"
                 "s = set(range(100)); f = frozenset(range(5000)); keep = list(l)")
            show = "(l[:3], l[-2:], len(l), list(d.items())[:2], len(d), sorted(s)[:3], len(s), len(f))"
            start = call(show)
            self.assertEqual(call(show), start)                      # untouched
            for change in ("l.append(-1)", "l[0] = 10 ** 20", "l.sort()", "l.reverse()",
                           "del l[0]", "l[1] = 'x'", "d['new'] = 1.5", "d['0'] = d.pop('0')",
                           "s.discard(0)", "s.add('y')"):
                call(change)                                         # one call each
            self.assertEqual(call("(l[:3], len(l), list(d)[-2:], d['new'], len(s), 'y' in s, 0 in s)"),
                             "([999, 'x', 997], 1000, ['new', '0'], 1.5, 100, True, False)")
            self.assertEqual(call("keep == list(range(1000)), len(f)"), "(True, 5000)")
            call("m = l; m.append('via m')")                          # a new name, one object
            self.assertEqual(call("(l[-1], m is l)"), "('via m', True)")

    def test_flat_snapshots_in_the_worker(self):
        """What worker/flat.c counts as flat, and what it sees as changed."""
        code = """import _dolsot as D
out = []
for v in ([[1]], {1: []}, {(1,)}, [bytearray(b'x')], type('L', (list,), {})([1])):
    out.append(D.flat_snapshot(v) is None)
l = [1, 'a', b'b', 2.5, None, True, 3j, 10 ** 30]
snap = D.flat_snapshot(l)
out.append(D.flat_same(l, snap))
l[-1] = int(str(10 ** 30))               # an equal value, another object
out.append(D.flat_same(l, snap))
d = {'a': 1, 'b': 2}
snap = D.flat_snapshot(d)
d['a'] = d.pop('a')
out.append(D.flat_same(d, snap))
out.append(D.flat_same(list(l), D.flat_snapshot(l)))      # same items
out.append(D.flat_same(tuple(l), D.flat_snapshot(l)))     # another type
out"""
        self.assertEqual(self.call(code, "snap"),
                         "[True, True, True, True, True, True, False, False, True, False]")


if __name__ == "__main__":
    unittest.main()
