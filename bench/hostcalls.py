"""Host calls from a cell (issue 37's bench): dolsot's Repl(tools=...) on
the warm path, DolsotInterpreter over it, and Monty's external functions
(npm @pydantic/monty, in-process) running the same loop.

Each system runs `t = 0; for i in range(N): t = t + f(i)` with f(i) = i + 1
a function of the host; rows:

  one call, inside      dolsot: perf_counter_ns around each f(i) in a cell
                        of CALLS calls; the median of all of them
  one call, outside     the whole call's wall time with one f(i) in the
                        cell minus the same cell without it (paired per
                        round); Monty: run() of `f(0)` minus run() of `0`
  N calls, one cell     the whole call with CALLS calls in the cell
                        (dolsot also: the loop alone, timed inside)
  DolsotInterpreter     execute() of the CALLS-call cell (adds invoke_tool
                        and the callback plumbing)

Targets (issue 37): a round trip's median <= 0.3 ms warm; 1,000 calls in
one cell <= 0.5 s. Monty's functions are JavaScript called from its Rust
VM in the same process (no process boundary); dolsot's cross a socket
pair to a host process (README, "Host tools").

usage: /usr/bin/python3.11 bench/hostcalls.py [ROUNDS] [CALLS]
  (defaults 30 and 1000; BENCH_MONTY=0 skips Monty; BENCH_PEERS is where
  monty/ lives, default /work/shared/peers; it is copied to
  bench/out/monty-node and `npm install`ed there once)
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
from dolsot.dspy import DolsotInterpreter  # noqa: E402

BIN = os.environ.get("DOLSOT_BIN") or os.path.join(ROOT, "dolsot")
OUT = os.path.join(ROOT, "bench", "out")


def f(i: int) -> int:
    """i + 1."""
    return i + 1


def loop(n):
    return f"t = 0\nfor i in range({n}):\n    t = t + f(i)\nt"


def timed_loop(n):
    """The loop with each call timed inside the cell; prints the times (ns)
    as JSON, then the loop's whole time."""
    return ("import time, json\nts = []\nt = 0\nw0 = time.perf_counter_ns()\n"
            f"for i in range({n}):\n    a = time.perf_counter_ns()\n    t = t + f(i)\n"
            "    ts.append(time.perf_counter_ns() - a)\n"
            "w = time.perf_counter_ns() - w0\nprint(json.dumps([ts, w]))\ndel ts")


def ms(t0):
    return (time.perf_counter() - t0) * 1000


