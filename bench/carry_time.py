"""End-to-end cost of carrying state: run with /usr/bin/python3.11.

    carry_time.py DOLSOT ROUNDS [SCENARIO...]

SCENARIO is plain-cold, plain-warm, libs-cold or libs-warm (default: all).
For each, a fresh store gets a session whose first cell changes state
(working directory, environment, sys.path, random seed, a warnings filter;
for libs also numpy, pandas and matplotlib settings), then the same trivial
cell runs ROUNDS times with DOLSOT_CARRY=1 and ROUNDS times with
DOLSOT_CARRY=0, interleaved (1 0 0 1 1 0 ...) so that drift hits both.
The libs calls name the toolbox bench/carry_libs.py, which imports the three
libraries, so a warm zygote has them loaded as a real toolbox would.
Every call gets a clean environment.  Prints the median wall time of each
and their difference, the median of the per-round differences, and the CPU
time per call (mean): user+sys of the call and the processes it reaped (the
cold worker), plus, warm, what the zygote reaped (its workers), read from
/proc/ZYGOTE/stat in clock ticks, hence a mean over all calls.  On a busy
machine the CPU difference is the steadier number.  All in ms.
"""

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

SETUP = {
    "plain": ("import os, sys, random, warnings\nos.makedirs('sub', exist_ok=True)\n"
              "os.chdir('sub')\nos.environ['BENCH_VAR'] = '1'\nsys.path.append('/opt/bench')\n"
              "random.seed(1)\nwarnings.simplefilter('ignore', DeprecationWarning)\nx = 1"),
}
SETUP["libs"] = SETUP["plain"] + (
    "\nimport numpy as np, pandas as pd, matplotlib.pyplot as plt\nnp.random.seed(0)\n"
    "np.set_printoptions(precision=3)\npd.set_option('display.max_rows', 5)\n"
    "plt.rc('figure', figsize=(10, 6))\ndf = pd.DataFrame({'a': range(100)})")
CELL = "y = 1"
BENCH = os.path.dirname(os.path.abspath(__file__))
TOOLBOX = {"plain": [], "libs": ["--toolbox", "carry_libs:cl"]}


def env_for(store, carry, server):
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
           "HOME": os.environ.get("HOME", "/root"), "DOLSOT_CACHE_DIR": store,
           "MPLBACKEND": "Agg", "DOLSOT_CARRY": carry,
           "DOLSOT_SERVER": "auto" if server else "off", "PYTHONPATH": BENCH}
    if "TMPDIR" in os.environ:
        env["TMPDIR"] = os.environ["TMPDIR"]
    return env


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def call(dolsot, env, cwd, *args):
    """(wall seconds, CPU seconds of the call and what it reaped)."""
    c = children_cpu()
    t = time.perf_counter()
    p = subprocess.run([dolsot, *args], env=env, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if p.returncode != 0 or "warning:" in p.stderr:
        raise SystemExit(f"call failed ({p.returncode}): {args}\n{p.stdout}{p.stderr}")
    return wall, children_cpu() - c


def zygote_ticks(dolsot, env, cwd):
    """A function returning the CPU ticks the warm zygote's reaped workers used."""
    out = subprocess.run([dolsot, "--server-status"], env=env, cwd=cwd, capture_output=True,
                         text=True).stdout
    pids = [line.split()[1] for line in out.splitlines() if line.startswith("zygote ")]
    if len(pids) != 1:
        raise SystemExit(f"expected one zygote:\n{out}")

    def ticks():
        fields = open(f"/proc/{pids[0]}/stat").read().rsplit(")", 1)[1].split()
        return int(fields[13]) + int(fields[14])   # cutime + cstime
    return ticks


def scenario(dolsot, rounds, name):
    kind, path = name.split("-")
    server = path == "warm"
    work = tempfile.mkdtemp(prefix="dolsot-carry-bench.")
    store = os.path.join(work, "store")
    try:
        on, off = env_for(store, "1", server), env_for(store, "0", server)
        tb = TOOLBOX[kind]
        if server:
            call(dolsot, on, work, "--timeout", "120", "--server-start", *tb)
        call(dolsot, on, work, "--timeout", "120", *tb, "--session", "s", SETUP[kind])
        for _ in range(3):   # warm-up: caches, the zygote, the session file
            call(dolsot, on, work, *tb, "--session", "s", CELL)
            call(dolsot, off, work, *tb, "--session", "s", CELL)
        ticks = zygote_ticks(dolsot, on, work) if server else (lambda: 0)
        wall = {"1": [], "0": []}
        cpu = {"1": 0.0, "0": 0.0}
        for i in range(rounds):
            for carry in (("1", "0") if i % 2 == 0 else ("0", "1")):
                z = ticks()
                w, c = call(dolsot, on if carry == "1" else off, work, *tb, "--session", "s",
                            CELL)
                if server:
                    time.sleep(0.02)   # the zygote reaps the worker after answering
                wall[carry].append(w * 1e3)
                cpu[carry] += c + (ticks() - z) / os.sysconf("SC_CLK_TCK")
        if server:
            call(dolsot, on, work, "--server-stop")
        m1, m0 = statistics.median(wall["1"]), statistics.median(wall["0"])
        paired = statistics.median(a - b for a, b in zip(wall["1"], wall["0"]))
        c1, c0 = (cpu[k] * 1e3 / rounds for k in ("1", "0"))
        print(f"| {name} | {rounds} | {m1:.2f} | {m0:.2f} | {m1 - m0:+.2f} | {paired:+.2f} "
              f"| {c1:.2f} | {c0:.2f} | {c1 - c0:+.2f} |", flush=True)
    finally:
        if server:
            subprocess.run([dolsot, "--server-stop"], env=env_for(store, "1", True),
                           capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


def main():
    dolsot, rounds = os.path.abspath(sys.argv[1]), int(sys.argv[2])
    names = sys.argv[3:] or ["plain-cold", "plain-warm", "libs-cold", "libs-warm"]
    print("| scenario | rounds | wall carry=1 | wall carry=0 | difference | paired difference "
          "| CPU carry=1 | CPU carry=0 | CPU difference |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in names:
        scenario(dolsot, rounds, name)


if __name__ == "__main__":
    main()
