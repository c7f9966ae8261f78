"""The Python package's own cost per call, on the warm path.

Three ways to run the same cell (`x + 1` on a session holding x) from a
Python host, interleaved in each round:

  cli-text  subprocess.run([dolsot, --session, S, CODE])        (the bare CLI)
  cli-json  subprocess.run([dolsot, --json, --session, S]) + stdin + json.loads
  repl      dolsot.Repl().run(S, CODE)

repl - cli-json is what the package adds to the call it makes (argument
checks, environment, Popen with a new session, Result); repl - cli-text
adds --json's own cost. Prints medians and paired (per-round) differences.

usage: /usr/bin/python3.11 bench/python_api.py [ROUNDS]
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
sys.path.insert(0, os.path.join(ROOT, "python"))
import dolsot  # noqa: E402

BIN = os.path.join(ROOT, "dolsot")
CODE = "x + 1"


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    tmp = tempfile.mkdtemp(prefix="dolsot-bench-py-")
    os.environ.update(DOLSOT_CACHE_DIR=tmp, DOLSOT_SERVER="auto", DOLSOT_TYPECHECK="0")
    repl = dolsot.Repl(binary=BIN)
    for s in ("a", "b", "c"):
        repl.run(s, "x = 1")

    def cli_text():
        subprocess.run([BIN, "--session", "a", CODE], capture_output=True, check=True)

    def cli_json():
        p = subprocess.run([BIN, "--json", "--session", "b"], input=CODE.encode(),
                           capture_output=True, check=True)
        json.loads(p.stdout)

    def api():
        assert repl.run("c", CODE).value == "2"

    ways = {"cli-text": cli_text, "cli-json": cli_json, "repl": api}
    times = {k: [] for k in ways}
    try:
        for _ in range(5):
            for f in ways.values():
                f()
        for i in range(rounds):
            order = list(ways.items())
            order = order[i % 3:] + order[:i % 3]
            for k, f in order:
                t0 = time.perf_counter()
                f()
                times[k].append((time.perf_counter() - t0) * 1000)
    finally:
        subprocess.run([BIN, "--server-stop"], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"rounds {rounds}, load {os.getloadavg()[0]:.2f}")
    for k, v in times.items():
        print(f"{k:9} median {statistics.median(v):7.3f} ms  "
              f"p10 {statistics.quantiles(v, n=10)[0]:7.3f}")
    for a, b in (("repl", "cli-json"), ("repl", "cli-text"), ("cli-json", "cli-text")):
        d = [x - y for x, y in zip(times[a], times[b])]
        print(f"{a} - {b}: paired median {statistics.median(d):+.3f} ms")




def own_work(n=2000):
    """The package's Python-side work per call, without the process: the
    checks, argv and environment (_prepare) and the Result (_answer) from a
    real --json answer. Deterministic CPU work, so it can be read under
    load when the process timings above cannot."""
    tmp = tempfile.mkdtemp(prefix="dolsot-bench-py-")
    os.environ.update(DOLSOT_CACHE_DIR=tmp, DOLSOT_SERVER="off", DOLSOT_TYPECHECK="0")
    try:
        repl = dolsot.Repl(binary=BIN)
        out = subprocess.run([BIN, "--json", "--session", "w", "x = 1; x + 1"],
                             capture_output=True, check=True).stdout
        t = []
        for _ in range(n):
            t0 = time.perf_counter()
            repl._prepare("w", CODE)
            repl._answer(0, out, b"")
            t.append((time.perf_counter() - t0) * 1000)
        print(f"own work (checks, argv, env, Result): median "
              f"{statistics.median(t) * 1000:.1f} us over {n}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    if not os.environ.get("OWN_WORK_ONLY"):
        main()
    own_work()
