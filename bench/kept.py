"""The worker-side cost of issue 19 (held files by files.py's rule, units kept
unloaded): run with /usr/bin/python3.11 from the repository root.

    kept.py ROUNDS [BASE]

Compares session.py as in git revision BASE (default main) with the one in
the working tree (and its files.py), on three sessions: plain data; the same
plus three held files ('w', 'r' read one line, 'a'); and the same plus a
unit that cannot be loaded (an object of a module the timed process does
not have).  For each version and session a blob is made once by that
version; then, in ROUNDS fresh interpreters per version, interleaved and
started like the worker (isolated, no site), one cycle is timed: parse the
blob, load every unit into a namespace, pickle the namespace again.  That is
all the session work of a call; carried state is not involved (see
carry_cost.py).  "first" is the cycle of a fresh interpreter (the cold path,
first imports included: the base imports dill to pickle a file), "forked"
the median of 30 cycles each run in a child forked after the first, as the
warm path forks from a zygote.  CPU time of the process (time.process_time),
medians in ms; "ratio" is the median of the paired ratios.
"""

import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = "/usr/bin/python3.11"

PLAIN = ("a = list(range(2000))\nd = {str(i): [i] * 3 for i in range(300)}\n"
         "s = 'x' * 5000\nt = (1, 2.0, 'three')\nb = a\n")
FILES = PLAIN + ("fw = open('w.txt', 'w')\nfw.write('written')\nfw.flush()\n"
                 "fr = open('r.txt')\nfr.readline()\nfa = open('a.txt', 'a')\n")
KEPT = FILES + ("import sys, types\nghost_mod = types.ModuleType('ghost_mod')\n"
                "exec('class G:\\n    pass', ghost_mod.__dict__)\n"
                "sys.modules['ghost_mod'] = ghost_mod\n"
                "ghost = [ghost_mod.G() for _ in range(100)]\n"
                "del ghost_mod, sys, types\n")
SESSIONS = {"plain": PLAIN, "files": FILES, "kept": KEPT}

PRELUDE = r'''
import sys, time, types
sys.path[:] = ["/usr/lib/python3.11", "/usr/lib/python3.11/lib-dynload",
               "/usr/local/lib/python3.11/dist-packages", "/usr/lib/python3/dist-packages"]
import _ast, _pickle, importlib, io   # as the worker has them
src = sys.argv[1]

def embedded(name):
    key = "_dolsot_" + name
    if key not in sys.modules:
        mod = types.ModuleType(key)
        sys.modules[key] = mod
        exec(compile(open(f"{src}/{name}.py").read(), f"<{key}>", "exec"), mod.__dict__)
    return sys.modules[key]

dolsot = types.ModuleType("_dolsot")
dolsot.embedded = embedded
sys.modules["_dolsot"] = dolsot
session = embedded("session")

def dump(ns):
    out = session.dump(ns, {}, {})
    return b"".join(bytes(p) for p in out[0]), out

def names(ns):
    return {k: v for k, v in ns.items() if not k.startswith("__")}
'''

MAKE = PRELUDE + r'''
ns = {}
exec(sys.argv[3], ns)
blob, out = dump(names(ns))
if out[2]:
    raise SystemExit(f"dropped: {out[2]}")
open(sys.argv[2], "wb").write(blob)
'''

TIME = PRELUDE + r'''
import posix
blob = open(sys.argv[2], "rb").read()
P = time.process_time

def cycle():
    t0 = P()
    stored = session.load("s", blob)
    ns = {}
    dropped = stored.load_into(ns)
    unloaded = getattr(stored, "unloaded", ())
    if unloaded:
        session.dump(ns, {}, {}, None, unloaded, ())
    else:
        session.dump(ns, {}, {})
    t = (P() - t0) * 1e3
    for v in ns.values():
        if isinstance(v, io.IOBase):
            v.close()
    return t, len(ns), len(dropped)

def forked():
    r, w = posix.pipe()
    pid = posix.fork()
    if pid == 0:
        posix.write(w, repr(cycle()[0]).encode())
        posix._exit(0)
    posix.close(w)
    out = posix.read(r, 100)
    posix.close(r)
    posix.waitpid(pid, 0)
    return float(out)

first, held, dropped = cycle()
times = sorted(forked() for _ in range(30))
print(first, times[len(times) // 2], held, dropped)
'''


def run(args, cwd):
    return subprocess.run([PY, "-I", "-S", "-X", "utf8", "-c"] + args, cwd=cwd, check=True,
                          capture_output=True, text=True).stdout


def git_show(rev, paths):
    """The file at the first of paths that rev holds (session.py moved to worker/py/)."""
    for path in paths:
        p = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT, capture_output=True)
        if p.returncode == 0:
            return p.stdout
    raise SystemExit(f"kept.py: {rev} holds none of {', '.join(paths)}")


def main():
    rounds = int(sys.argv[1])
    base = sys.argv[2] if len(sys.argv) > 2 else "main"
    work = tempfile.mkdtemp(prefix="dolsot-kept-bench.")
    try:
        srcs = {"base": os.path.join(work, "base"), "new": os.path.join(ROOT, "worker", "py")}
        os.mkdir(srcs["base"])
        with open(os.path.join(srcs["base"], "session.py"), "wb") as f:
            f.write(git_show(base, ("worker/py/session.py", "session.py")))
        for name in ("w.txt", "r.txt", "a.txt"):
            with open(os.path.join(work, name), "w") as f:
                f.write("line one\nline two\n")
        print("| session | cycle | interpreters | base median | new median | new/base (paired) | dropped at load (base/new) |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for kind, code in SESSIONS.items():
            blobs, runs = {}, {"base": [], "new": []}
            for v, src in srcs.items():
                blobs[v] = os.path.join(work, f"{kind}-{v}.blob")
                run([MAKE, src, blobs[v], code], work)
            for i in range(rounds):
                for v in (("base", "new") if i % 2 == 0 else ("new", "base")):
                    out = run([TIME, srcs[v], blobs[v]], work).split()
                    runs[v].append([float(out[0]), float(out[1]), int(out[3])])
            for label, idx in (("first (cold)", 0), ("forked (warm)", 1)):
                b = statistics.median(r[idx] for r in runs["base"])
                n = statistics.median(r[idx] for r in runs["new"])
                ratio = statistics.median(rn[idx] / rb[idx]
                                          for rb, rn in zip(runs["base"], runs["new"]))
                print(f"| {kind} | {label} | {rounds} | {b:.3f} | {n:.3f} | {ratio:.2f} "
                      f"| {runs['base'][0][2]}/{runs['new'][0][2]} |")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
