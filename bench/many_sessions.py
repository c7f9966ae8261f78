"""A call in a file store that holds many sessions, two binaries paired.

    /usr/bin/python3.11 bench/many_sessions.py [SESSIONS [ROUNDS]]

DOLSOT_BIN (default ./dolsot) and DOLSOT_BIN_B (required) each get a store
of SESSIONS sessions (default 3000): one session `s` holding x = 0 and a
1 MB bytes value, and SESSIONS - 1 forks of it (--fork: real sessions,
sharing its units).  Then, warm, round by round and alternating which
goes first, each binary runs the two calls a busy store sees:

  read    `x + 1` on s (no value changes)
  write   `x += 1; b = os.urandom(1_000_000)` on s: a new unit, the old one
          dropped (a collection candidate)

and the medians, quartiles and per-round ratios A/B are printed.  What the
store costs a call beyond the cell: listing and stat-ing every file to
reap expired sessions, and reading every head to collect a dropped unit.
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
CALLS = {
    "read": "x + 1",
    "write": "x += 1\nb = os.urandom(1_000_000)",
}


def env_for(store):
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root"),
            "LANG": "C.UTF-8", "DOLSOT_CACHE_DIR": store, "DOLSOT_SERVER": "auto"}


def run(binary, store, *args, code=None):
    t0 = time.perf_counter()
    r = subprocess.run([binary, *args], input=code, env=env_for(store), capture_output=True,
                       text=True, check=False)
    took = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"many_sessions.py: {binary} {args}: exit {r.returncode}: {r.stderr[-400:]}")
    return took


def build_store(binary, store, sessions):
    os.mkdir(store, 0o700)
    run(binary, store, "--session", "s", code="import os\nx = 0\nb = os.urandom(1_000_000)")
    for i in range(1, sessions):
        run(binary, store, "--session", f"f{i}", "--fork", "s")


def quartiles(v):
    q = statistics.quantiles(v, n=4)
    return q[0], statistics.median(v), q[2]


def main():
    sessions = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    bins = [("A", os.environ.get("DOLSOT_BIN") or os.path.join(ROOT, "dolsot")),
            ("B", os.environ.get("DOLSOT_BIN_B") or sys.exit("set DOLSOT_BIN_B"))]
    work = tempfile.mkdtemp(prefix="dolsot-many-")
    stores = {name: os.path.join(work, name) for name, _ in bins}
    try:
        t0 = time.perf_counter()
        build_store(bins[0][1], stores["A"], sessions)
        run(bins[0][1], stores["A"], "--server-stop")
        shutil.copytree(stores["A"], stores["B"], symlinks=True)
        print(f"{sessions} sessions built in {time.perf_counter() - t0:.0f} s; "
              f"{rounds} rounds, load {os.getloadavg()[0]:.2f}")
        times = {(c, n): [] for c in CALLS for n, _ in bins}
        for r in range(-2, rounds):
            order = bins if r % 2 == 0 else bins[::-1]
            for call, code in CALLS.items():
                for name, binary in order:
                    took = run(binary, stores[name], "--session", "s", code=code)
                    if r >= 0:
                        times[(call, name)].append(took * 1000)
        for call in CALLS:
            a, b = times[(call, "A")], times[(call, "B")]
            ratios = [x / y for x, y in zip(a, b)]
            print(f"{call:6s} A {'%.1f / %.1f / %.1f' % quartiles(a):>22s} ms   "
                  f"B {'%.1f / %.1f / %.1f' % quartiles(b):>22s} ms   "
                  f"A/B median {statistics.median(ratios):.3f}")
        print(f"load at the end {os.getloadavg()[0]:.2f}")
    finally:
        for name, binary in bins:
            if os.path.isdir(stores[name]):
                subprocess.run([binary, "--server-stop"], env=env_for(stores[name]),
                               capture_output=True, check=False)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
