"""Where a real call's time goes (load, cell, dump, save), issue 11.

    /usr/bin/python3.11 bench/phases.py [ROUNDS]        # default 20

Part 1, end to end: warm calls (DOLSOT_SERVER=auto) with --json on three
sessions, the phases from its timings_ms (startup, load, cell, dump, save,
total) and the wall time of the call; DOLSOT_BIN (default ./dolsot) and,
when set, DOLSOT_BIN_B, interleaved round by round, each with its own store:

  S6   `int(df.b.sum())` after `import numpy as np, pandas as pd` and a
       1000-row DataFrame
  S3   `len(blob) + len(nums)`: 50 MB of os.urandom bytes, 200k ints
  S3t  `len(text)`: a str of 25M 'é' (50 MB of UTF-8)

Part 2, once imports are gone: in a /usr/bin/python3.11 -I process that
imported numpy and pandas (what a module-aware zygote would hold), children
forked one per round run session.py of this tree on the same sessions
(made in process, without carried state): load (parse + unpickle every
unit), the cell, dump (pickle; with Stored.reuse and, in every other child,
without it), write + fsync + rename of the blob to a temp file; whether dill
got imported is printed.  The "(warmed)" rows: the same after the parent
itself loaded, ran and dumped the session once before forking.
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
PY = "/usr/bin/python3.11"
SESSIONS = [
    ("S6", "import numpy as np, pandas as pd\n"
           "df = pd.DataFrame({'a': np.arange(1000) % 7, 'b': np.arange(1000)})",
     "int(df.b.sum())"),
    ("S3", "import os\nblob = os.urandom(50_000_000)\nnums = list(range(200_000))",
     "len(blob) + len(nums)"),
    ("S3t", "text = 'é' * 25_000_000", "len(text)"),
]
KEYS = ("load", "cell", "dump", "dump (no reuse)", "write+fsync")
PHASES = ("startup", "load", "cell", "dump", "save", "total")


def clean_env(store):
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root"),
           "LANG": "C.UTF-8", "DOLSOT_CACHE_DIR": store}
    if "TMPDIR" in os.environ:
        env["TMPDIR"] = os.environ["TMPDIR"]
    return env


def call(binary, store, sid, code, json_out=False):
    argv = [binary] + (["--json"] if json_out else []) + ["--session", sid, code]
    t0 = time.perf_counter()
    r = subprocess.run(argv, env=clean_env(store), capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"phases.py: {binary} {sid}: exit {r.returncode}: {r.stdout[-300:]} {r.stderr[-300:]}")
    return wall, r.stdout


def end_to_end(bins, rounds, work):
    rows = {}   # (scenario, system) -> {phase: [ms]}
    stores = {}
    for name, binary in bins:
        stores[name] = os.path.join(work, "store-" + name)
        os.mkdir(stores[name], 0o700)
        for sid, setup, _ in SESSIONS:
            call(binary, stores[name], sid, setup)
        subprocess.run([binary, "--server-start"], env=clean_env(stores[name]),
                       capture_output=True, check=False)
    try:
        for sid, _, cell in SESSIONS:
            for r in range(-2, rounds):
                for name, binary in bins:
                    wall, out = call(binary, stores[name], sid, cell, json_out=True)
                    if r < 0:
                        continue
                    t = json.loads(out)["timings_ms"]
                    d = rows.setdefault((sid, name), {})
                    for p in PHASES:
                        d.setdefault(p, []).append(t.get(p) or 0.0)
                    d.setdefault("wall", []).append(wall * 1e3)
    finally:
        for name, binary in bins:
            st = subprocess.run([binary, "--server-status"], env=clean_env(stores[name]),
                                capture_output=True, text=True, check=False).stdout
            calls = [ln for ln in st.splitlines() if ln.startswith("calls ")]
            print(f"{name} server: {calls[0] if calls else '-'}")
            subprocess.run([binary, "--server-stop"], env=clean_env(stores[name]),
                           capture_output=True, check=False)
    print(f"\n### warm calls, --json timings_ms (median ms of {rounds}; load {os.getloadavg()[0]:.2f})\n")
    print("| session | system | " + " | ".join(PHASES) + " | wall |")
    print("|---|---|" + "---|" * (len(PHASES) + 1))
    for (sid, name), d in rows.items():
        print(f"| {sid} | {name} | " + " | ".join(f"{statistics.median(d[p]):.1f}" for p in PHASES + ("wall",)) + " |")


CHILD = r'''
import os, sys, time, statistics, tempfile
sys.dont_write_bytecode = True      # no __pycache__ in the source tree
sys.path.insert(0, ROOT)
import numpy, pandas            # what a module-aware zygote holds
import session
rounds = int(sys.argv[1])
out_dir = tempfile.mkdtemp()
res = {}
for (sid, setup, cell), warmed in [(s, False) for s in SESSIONS] + [(s, True) for s in SESSIONS]:
    ns = {}
    exec(setup, ns)
    ns.pop("__builtins__")
    blob = b"".join(session.dump(ns, {}, {})[0])
    del ns
    if warmed:      # the parent itself loads, runs and dumps once before forking
        ns = {}
        st = session.load(sid, memoryview(blob))
        st.load_into(ns)
        exec(cell, ns)
        ns.pop("__builtins__")
        session.dump(ns, {}, {}, count=1)
        del ns, st
        sid += " (warmed)"
    times = {k: [] for k in KEYS}
    dill_seen = set()
    for r in range(2 * rounds + 1):
        reuse = r % 2 == 0      # rounds alternate: the dump with, then without
        rd, wr = os.pipe()
        pid = os.fork()
        if pid == 0:
          try:
            os.close(rd)
            t = [time.perf_counter()]
            st = session.load("s", memoryview(blob))
            ns = {}
            st.load_into(ns)
            t.append(time.perf_counter())
            exec(cell, ns)
            ns.pop("__builtins__")
            t.append(time.perf_counter())
            parts = session.dump(ns, {}, {}, count=1, reuse=st.reuse if reuse else None)[0]
            t.append(time.perf_counter())
            path = os.path.join(out_dir, f"{r}.tmp")
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
            for p in parts:
                os.write(fd, p)
            os.fsync(fd)
            os.close(fd)
            os.rename(path, os.path.join(out_dir, "blob"))
            t.append(time.perf_counter())
            d = [(t[i + 1] - t[i]) * 1e3 for i in range(4)]
            os.write(wr, repr((d, "dill" in sys.modules)).encode())
            os._exit(0)
          except BaseException:
            import traceback
            traceback.print_exc()
            os._exit(1)
        os.close(wr)
        data = b""
        while chunk := os.read(rd, 4096):
            data += chunk
        os.close(rd)
        os.waitpid(pid, 0)
        d, dill = eval(data)
        if r == 0:
            continue        # the first fork: its copy-on-write faults are everyone's
        names = ("load", "cell", "dump" if reuse else "dump (no reuse)", "write+fsync")
        for k, v in zip(names, d):
            times[k].append(v)
        dill_seen.add(dill)
    res[sid] = ({k: statistics.median(v) for k, v in times.items()}, len(blob), dill_seen)
print(repr(res))
'''


def in_process(rounds):
    code = f"ROOT = {ROOT!r}\nSESSIONS = {SESSIONS!r}\nKEYS = {KEYS!r}\n" + CHILD
    r = subprocess.run([PY, "-I", "-c", code, str(rounds)], capture_output=True, text=True,
                       env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}, check=False)
    if r.returncode != 0:
        sys.exit(f"phases.py: in-process part failed: {r.stderr[-800:]}")
    res = eval(r.stdout)
    print(f"\n### once imports are gone: session.py in a forked child of a process holding numpy and pandas"
          f" (median ms of {rounds}; load {os.getloadavg()[0]:.2f})\n")
    keys = KEYS
    print("| session | blob MB | " + " | ".join(keys) + " | dill imported |")
    print("|---|---|" + "---|" * (len(keys) + 1))
    for sid, (med, size, dill) in res.items():
        print(f"| {sid} | {size / 1e6:.1f} | " + " | ".join(f"{med[k]:.2f}" for k in keys)
              + f" | {'yes' if True in dill else 'no'} |")


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    work = tempfile.mkdtemp(prefix="dolsot-phases.")
    os.chmod(work, 0o700)
    bins = [("dolsot", os.environ.get("DOLSOT_BIN", os.path.join(ROOT, "dolsot")))]
    if os.environ.get("DOLSOT_BIN_B"):
        bins.append(("dolsot-B", os.environ["DOLSOT_BIN_B"]))
    snap = []
    for name, b in bins:        # others rebuild ./dolsot: time copies
        dst = os.path.join(work, name)
        shutil.copy2(b, dst)
        snap.append((name, dst))
    print(f"phases.py: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, nproc {os.cpu_count()}, "
          f"load {os.getloadavg()}, " + ", ".join(f"{n}={b}" for n, b in bins))
    try:
        if os.environ.get("BENCH_ONLY", "e2e,inproc") != "inproc":
            end_to_end(snap, rounds, work)
        if os.environ.get("BENCH_ONLY", "e2e,inproc") != "e2e":
            in_process(rounds)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
