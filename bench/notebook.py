"""Real sessions side by side: S1, S6 and a notebook replayed call by call.

    /usr/bin/python3.11 bench/notebook.py        # from the repository root
    make bench-notebook                          # the same

Systems (each with its own store, or its own kernel/process):
  dolsot       DOLSOT_BIN (default ./dolsot), warm (DOLSOT_SERVER=auto), with
               DOLSOT_FLAGS (e.g. --live) before --session
  dolsot-B     DOLSOT_BIN_B, when set: the same, for A/B paired ratios
  dolsot-cold  DOLSOT_BIN with DOLSOT_SERVER=off (no DOLSOT_FLAGS)
  jupyter      a warm Jupyter kernel (Debian's ipykernel, jupyter_client):
               execute request to idle + reply, in this process
  live         one /usr/bin/python3.11 process exec-ing the cells in one
               namespace (time of the exec inside that process)
  monty-cli    Monty's Rust CLI, `monty -c 'x = 1; x + 1'` (S1 only)

Parts (BENCH_ONLY, comma-separated; default S1,S3,S6,notebook):
  S1        `x + 1` on a session holding x = 1
  S3        `len(blob) + len(nums)` on a session holding 50 MB of
            os.urandom bytes and list(range(200_000))
  S6        `int(df.b.sum())` on a session whose first cell imported numpy and
            pandas and built a 1000-row DataFrame
  S7        a session holding a 1 GiB float64 numpy array `a` (random, so
            that no two of its parts are alike) and a counter
            `n` (made once per system, DOLSOT_MAX_SESSION_SIZE=4G): `n += 1`,
            `float(a[:1000].sum())` and `a[0] += 1`, each timed as its own
            part (S7-n, S7-sum, S7-write), BENCH_S7_ROUNDS rounds (default 5)
  notebook  bench/notebook_cells.py (36 cells), one fresh session per replay,
            cell by cell; per system the median and mean over all cells of
            all replays

Knobs: BENCH_GAP_MS (idle time before every timed call, as an agent's
turn leaves between its calls; default 0: back to back), BENCH_ROUNDS
(S1/S6 recorded rounds, default 20), BENCH_WARMUP
(unrecorded rounds first, default 2), BENCH_NB_ROUNDS (recorded notebook
replays, default 3: 108 calls a system), BENCH_MONTY=0 (no Monty),
MONTY_BIN (a monty binary; else `npm pack` into bench/out/monty once).

Method: the systems run interleaved (S1/S6: A B C .. per round; notebook:
per cell, every system runs cell i before any runs cell i+1), CLI calls
are posix_spawn .. wait4 with a clean environment (timeit.py's).  Before
anything is timed, every part is run once on every system and the outputs
are compared (the parts check; a mismatch stops the run), and every timed
call's output is checked again.  Paired ratios are medians of per-round (per
cell, for the notebook) ratios.  Output: bench/out/notebook-<UTC stamp>/
(run.log, raw.csv, summary.md, outputs-<system>.txt, server-status-*.txt).
"""

import csv
import importlib.util
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Python puts bench/ first on sys.path for this script, where bench/timeit.py
# would hide the standard timeit (IPython, which jupyter_client imports,
# needs that one): take it off and load the bench modules by path.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.join(ROOT, "bench")]


def _bench_module(alias, file):
    spec = importlib.util.spec_from_file_location(alias, os.path.join(ROOT, "bench", file))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


bt = _bench_module("bench_timeit", "timeit.py")
notebook_cells = _bench_module("notebook_cells", "notebook_cells.py")

PY = "/usr/bin/python3.11"
S6_SETUP = ("import numpy as np, pandas as pd\n"
            "df = pd.DataFrame({'a': np.arange(1000) % 7, 'b': np.arange(1000)})")
S6_CELL = "int(df.b.sum())"
S3_SETUP = "import os\nblob = os.urandom(50_000_000)\nnums = list(range(200_000))"
S3_CELL = "len(blob) + len(nums)"
S7_SETUP = "import numpy as np\na = np.random.default_rng(0).random(1 << 27)\nn = 0"
S7_CELLS = (("S7-n", "n += 1"), ("S7-sum", "float(a[:1000].sum())"), ("S7-write", "a[0] += 1"))


def read_text(fd):
    return bt.read_fd(fd).decode("utf-8", "replace")


