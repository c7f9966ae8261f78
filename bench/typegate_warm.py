"""The warm type checker against the cold one (issue 18, "the gate at warm speed").

usage: [DOLSOT_BIN=path] /usr/bin/python3.11 bench/typegate_warm.py [ROUNDS]   (from the repo root,
       after `make dolsot`; needs tools/node's pyright)

Two measurements, each interleaved round by round, for both checkers kept
warm, mypy (checkd_mypy.py: a kept build, each cell checked in place) and pyright
(its language server); give CHECKERS=mypy or CHECKERS=pyright for one:

  checker   inside one warm dolsot call, the gate's own two ways of checking
            the same gate-shaped file (a cell under the prelude gate.py
            writes: a trivial one, and one importing numpy): the warm checker
            (_dolsot.check_warm, the round trip to dolsot-checkd) and the
            cold one (_dolsot.run_checker with the argv the gate runs cold);
            medians, p90, paired cold/warm, and the cold checker's median
            against its nominal cost on a quiet machine (NOMINAL_MS), which
            says how loaded the machine was.
  per cell  whole warm-path dolsot calls of a trivial cell (`x + 1`) with a
            toolbox: the gate off, and the gate on with its checker warm;
            the paired difference is what the gate adds to a cell, and
            the worker's own gate phase (--json timings_ms.gate), after
            WARMUP gated calls that let the language server's JIT settle.

With DOLSOT_BIN_B set, a third measurement puts two builds side by side,
for each checker asked for: gated warm calls of each, alternating, each
with its own store and server; the gate phase and the whole call,
medians and paired B/A.

It prints `uptime` first and last.  Nothing is asserted: see bench/RESULTS.md.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOLSOT = os.environ.get("DOLSOT_BIN") or os.path.join(ROOT, "dolsot")
PYRIGHT = os.path.join(ROOT, "tools/node/node_modules/.bin/pyright")
MYPY = shutil.which("mypy") or "/usr/bin/mypy"
# A cold check of the trivial cell on a quiet machine (issue 18's figures).
NOMINAL_MS = {"mypy": 170.0, "pyright": 900.0}
CELLS = (("trivial", "y = x + 1\n"),
         ("numpy", "import numpy as np\ny = int(np.arange(3).sum()) + x\n"))
WARMUP = 10
TOOLBOX = "def add(a: int, b: int) -> int:\n    return a + b\n"

# Runs inside a gated warm call: times both ways on the same source.
PROBE = r'''
import _dolsot, time, os
g = _dolsot.embedded("gate")
kind, binary = _dolsot.checker_kind(BIN), BIN
src, off, col = g.build_source(kind, @CELL@, {"x": 1}, {"mt": __import__("mytools")})
warm, cold = [], []
for i in range(ROUNDS):
    t = time.perf_counter()
    res = g._check_warm(kind, binary, src + f"# {i}\n", 60)
    warm.append((time.perf_counter() - t) * 1000 if res and res[0] == "exited" else -1)
    tmp = g._private_dir()
    cell = os.path.join(tmp, g.CELL_FILE)
    with open(cell, "w") as f:
        f.write(src + f"# {i}\n")
    argv, extra = g.command(kind, binary, cell, tmp)
    t = time.perf_counter()
    st = _dolsot.run_checker(argv, g._environment(extra), tmp, 60, 1 << 20)
    cold.append((time.perf_counter() - t) * 1000 if st[0] == "exited" else -1)
    g._remove(tmp, g._GATE_FILES)
print(" ".join(f"{w:.2f}" for w in warm))
print(" ".join(f"{c:.2f}" for c in cold))
'''


def stats(v):
    s = sorted(v)
    return statistics.median(s), s[min(len(s) - 1, int(len(s) * 0.9))]


def versus(work, env, other, rounds, name, checker):
    """Gated warm calls of DOLSOT and of DOLSOT_BIN_B, alternating (which
    goes first alternates too), each with its own store: the gate phase and
    the whole call, paired by round."""
    bins = {"A": DOLSOT, "B": other}
    envs = {k: dict(env, DOLSOT_CACHE_DIR=os.path.join(work, "store-" + k),
                    DOLSOT_TY_BIN=checker, DOLSOT_TYPECHECK="1") for k in bins}

    def call(k):
        t = time.perf_counter()
        r = subprocess.run([bins[k], "--json", "--toolbox", "mytools:mt", "--session", "s",
                            "--timeout", "300", "x + 1"], cwd=work, env=envs[k],
                           capture_output=True, text=True)
        wall = (time.perf_counter() - t) * 1000
        if r.returncode != 0 or "type gate" in r.stderr:
            print(name, k, "call failed:", r.returncode, r.stderr.strip())
            return None
        return json.loads(r.stdout)["timings_ms"]["gate"], wall

    try:
        for k in bins:
            subprocess.run([bins[k], "--session", "s", "x = 1"], cwd=work, env=envs[k],
                           capture_output=True)
            for _ in range(WARMUP):
                call(k)
        got = {"A": [], "B": []}
        for i in range(rounds):
            for k in ("AB" if i % 2 == 0 else "BA"):
                got[k].append(call(k))
        pairs = [(a, b) for a, b in zip(got["A"], got["B"]) if a and b]
        for n, what in ((0, "gate phase"), (1, "whole call")):
            a = statistics.median(p[0][n] for p in pairs)
            b = statistics.median(p[1][n] for p in pairs)
            ratio = statistics.median(p[1][n] / p[0][n] for p in pairs if p[0][n] > 0)
            print(f"{name:8} versus {what:10} A {a:7.1f} ms | B {b:7.1f} ms | paired B/A "
                  f"{ratio:.2f} ({len(pairs)} pairs)")
    finally:
        for k in bins:
            subprocess.run([bins[k], "--server-stop"], env=envs[k], capture_output=True)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    work = tempfile.mkdtemp(prefix="dolsot-bench-tgwarm-")
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    env = dict(os.environ, DOLSOT_CACHE_DIR=os.path.join(work, "store"), DOLSOT_SERVER="auto",
               XDG_CACHE_HOME=os.path.join(work, "cache"))
    try:
        with open(os.path.join(work, "mytools.py"), "w") as f:
            f.write(TOOLBOX)

        def call(binary, gate, code, session="s", json_out=False):
            e = dict(env, DOLSOT_TY_BIN=binary, DOLSOT_TYPECHECK=gate)
            return subprocess.run([DOLSOT, *(["--json"] if json_out else []),
                                   "--toolbox", "mytools:mt", "--session", session,
                                   "--timeout", "300", code], cwd=work, env=e,
                                  capture_output=True, text=True)

        wanted = os.environ.get("CHECKERS", "mypy,pyright").split(",")
        for name, binary in (("mypy", MYPY), ("pyright", PYRIGHT)):
            if name not in wanted:
                continue
            call(binary, "0", "x = 1")
            for _ in range(3):          # server, daemon, checker, warm
                call(binary, "1", "x + 1")
            for cell_name, cell in CELLS:
                probe = (PROBE.replace("BIN", repr(binary)).replace("ROUNDS", str(rounds))
                         .replace("@CELL@", repr(cell)))
                r = call(binary, "1", probe, "probe")
                lines = r.stdout.split("\n")
                try:
                    warm = [float(x) for x in lines[0].split()]
                    cold = [float(x) for x in lines[1].split()]
                except (ValueError, IndexError):
                    print(name, cell_name, "probe failed:", r.returncode, r.stderr.strip())
                    continue
                if min(warm + cold) < 0:
                    print(name, "checker: some runs failed", warm, cold)
                wm, wp = stats(warm)
                cm, cp = stats(cold)
                ratios = [c / w for c, w in zip(cold, warm) if w > 0]
                inflation = ""
                if cell_name == "trivial":
                    inflation = f" | cold/nominal {cm / NOMINAL_MS[name]:.1f}"
                print(f"{name:8} checker {cell_name:8} warm median {wm:7.1f} ms p90 {wp:7.1f} "
                      f"| cold median {cm:7.1f} ms p90 {cp:7.1f} | paired cold/warm "
                      f"{statistics.median(ratios):.1f}{inflation}")
            for _ in range(WARMUP):     # the language server's JIT settles
                call(binary, "1", "x + 1")
            off, on, phase = [], [], []
            for _ in range(rounds):
                for gate, into in (("0", off), ("1", on)):
                    t = time.perf_counter()
                    r = call(binary, gate, "x + 1", json_out=True)
                    into.append((time.perf_counter() - t) * 1000)
                    if r.returncode != 0 or "type gate" in r.stderr:
                        print(name, "call failed:", r.returncode, r.stderr.strip())
                    elif gate == "1":
                        phase.append(json.loads(r.stdout)["timings_ms"]["gate"])
            om, _ = stats(off)
            gm, gp = stats(on)
            added = [b - a for a, b in zip(off, on)]
            print(f"{name:8} per cell gate off median {om:7.1f} ms | gate on (warm) median "
                  f"{gm:7.1f} ms p90 {gp:7.1f} | added: paired median "
                  f"{statistics.median(added):6.1f} ms")
            pm, pp = stats(phase)
            print(f"{name:8} per cell the worker's gate phase (--json timings_ms.gate) median "
                  f"{pm:6.1f} ms p90 {pp:6.1f}")
        other = os.environ.get("DOLSOT_BIN_B")
        for name, binary in (("mypy", MYPY), ("pyright", PYRIGHT)):
            if other and name in wanted:
                versus(work, env, other, rounds, name, binary)
    finally:
        subprocess.run([DOLSOT, "--server-stop"], env=env, capture_output=True)
        time.sleep(1.5)     # the daemons leave with the server
        shutil.rmtree(work, ignore_errors=True)
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()
