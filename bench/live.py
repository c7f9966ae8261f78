"""Live sessions (issue 15) next to the default warm path.

Each round runs, in a shuffled order:

  warm S1   `x + 1` on a session holding x = 1, the default warm path
  live S1   the same with --live (the session's live process runs it)
  warm S3   `len(blob) + len(nums)` on a session holding 50 MB of bytes
            and 200k ints
  live S3   the same with --live
  warm S1 sandboxed, live S1 sandboxed
            S1 with --sandbox (a sandboxed live process lives inside the
            sandbox, under its init)
  python3.11 -S -c pass, the machine's yardstick

Both paths share one store and one warm server; each scenario has its own
session.  Prints medians, quartiles and the median of the per-round
live/warm ratios, the load average before and after, the private memory
of a live process holding a small namespace (smaps_rollup), how many
calls the server ran warm, and what a fork of a process holding 1 GiB
costs (the snapshot a live call of such a session makes).

usage: /usr/bin/python3.11 bench/live.py [ROUNDS]
(DOLSOT_BIN: the binary to time, e.g. a copy, so that a rebuild during the
run cannot replace it; default ./dolsot)
"""

import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("DOLSOT_BIN") or os.path.join(ROOT, "dolsot")

S3_SETUP = "import os\nblob = os.urandom(50 * 1024 * 1024)\nnums = list(range(200_000))"
S3 = "len(blob) + len(nums)"
# The machine's speed of the day, in the same rounds: a bare interpreter.
REF = "python3.11 -S -c pass"


def q(xs):
    xs = sorted(xs)
    return statistics.median(xs), xs[len(xs) // 4], xs[(3 * len(xs)) // 4]


def private_kb(pid):
    with open(f"/proc/{pid}/smaps_rollup") as f:
        return sum(int(line.split()[1]) for line in f
                   if line.startswith(("Private_Clean:", "Private_Dirty:")))


FORK_1G = r"""
import os, statistics, time
big = bytearray(os.urandom(1 << 20)) * 1024   # 1 GiB, every page touched
ts = []
for _ in range(20):
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    ts.append((time.perf_counter() - t0) * 1e3)
    os.waitpid(pid, 0)
print("%.2f %.2f" % (statistics.median(ts), min(ts)))
"""


def fork_cost():
    """What the snapshot of a live process holding 1 GiB costs: the fork
    (page tables copied, every page shared copy-on-write), timed in the
    parent, in Debian's Python as a live process runs it."""
    out = subprocess.run(["/usr/bin/python3.11", "-c", FORK_1G], capture_output=True,
                         text=True, check=True).stdout.split()
    print(f"fork of a process holding 1 GiB: median {out[0]} ms, min {out[1]} ms (20 forks)")


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    tmp = tempfile.mkdtemp(prefix="dolsot-bench-live-")
    env = dict(os.environ, DOLSOT_CACHE_DIR=os.path.join(tmp, "store"), DOLSOT_SERVER="auto",
               DOLSOT_TYPECHECK="0", DOLSOT_TIMEOUT="300")
    for name in ("DOLSOT_LIVE", "DOLSOT_STORE", "DOLSOT_LIVE_MAX", "DOLSOT_LIVE_IDLE"):
        env.pop(name, None)

    def call(session, code, flags):
        argv = [BIN, "--session", session] + flags + [code]
        t0 = time.perf_counter()
        subprocess.run(argv, env=env, capture_output=True, check=True, cwd=tmp)
        return (time.perf_counter() - t0) * 1e3

    try:
        for start in ([], ["--sandbox"]):
            subprocess.run([BIN, "--server-start"] + start, env=env, check=True, cwd=tmp,
                           capture_output=True)
        cases = []
        for tag, flags in (("warm", []), ("live", ["--live"])):
            for s, setup, code in (("S1", "x = 1", "x + 1"), ("S3", S3_SETUP, S3)):
                cases.append((f"{tag} {s}", s.lower() + "-" + tag, code, flags))
                call(s.lower() + "-" + tag, setup, flags)
            boxed = flags + ["--sandbox"]
            cases.append((f"{tag} S1 sandboxed", "s1b-" + tag, "x + 1", boxed))
            call("s1b-" + tag, "x = 1", boxed)
        cases.sort(key=lambda c: (c[0].split()[1:], c[0]))
        for name, session, code, flags in cases:   # warm-up
            call(session, code, flags)
        load0 = os.getloadavg()
        times = {c[0]: [] for c in cases}
        times[REF] = []
        for _ in range(rounds):
            order = list(cases) + [REF]
            random.shuffle(order)
            for case in order:
                if case == REF:
                    t0 = time.perf_counter()
                    subprocess.run(["/usr/bin/python3.11", "-S", "-c", "pass"], check=True)
                    times[REF].append((time.perf_counter() - t0) * 1e3)
                    continue
                name, session, code, flags = case
                times[name].append(call(session, code, flags))
        load1 = os.getloadavg()
        status = subprocess.run([BIN, "--server-status"], env=env, capture_output=True,
                                text=True, cwd=tmp).stdout
        print(f"rounds {rounds}, load average {load0[0]:.2f} before, {load1[0]:.2f} after")
        print("| call | median ms | q1 | q3 | live / warm (paired median) |")
        print("|---|---:|---:|---:|---:|")
        for name in [c[0] for c in cases] + [REF]:
            m, lo, hi = q(times[name])
            ratio = ""
            if name.startswith("live"):
                warm = times["warm" + name[4:]]
                ratio = "%.3f" % statistics.median(a / b for a, b in zip(times[name], warm))
            print(f"| {name} | {m:.2f} | {lo:.2f} | {hi:.2f} | {ratio} |")
        for line in status.splitlines():
            if line.startswith(("calls", "  live")):
                print(line)
        for line in status.splitlines():
            if line.startswith("  live s1-live pid "):
                pid = int(line.split()[3].rstrip(":"))
                print(f"live process of S1: {private_kb(pid)} kB private (smaps_rollup)")
    finally:
        subprocess.run([BIN, "--server-stop"], env=env, capture_output=True, cwd=tmp)
        shutil.rmtree(tmp, ignore_errors=True)
    fork_cost()


if __name__ == "__main__":
    main()