def env_int(name, default, least):
    raw = os.environ.get(name, str(default))
    if not raw.isdigit() or int(raw) < least:
        sys.exit(f"notebook.py: {name} must be an integer >= {least}, not {raw!r}")
    return int(raw)


class Cli:
    """A dolsot CLI system: one store, one binary, calls by posix_spawn."""

    def __init__(self, name, binary, work, warm, flags):
        self.name, self.bin, self.warm = name, binary, warm
        self.store = os.path.join(work, "store-" + name)
        os.mkdir(self.store, 0o700)
        self.env = bt.base_env()
        self.env["DOLSOT_CACHE_DIR"] = self.store
        self.env["MPLBACKEND"] = "Agg"
        self.env["DOLSOT_MAX_SESSION_SIZE"] = "4G"   # S7's 1 GiB array
        if not warm:
            self.env["DOLSOT_SERVER"] = "off"
        self.flags = flags if warm else []
        self.out = tempfile.TemporaryFile(dir=work)
        self.err = tempfile.TemporaryFile(dir=work)

    def call(self, session, cell, flags=True):
        argv = [self.bin] + (self.flags if flags else []) + ["--session", session, cell]
        wall, _, rc = bt.run_unit([(argv, self.env)], self.out.fileno(), self.err.fileno())
        out = read_text(self.out.fileno())
        if rc != 0:
            raise RuntimeError(f"{self.name}: exit {rc} on {cell[:60]!r}: "
                               f"{read_text(self.err.fileno())[-400:]}")
        return wall, out

    def setup(self, session, cell):
        self.call(session, cell)
        if self.warm:
            self.admin("--server-start")

    def admin(self, *args):
        return subprocess.run([self.bin, *args], env=self.env, capture_output=True,
                              text=True, check=False).stdout

    def new_session(self, tag):
        return tag

    def stop(self):
        if self.warm:
            self.admin("--server-stop")


class Jupyter:
    """A warm ipykernel; one kernel per session tag (started on first use)."""

    name = "jupyter"

    def __init__(self, work):
        from jupyter_client.manager import KernelManager
        self._km_class = KernelManager
        self.work = work
        self.kernels = {}

    def _client(self, session):
        if session not in self.kernels:
            km = self._km_class(kernel_name="python3")
            km.start_kernel(cwd=self.work, env=dict(bt.base_env(), MPLBACKEND="Agg",
                                                   PYDEVD_DISABLE_FILE_VALIDATION="1"))
            kc = km.client()
            kc.start_channels()
            kc.wait_for_ready(timeout=60)
            self.kernels[session] = (km, kc)
        return self.kernels[session][1]

    def call(self, session, cell, flags=True):
        kc = self._client(session)
        parts = []

        def hook(msg):
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                parts.append(content["text"])
            elif kind == "execute_result":
                parts.append(content["data"]["text/plain"] + "\n")
            elif kind == "error":
                parts.append("\n".join(content["traceback"]))

        t0 = time.perf_counter()
        reply = kc.execute_interactive(cell, output_hook=hook, timeout=120, store_history=False)
        wall = time.perf_counter() - t0
        if reply["content"]["status"] != "ok":
            raise RuntimeError(f"jupyter: {cell[:60]!r}: {''.join(parts)[-400:]}")
        return wall, "".join(parts)

    def setup(self, session, cell):
        self.call(session, cell)

    def new_session(self, tag):
        return tag

    def drop(self, session):
        km, kc = self.kernels.pop(session)
        kc.stop_channels()
        km.shutdown_kernel(now=True)

    def stop(self):
        for session in list(self.kernels):
            self.drop(session)


# The live interpreter: length-prefixed JSON requests on stdin, replies on
# stdout; a cell runs as a REPL runs it (the last expression's repr shown).
LIVE_CHILD = r'''
import ast, io, json, os, sys, time
ns = {"__name__": "__main__"}
inp, outp = sys.stdin.buffer, sys.stdout
def run(src):
    tree = ast.parse(src)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, "<cell>", "exec"), ns)
    if last is not None:
        v = eval(compile(ast.Expression(last.value), "<cell>", "eval"), ns)
        if v is not None:
            print(repr(v))
while True:
    line = inp.readline()
    if not line:
        break
    src = json.loads(line)
    buf = io.StringIO()
    sys.stdout = buf
    t0 = time.perf_counter()
    try:
        run(src)
        ok = True
    except BaseException as e:
        ok = False
        print(repr(e))
    t = time.perf_counter() - t0
    sys.stdout = outp
    outp.write(json.dumps([ok, t, buf.getvalue()]) + "\n")
    outp.flush()
'''