def bench_dolsot(rounds, calls):
    repl = dolsot.Repl(tools={"f": f}, binary=BIN)
    interp = DolsotInterpreter(tools={"f": f}, sandbox=False, binary=BIN)
    rows = {k: [] for k in ("inside", "one", "none", "diff", "cell", "loop", "interp")}
    for s in ("a", "b"):
        repl.run(s, "t = 0")
    interp.execute("t = 0")
    for r in range(rounds + 2):
        t0 = time.perf_counter()
        res = repl.run("a", timed_loop(calls))
        assert res.ok, res.error
        cell = ms(t0)
        ts, whole = json.loads(res.stdout)
        t0 = time.perf_counter()
        assert repl.run("b", "f(0)").value == "1"
        one = ms(t0)
        t0 = time.perf_counter()
        assert repl.run("b", "0").value == "0"
        none = ms(t0)
        t0 = time.perf_counter()
        out = interp.execute(loop(calls))
        assert out == str(calls * (calls + 1) // 2), out
        through = ms(t0)
        if r < 2:
            continue   # warm-up rounds
        rows["inside"] += [t / 1e6 for t in ts]
        rows["loop"].append(whole / 1e6)
        rows["cell"].append(cell)
        rows["one"].append(one)
        rows["none"].append(none)
        rows["diff"].append(one - none)
        rows["interp"].append(through)
    interp.shutdown()
    return rows


NODE = r"""
import { Monty } from '@pydantic/monty'
const [rounds, calls] = process.argv.slice(2).map(Number)
const fns = { f: (i) => i + 1 }
const loop = (n) => `t = 0\nfor i in range(${n}):\n    t = t + f(i)\nt`
const now = () => Number(process.hrtime.bigint()) / 1e6
const time = (code) => {
  const t0 = now()
  const v = new Monty(code).run({ externalFunctions: fns })
  return [now() - t0, v]
}
const out = { one: [], none: [], diff: [], cell: [] }
for (let r = 0; r < rounds + 2; r++) {
  const [cell, v] = time(loop(calls))
  if (Number(v) !== calls * (calls + 1) / 2) throw new Error(`loop gave ${v}`)
  const [one] = time('f(0)')
  const [none] = time('0')
  if (r < 2) continue
  out.cell.push(cell); out.one.push(one); out.none.push(none); out.diff.push(one - none)
}
console.log(JSON.stringify(out))
"""


def monty_dir():
    """A directory with @pydantic/monty installed, or (None, why)."""
    if os.environ.get("BENCH_MONTY", "1") == "0":
        return None, "skipped (BENCH_MONTY=0)"
    d = os.path.join(OUT, "monty-node")
    if not os.path.isdir(os.path.join(d, "node_modules", "@pydantic", "monty")):
        peer = os.path.join(os.environ.get("BENCH_PEERS", "/work/shared/peers"), "monty")
        if not os.path.isfile(os.path.join(peer, "package.json")):
            return None, f"no {peer}/package.json"
        os.makedirs(d, exist_ok=True)
        shutil.copy(os.path.join(peer, "package.json"), d)
        p = subprocess.run(["npm", "install", "--silent"], cwd=d, capture_output=True,
                           text=True, timeout=600, check=False)
        if p.returncode != 0:
            return None, f"npm install failed: {p.stderr.strip()[-200:]}"
    with open(os.path.join(d, "node_modules", "@pydantic", "monty", "package.json")) as fh:
        return d, "@pydantic/monty " + json.load(fh)["version"]


def bench_monty(d, rounds, calls):
    script = os.path.join(d, "hostcalls.mjs")
    with open(script, "w") as fh:
        fh.write(NODE)
    p = subprocess.run(["node", script, str(rounds), str(calls)], cwd=d,
                       capture_output=True, text=True, timeout=3600, check=False)
    if p.returncode != 0:
        raise RuntimeError(f"node: exit {p.returncode}: {p.stderr.strip()[-300:]}")
    return json.loads(p.stdout)


def med(v):
    return f"{statistics.median(v):9.3f}" if v else "        -"


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    tmp = tempfile.mkdtemp(prefix="dolsot-bench-hostcalls-")
    os.environ.update(DOLSOT_CACHE_DIR=tmp, DOLSOT_SERVER="auto", DOLSOT_TYPECHECK="0")
    try:
        d = bench_dolsot(rounds, calls)
    finally:
        subprocess.run([BIN, "--server-stop"], capture_output=True, check=False)
        shutil.rmtree(tmp, ignore_errors=True)
    mdir, why = monty_dir()
    m = bench_monty(mdir, rounds, calls) if mdir else {}
    print(f"rounds {rounds}, calls per cell {calls}, load {os.getloadavg()[0]:.2f}; "
          f"monty: {why}")
    print(f"{'median, ms':40} {'dolsot':>9} {'monty':>9}")
    table = [
        ("one call, inside the cell", d["inside"], []),
        ("one call, outside (with - without)", d["diff"], m.get("diff", [])),
        ("  the call with f(0)", d["one"], m.get("one", [])),
        ("  the call with 0", d["none"], m.get("none", [])),
        (f"{calls} calls: the loop, inside the cell", d["loop"], []),
        (f"{calls} calls: the whole call", d["cell"], m.get("cell", [])),
        (f"{calls} calls: DolsotInterpreter.execute*", d["interp"], []),
    ]
    for name, a, b in table:
        print(f"{name:40} {med(a)} {med(b)}")
    print("* no --sandbox, as the other dolsot rows; Monty has no clock inside "
          "its cells (no time module), so its rows are timed from node around run()")
    inside = statistics.median(d["inside"])
    whole = statistics.median(d["cell"]) / 1000
    print(f"targets: round trip median {inside:.3f} ms (<= 0.3: "
          f"{'met' if inside <= 0.3 else 'NOT met'}); {calls} calls {whole:.3f} s "
          f"(<= 0.5 s for 1,000: {'met' if whole <= 0.5 else 'NOT met'})")


if __name__ == "__main__":
    main()
