"""The worker-side cost of carrying state: run with /usr/bin/python3.11.

    carry_cost.py DOLSOT ROUNDS plain|libs

Makes a session with the real binary (the setup cell of carry_time.py), then
times, in ROUNDS fresh interpreters per mode (started like the worker:
isolated, no site, the worker's modules preloaded), the work carrying adds
to a call: capturing the caller's state, restoring the early pieces,
restoring the late pieces after the names are loaded, saving the pieces and
pickling them.  With DOLSOT_CARRY=0 the same steps only pass the stored
pieces through.  Loading the names and pickling them are the same in both
modes and not timed.  "first" is the first cycle of a fresh interpreter
(the cold path: first imports included); "forked" the median of 30 cycles
each run in a child forked from that interpreter after its first cycle, as
the warm path forks a worker from a zygote that has everything imported
(copy-on-write faults included).  Times are CPU time of the process
(time.process_time), so that other load on the machine does not count.
Prints medians in ms.
"""

import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from carry_time import SETUP, env_for  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

DRIVER = r'''
import sys, time
sys.path[:] = [sys.argv[4], "/usr/lib/python3.11", "/usr/lib/python3.11/lib-dynload",
               "/usr/local/lib/python3.11/dist-packages", "/usr/lib/python3/dist-packages"]
import _ast, _pickle, importlib, importlib.util, io, types, warnings   # as the worker

def embedded(name, path):
    mod = types.ModuleType(name)
    sys.modules[name] = mod
    exec(compile(open(path).read(), f"<{name}>", "exec"), mod.__dict__)
    return mod

session = embedded("_dolsot_session", sys.argv[1] + "/worker/py/session.py")
state = embedded("_dolsot_state", sys.argv[1] + "/worker/py/state.py")
blob = open(sys.argv[2], "rb").read()
enabled = sys.argv[3] == "1"
posix = sys.modules["posix"]
cwd, path = posix.getcwd(), list(sys.path)

P = time.process_time

def cycle():
    t0 = P()
    carry = state.Carry(enabled)
    stored = session.load("s", blob)
    carry.restore_early(stored.carry, session.loads_piece)
    t1 = P()
    stored.load_into({})                       # the names: not timed
    t2 = P()
    carry.restore_late()
    pieces, keep = carry.save()
    session.dump({}, pieces, keep, carry.stored())
    t3 = P()
    if carry.warnings:
        raise SystemExit("\n".join(carry.warnings))
    return (t1 - t0 + t3 - t2) * 1e3

def forked():
    r, w = posix.pipe()
    pid = posix.fork()
    if pid == 0:
        posix.write(w, repr(cycle()).encode())
        posix._exit(0)
    posix.close(w)
    out = posix.read(r, 100)
    posix.close(r)
    posix.waitpid(pid, 0)
    return float(out)

first = cycle()
state.look_at_modules()                    # as the zygote does before forking
posix.chdir(cwd)
sys.path[:] = path
times = sorted(forked() for _ in range(30))
print(first, times[len(times) // 2])
'''


def main():
    dolsot, rounds, kind = os.path.abspath(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    work = tempfile.mkdtemp(prefix="dolsot-carry-cost.")
    try:
        store = os.path.join(work, "store")
        env = env_for(store, "1", False)
        subprocess.run([dolsot, "--timeout", "120", "--session", "s", SETUP[kind]], env=env,
                       cwd=work, check=True, capture_output=True)
        blob = os.path.join(store, "s.pkl")
        runs = {"1": [], "0": []}
        for i in range(rounds):
            for carry in (("1", "0") if i % 2 == 0 else ("0", "1")):
                p = subprocess.run(["/usr/bin/python3.11", "-I", "-S", "-X", "utf8", "-c", DRIVER,
                                    ROOT, blob, carry, work], env=dict(env, DOLSOT_CARRY=carry),
                                   cwd=work, check=True, capture_output=True, text=True)
                runs[carry].append([float(x) for x in p.stdout.split()])
        for label, idx in (("first (cold)", 0), ("forked (warm)", 1)):
            on = statistics.median(r[idx] for r in runs["1"])
            off = statistics.median(r[idx] for r in runs["0"])
            print(f"| {kind} | {label} | {rounds} | {on:.3f} | {off:.3f} | {on - off:+.3f} |")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