class Live:
    name = "live"

    def __init__(self, work):
        self.work = work
        self.procs = {}

    def call(self, session, cell, flags=True):
        if session not in self.procs:
            self.procs[session] = subprocess.Popen(
                [PY, "-c", LIVE_CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                cwd=self.work, env=dict(bt.base_env(), MPLBACKEND="Agg"), text=True)
        p = self.procs[session]
        p.stdin.write(json.dumps(cell) + "\n")
        p.stdin.flush()
        ok, t, out = json.loads(p.stdout.readline())
        if not ok:
            raise RuntimeError(f"live: {cell[:60]!r}: {out[-400:]}")
        return t, out

    def setup(self, session, cell):
        self.call(session, cell)

    def new_session(self, tag):
        return tag

    def drop(self, session):
        p = self.procs.pop(session)
        p.stdin.close()
        p.wait()

    def stop(self):
        for session in list(self.procs):
            self.drop(session)


class Monty:
    """Monty's stateless Rust CLI: S1 as one process `x = 1; x + 1`."""

    name = "monty-cli"

    def __init__(self, binary, work):
        self.bin = binary
        self.out = tempfile.TemporaryFile(dir=work)
        self.err = tempfile.TemporaryFile(dir=work)

    def call(self, session, cell, flags=True):
        argv = [self.bin, "-c", "x = 1; " + cell]
        wall, _, rc = bt.run_unit([(argv, bt.base_env())], self.out.fileno(), self.err.fileno())
        err = read_text(self.err.fileno()).strip()
        if rc != 0:
            raise RuntimeError(f"monty-cli: exit {rc}: {err[-200:]}")
        # Monty prints "<time> ❯ <value>" on stderr: keep the value.
        return wall, err.rpartition("❯ ")[2] + "\n"

    def setup(self, session, cell):
        pass

    def new_session(self, tag):
        return tag

    def stop(self):
        pass


def monty_binary(out_root):
    if os.environ.get("BENCH_MONTY", "1") == "0":
        return None, "skipped (BENCH_MONTY=0)"
    if os.environ.get("MONTY_BIN"):
        return os.environ["MONTY_BIN"], "MONTY_BIN"
    for cand in (os.path.join(ROOT, "tools/node/node_modules/@pydantic/monty-linux-x64-gnu/monty"),
                 os.path.join(out_root, "monty/package/monty")):
        if os.access(cand, os.X_OK):
            return cand, cand
    if not shutil.which("npm"):
        return None, "npm not found"
    d = os.path.join(out_root, "monty")
    os.makedirs(d, exist_ok=True)
    r = subprocess.run("timeout 300 npm pack --silent @pydantic/monty-linux-x64-gnu@0.0.23"
                       " && tar xzf ./*.tgz", shell=True, cwd=d, capture_output=True, text=True)
    cand = os.path.join(d, "package/monty")
    if r.returncode == 0 and os.access(cand, os.X_OK):
        return cand, "npm pack @pydantic/monty-linux-x64-gnu@0.0.23"
    return None, "npm pack failed: " + r.stderr[-200:]


def snapshot(binary, work, tag):
    """A copy of binary (others rebuild ./dolsot while we time it)."""
    if not os.access(binary, os.X_OK):
        sys.exit(f"notebook.py: {binary} is not an executable")
    dst = os.path.join(work, "dolsot-" + tag)
    shutil.copy2(binary, dst)
    return dst


def sha(path):
    return subprocess.run(["sha256sum", path], capture_output=True, text=True).stdout[:16]


def stats(xs):
    xs = sorted(xs)
    return {"n": len(xs), "median": statistics.median(xs), "mean": statistics.fmean(xs),
            "p90": bt.pct(xs, 0.9), "min": xs[0]}


class Run:
    def __init__(self, out, log):
        self.out, self.log = out, log
        self.raw = []       # (part, system, round, cell, seconds)

    def say(self, *a):
        line = " ".join(str(x) for x in a)
        print(line, flush=True)
        self.log.write(line + "\n")
        self.log.flush()


def check_outputs(run, part, outs):
    """outs {system: [text per cell]}: all equal to the first system's."""
    names = list(outs)
    ref = outs[names[0]]
    bad = []
    for name in names[1:]:
        for i, (a, b) in enumerate(zip(ref, outs[name])):
            if a.strip() != b.strip():
                bad.append(f"{part} cell {i}: {names[0]} printed\n{a}\n{name} printed\n{b}")
    for name in names:
        with open(os.path.join(run.out, f"outputs-{part}-{name}.txt"), "w") as f:
            for i, text in enumerate(outs[name]):
                f.write(f"--- cell {i}\n{text}")
    if bad:
        run.say("parts check FAILED:\n" + "\n".join(bad[:3]))
        sys.exit(1)
    run.say(f"parts check {part}: {len(ref)} cell(s), outputs equal on {', '.join(names)}")


def think():
    """BENCH_GAP_MS of idle time, off the clock, before a timed call."""
    gap = env_int("BENCH_GAP_MS", 0, 0)
    if gap:
        time.sleep(gap / 1000)


def part_single(run, part, systems, setup, cell, rounds, warmup, sess=None):
    """S1/S6: one session per system made by setup, cell timed interleaved."""
    sess = sess or part.lower()
    for s in systems:
        s.setup(sess, setup) if setup else None
    outs = {s.name: [s.call(sess, cell)[1]] for s in systems}
    check_outputs(run, part, outs)
    want = outs[systems[0].name][0].strip()
    run.say(f"{part}: timing {rounds} rounds (+{warmup} warm-up), load {bt.loadavg()}")
    for r in range(-warmup, rounds):
        for s in systems:
            think()
            wall, out = s.call(sess, cell)
            if out.strip() != want:
                sys.exit(f"{s.name}: {part} printed {out!r}, expected {want!r}")
            if r >= 0:
                run.raw.append((part, s.name, r, 0, wall))


def part_notebook(run, systems, work, rounds):
    def replay(tag, record):
        cells = {}
        for s in systems:
            d = os.path.join(work, f"nb-{s.name}-{tag}")
            os.mkdir(d)
            cells[s.name] = notebook_cells.cells(d)
        count = len(next(iter(cells.values())))
        outs = {s.name: [] for s in systems}
        for i in range(count):
            for s in systems:
                if record is not None:
                    think()
                wall, out = s.call(f"nb{tag}", cells[s.name][i])
                outs[s.name].append(out)
                if record is not None:
                    run.raw.append(("notebook", s.name, record, i, wall))
        for s in systems:
            if hasattr(s, "drop"):
                s.drop(f"nb{tag}")
        return outs

    run.say(f"notebook: parts check replay, load {bt.loadavg()}")
    check_outputs(run, "notebook", replay("check", None))
    run.say(f"notebook: timing {rounds} replays, load {bt.loadavg()}")
    for r in range(rounds):
        outs = replay(str(r), r)
        ref = outs[systems[0].name]
        for s in systems[1:]:
            if [o.strip() for o in outs[s.name]] != [o.strip() for o in ref]:
                sys.exit(f"notebook replay {r}: {s.name}'s outputs differ from {systems[0].name}'s")


def summary(run, parts, base):
    lines = []
    for part in parts:
        rows = [x for x in run.raw if x[0] == part]
        if not rows:
            continue
        systems = list(dict.fromkeys(x[1] for x in rows))
        by = {s: {(x[2], x[3]): x[4] for x in rows if x[1] == s} for s in systems}
        unit = "cell" if part == "notebook" else "call"
        lines += [f"### {part}", "",
                  f"| system | n | median ms/{unit} | mean ms | p90 ms | min ms | {base} ÷ system (median of paired ratios) |",
                  "|---|---|---|---|---|---|---|"]
        for s in systems:
            st = stats(list(by[s].values()))
            pair = ""
            if base in by and s != base:
                ratios = [by[base][k] / by[s][k] for k in by[s] if k in by[base] and by[s][k] > 0]
                if ratios:
                    pair = f"{statistics.median(ratios):.3f}"
            lines.append(f"| {s} | {st['n']} | {st['median'] * 1e3:.2f} | {st['mean'] * 1e3:.2f} | "
                         f"{st['p90'] * 1e3:.2f} | {st['min'] * 1e3:.2f} | {pair} |")
        if "dolsot-B" in by and base in by:
            ratios = [by["dolsot-B"][k] / by[base][k] for k in by[base] if k in by["dolsot-B"]]
            lines.append(f"\nA/B: dolsot-B ÷ dolsot, median of paired ratios {statistics.median(ratios):.3f}")
        lines.append("")
    return "\n".join(lines)


def main():
    rounds = env_int("BENCH_ROUNDS", 20, 1)
    warmup = env_int("BENCH_WARMUP", 2, 0)
    nb_rounds = env_int("BENCH_NB_ROUNDS", 3, 1)
    parts = [p for p in os.environ.get("BENCH_ONLY", "S1,S3,S6,notebook").split(",") if p]
    for p in parts:
        if p not in ("S1", "S3", "S6", "S7", "notebook"):
            sys.exit(f"notebook.py: BENCH_ONLY: unknown part {p!r} (S1, S3, S6, S7, notebook)")
    flags = shlex.split(os.environ.get("DOLSOT_FLAGS", ""))
    out_root = os.path.join(ROOT, "bench", "out")
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    out = os.path.join(out_root, "notebook-" + stamp)
    os.makedirs(out)
    work = tempfile.mkdtemp(prefix="dolsot-nb.")
    os.chmod(work, 0o700)
    run = Run(out, open(os.path.join(out, "run.log"), "w"))
    a = snapshot(os.environ.get("DOLSOT_BIN", os.path.join(ROOT, "dolsot")), work, "A")
    b = os.environ.get("DOLSOT_BIN_B")
    systems = [Cli("dolsot", a, work, True, flags)]
    if b:
        systems.append(Cli("dolsot-B", snapshot(b, work, "B"), work, True, flags))
    systems += [Cli("dolsot-cold", a, work, False, flags), Jupyter(work), Live(work)]
    mbin, mwhy = monty_binary(out_root)
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    run.say(f"# dolsot notebook benchmark {stamp}")
    run.say(f"date: {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}; machine: nproc={os.cpu_count()}, "
            f"kernel {os.uname().release}; commit {commit}")
    run.say(f"dolsot: {a} sha256 {sha(a)}" + (f"; dolsot-B: {b} sha256 {sha(b)}" if b else "")
            + f"; DOLSOT_FLAGS={' '.join(flags) or '-'}")
    import jupyter_client, ipykernel  # noqa: E401
    run.say(f"jupyter_client {jupyter_client.__version__}, ipykernel {ipykernel.__version__}; "
            f"monty-cli: {mbin or '-'} ({mwhy})")
    run.say(f"parts {','.join(parts)}; rounds {rounds} (+{warmup} warm-up), notebook replays {nb_rounds} "
            f"of {len(notebook_cells.cells(''))} cells; load average at start {bt.loadavg()}")
    try:
        if "S1" in parts:
            s1 = systems + ([Monty(mbin, work)] if mbin else [])
            part_single(run, "S1", s1, "x = 1", "x + 1", rounds, warmup)
        if "S3" in parts:
            part_single(run, "S3", systems, S3_SETUP, S3_CELL, rounds, warmup)
        if "S6" in parts:
            part_single(run, "S6", systems, S6_SETUP, S6_CELL, rounds, warmup)
        if "S7" in parts:
            s7_rounds = env_int("BENCH_S7_ROUNDS", 5, 1)
            for s in systems:
                s.setup("s7", S7_SETUP)
            for part, cell in S7_CELLS:
                part_single(run, part, systems, None, cell, s7_rounds, 1, "s7")
            parts = parts + [p for p, _ in S7_CELLS]
        if "notebook" in parts:
            part_notebook(run, systems, work, nb_rounds)
        for s in systems:
            if isinstance(s, Cli) and s.warm:
                status = s.admin("--server-status")
                with open(os.path.join(out, f"server-status-{s.name}.txt"), "w") as f:
                    f.write(status)
                calls = [ln for ln in status.splitlines() if ln.startswith("calls ")]
                run.say(f"{s.name} server: {calls[0] if calls else 'no status'}")
    finally:
        for s in systems:
            s.stop()
        shutil.rmtree(work, ignore_errors=True)
    run.say(f"load average at end {bt.loadavg()}\n")
    with open(os.path.join(out, "raw.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["part", "system", "round", "cell", "seconds"])
        w.writerows(run.raw)
    text = summary(run, parts, "dolsot")
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write(text)
    run.say(text)
    run.say(f"output: {out}")


if __name__ == "__main__":
    main()
