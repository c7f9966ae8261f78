"""Timing helper for bench/run.sh.  Run it with /usr/bin/python3.11.

    timeit.py time --scenario S --rounds N --warmup W --raw FILE.csv \
        --sys NAME CMD [--sys NAME CMD ...] [--expect NAME TEXT ...] \
        [--server-pid NAME PID ...]
        [--fanout NAME N] [--pre NAME CMD] [--post NAME CMD] [--free NAME PATH]
    timeit.py summary --raw FILE.csv --base dolsot [--target SPEC ...]
        [--throughput SCENARIO CALLS_PER_UNIT ...]
    timeit.py smaps --status FILE   (memory of a dolsot server and its zygotes)
    timeit.py rss --out FILE.json --label L [--attach PID ...] -- CMD
    timeit.py rss-table --json FILE.json

CMD is a command line split with shlex (no shell runs at timing time).
Leading NAME=VALUE words set environment variables for that command only,
and a bare `&&` word separates commands that form one timed unit (run in
sequence; the unit fails at the first failing command).  Every command runs
with a clean environment (PATH=/usr/local/bin:/usr/bin:/bin, HOME, LANG,
TMPDIR) plus its own NAME=VALUE words, in the current directory.

`time` interleaves the systems, A B C A B C ..., for W unrecorded warm-up
rounds and then N recorded rounds.  Each command is started with
posix_spawn and reaped with wait4; the wall time is perf_counter around
spawn..reap of the whole unit, the CPU time is the user+sys rusage wait4
returns (the command and every descendant it reaped).  A run counts as
failed when a command exits non-zero or when the unit's stdout, stripped,
differs from the --expect text given for that system.  --server-pid NAME
PID: NAME's work partly happens in a long-lived process tree (dolsot's warm
server and zygotes, whose workers the zygotes reap); the CPU that tree used
during the scenario (/proc/PID/stat, 10 ms ticks) is divided by the number
of NAME's calls and written to FILE.csv.server.csv.

Per-system options of `time` (each NAME must also be given with --sys):
  --fanout NAME N   NAME's unit is run by N concurrent callers (a fresh
                    spawn of each command; `{i}` in CMD becomes the caller's
                    index 0..N-1); the wall time is from the first spawn to
                    the last caller's exit, the CPU the sum over callers, and
                    --expect applies to every caller's stdout.
  --pre NAME CMD    an untimed unit run before every run of NAME (warm-up
                    included); a failure fails the run.
  --post NAME CMD   an untimed unit run after every run of NAME; a failure
                    fails the run.
  --free NAME PATH  after --post, no process may hold an open file or its
                    cwd under PATH (leftover servers): the run fails and
                    the pids are printed.
  In CMD, --pre, --post and --free, `{r}` becomes a number unique to the
  run (warm-up included), e.g. for a fresh directory per run.

`rss` runs one command under ptrace (PTRACE_O_TRACEEXIT and fork/clone
tracing) and, when each process of the tree is about to exit (its memory
still mapped), reads VmHWM (peak resident set) from /proc/PID/status.  This
gives the peak of each process separately.  --attach PID seizes an
already running process for the duration of the command, so that the
processes it forks (dolsot's zygote forks the call's worker) are measured
too.  The tracing slows the command down, so `rss` runs are never timed.
"""

import argparse
import csv
import ctypes
import json
import os
import re
import shlex
import shutil
import signal
import statistics
import sys
import tempfile
import time

CLEAN_PATH = "/usr/local/bin:/usr/bin:/bin"
ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def base_env():
    # Same variables in the same order as run.sh's clean(): dolsot keys its
    # zygotes on the environment as a list, so a reordered but equal
    # environment would not find the zygote `--server-start` made.
    env = {"PATH": CLEAN_PATH}
    if "HOME" in os.environ:
        env["HOME"] = os.environ["HOME"]
    env["LANG"] = "C.UTF-8"
    if "TMPDIR" in os.environ:
        env["TMPDIR"] = os.environ["TMPDIR"]
    return env


def parse_unit(cmd):
    """'A=1 prog x && prog2 y' -> [(argv, env), ...] with absolute argv[0]."""
    words = shlex.split(cmd)
    segments, cur = [], []
    for w in words:
        if w == "&&":
            segments.append(cur)
            cur = []
        else:
            cur.append(w)
    segments.append(cur)
    unit = []
    for seg in segments:
        env = base_env()
        while seg and ASSIGN.match(seg[0]):
            key, _, value = seg.pop(0).partition("=")
            env[key] = value
        if not seg:
            sys.exit(f"timeit: empty command in {cmd!r}")
        prog = seg[0]
        if "/" not in prog:
            found = shutil.which(prog, path=CLEAN_PATH)
            if not found:
                sys.exit(f"timeit: {prog!r} not found on {CLEAN_PATH}")
            prog = found
        elif not os.access(prog, os.X_OK):
            sys.exit(f"timeit: {prog!r} is not executable")
        unit.append(([prog] + seg[1:], env))
    return unit


def run_unit(unit, out_fd, err_fd):
    """Run the commands of a unit in sequence; returns (wall_s, cpu_s, rc)."""
    for fd in (out_fd, err_fd):
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
    actions = [(os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
               (os.POSIX_SPAWN_DUP2, out_fd, 1), (os.POSIX_SPAWN_DUP2, err_fd, 2)]
    cpu, rc = 0.0, 0
    t0 = time.perf_counter()
    for argv, env in unit:
        pid = os.posix_spawn(argv[0], argv, env, file_actions=actions)
        _, status, ru = os.wait4(pid, 0)
        cpu += ru.ru_utime + ru.ru_stime
        rc = os.waitstatus_to_exitcode(status)
        if rc != 0:
            break
    wall = time.perf_counter() - t0
    return wall, cpu, rc


def run_fanout(units, files):
    """Run len(units) callers concurrently, each its unit in sequence.

    files[i] = (out_fd, err_fd) of caller i.  Returns (wall_s, cpu_s, rcs):
    wall from the first spawn to the last exit, CPU summed over all
    callers (and the descendants they reaped), rcs the exit status of
    each caller's last command run.
    """
    for pair in files:
        for fd in pair:
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
    nxt = [0] * len(units)
    rcs = [0] * len(units)
    running = {}
    cpu = 0.0

    def spawn(i):
        argv, env = units[i][nxt[i]]
        actions = [(os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
                   (os.POSIX_SPAWN_DUP2, files[i][0], 1),
                   (os.POSIX_SPAWN_DUP2, files[i][1], 2)]
        running[os.posix_spawn(argv[0], argv, env, file_actions=actions)] = i
        nxt[i] += 1

    t0 = time.perf_counter()
    for i in range(len(units)):
        spawn(i)
    while running:
        pid, status, ru = os.wait4(-1, 0)
        i = running.pop(pid, None)
        if i is None:
            continue
        cpu += ru.ru_utime + ru.ru_stime
        rcs[i] = os.waitstatus_to_exitcode(status)
        if rcs[i] == 0 and nxt[i] < len(units[i]):
            spawn(i)
    wall = time.perf_counter() - t0
    return wall, cpu, rcs


def holders(path):
    """Pids (other than ours) with an open file or their cwd under path."""
    path = os.path.realpath(path).rstrip("/") + "/"
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        links = [f"/proc/{d}/cwd"]
        try:
            links += [f"/proc/{d}/fd/{f}" for f in os.listdir(f"/proc/{d}/fd")]
        except OSError:
            pass
        for link in links:
            try:
                target = os.readlink(link)
            except OSError:
                continue
            if (target + "/").startswith(path):
                found.append(int(d))
                break
    return found


def proc_name(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return "?"


def read_fd(fd):
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while True:
        b = os.read(fd, 1 << 16)
        if not b:
            return b"".join(chunks)
        chunks.append(b)


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def tree_cpu(root):
    """CPU seconds (utime+stime+cutime+cstime) of root and all its descendants.

    /proc/PID/stat counts clock ticks (10 ms), so this is only meaningful
    summed over many calls.  Reaped children are in their reaper's c*time.
    """
    tick = os.sysconf("SC_CLK_TCK")
    kids, cpu = {}, {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read()
        except OSError:
            continue
        fields = st[st.rindex(")") + 2:].split()
        pid, ppid = int(d), int(fields[1])
        kids.setdefault(ppid, []).append(pid)
        cpu[pid] = sum(int(x) for x in fields[11:15]) / tick
    if root not in cpu:
        return None
    total, todo = 0.0, [root]
    while todo:
        p = todo.pop()
        total += cpu.get(p, 0.0)
        todo.extend(kids.get(p, []))
    return total


def cmd_time(a):
    names = [n for n, _ in a.sys]
    if len(set(names)) != len(names):
        sys.exit("timeit: duplicate system names")
    cmds = dict(a.sys)
    fanout = {n: int(k) for n, k in (a.fanout or [])}
    pre = dict(a.pre or [])
    post = dict(a.post or [])
    free = dict(a.free or [])
    for opt in (fanout, pre, post, free):
        for n in opt:
            if n not in cmds:
                sys.exit(f"timeit: {n!r} is not a --sys name")
    counter = [0]

    def units_for(n):
        """The unit(s) of NAME for one run: {r} and {i} substituted."""
        r = str(counter[0])
        cmd = cmds[n].replace("{r}", r)
        if n in fanout:
            return [parse_unit(cmd.replace("{i}", str(i))) for i in range(fanout[n])]
        return parse_unit(cmd)

    def hook(n, table, fd, efd):
        if n not in table:
            return None
        wall, _, rc = run_unit(parse_unit(table[n].replace("{r}", str(counter[0]))), fd, efd)
        if rc != 0:
            return (rc, read_fd(fd).decode("utf-8", "replace").strip()[:200],
                    "(" + ("pre" if table is pre else "post") + ") "
                    + read_fd(efd).decode("utf-8", "replace").strip()[-400:])
        return None

    for n in cmds:   # parse everything once up front, to fail early
        units_for(n)
    expect = {n: t for n, t in (a.expect or [])}
    new = not os.path.exists(a.raw) or os.path.getsize(a.raw) == 0
    # stdout and stderr of a unit go to these files, read back after each run.
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    fd, efd = out.fileno(), err.fileno()
    nfan = max(fanout.values(), default=0)
    fan_files = [(tempfile.TemporaryFile(), tempfile.TemporaryFile()) for _ in range(nfan)]
    fan_fds = [(o.fileno(), e.fileno()) for o, e in fan_files]
    fails = {n: 0 for n in names}
    first_bad = {}
    servers = {n: int(pid) for n, pid in (a.server_pid or [])}
    cpu0 = {n: tree_cpu(pid) for n, pid in servers.items()}
    print(f"[{a.scenario}] load average at start: {loadavg()}", flush=True)
    with open(a.raw, "a", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        if new:
            w.writerow(["scenario", "round", "system", "wall_ms", "cpu_ms", "rc", "ok"])
        for rnd in range(-a.warmup, a.rounds):
            for n in names:
                counter[0] += 1
                bad = hook(n, pre, fd, efd)
                if bad:
                    wall, cpu, rc, ok = float("nan"), float("nan"), bad[0], False
                elif n in fanout:
                    ffds = fan_fds[:fanout[n]]
                    wall, cpu, rcs = run_fanout(units_for(n), ffds)
                    ok, rc = True, 0
                    for i, (ofd, ofe) in enumerate(ffds):
                        text = read_fd(ofd).decode("utf-8", "replace").strip()
                        if rcs[i] != 0 or (n in expect and text != expect[n]):
                            ok, rc = False, rcs[i] or rc
                            etext = read_fd(ofe).decode("utf-8", "replace").strip()
                            bad = (rcs[i], f"caller {i}: {text[:200]}", etext[-400:])
                            break
                else:
                    wall, cpu, rc = run_unit(units_for(n), fd, efd)
                    text = read_fd(fd).decode("utf-8", "replace").strip()
                    ok = rc == 0 and (n not in expect or text == expect[n])
                    if not ok:
                        etext = read_fd(efd).decode("utf-8", "replace").strip()
                        bad = (rc, text[:200], etext[-400:])
                pbad = hook(n, post, fd, efd)
                if pbad and ok:
                    ok, bad = False, pbad
                if n in free:
                    fpath = free[n].replace("{r}", str(counter[0]))
                    left = holders(fpath)
                    if left:
                        desc = ", ".join(f"{p} ({proc_name(p)})" for p in left)
                        print(f"[{a.scenario}] WARNING: {n}: processes left holding "
                              f"{fpath}: {desc}", flush=True)
                        if ok:
                            ok, bad = False, (rc, "", f"left behind: {desc}")
                if rnd < 0:
                    if not ok:
                        print(f"[{a.scenario}] warm-up: {n} failed: rc={bad[0]} "
                              f"stdout={bad[1]!r} stderr={bad[2]!r}", flush=True)
                    continue
                if not ok:
                    fails[n] += 1
                    first_bad.setdefault(n, bad)
                w.writerow([a.scenario, rnd, n, f"{wall * 1e3:.3f}",
                            f"{cpu * 1e3:.3f}", rc, int(ok)])
    print(f"[{a.scenario}] load average at end:   {loadavg()}", flush=True)
    for o, e in fan_files:
        o.close()
        e.close()
    calls = a.warmup + a.rounds
    for n, pid in servers.items():
        cpu1 = tree_cpu(pid)
        if cpu0[n] is None or cpu1 is None:
            print(f"[{a.scenario}] WARNING: server {pid} of {n} not found "
                  "at start or end: no server-side CPU", flush=True)
            continue
        per = (cpu1 - cpu0[n]) * 1e3 / calls
        print(f"[{a.scenario}] {n}: server-side CPU (server, zygotes, workers) "
              f"{(cpu1 - cpu0[n]) * 1e3:.0f} ms over {calls} calls = {per:.2f} ms/call",
              flush=True)
        path = a.raw + ".server.csv"
        new_s = not os.path.exists(path)
        with open(path, "a", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            if new_s:
                w.writerow(["scenario", "system", "calls", "server_cpu_ms"])
            w.writerow([a.scenario, n, calls, f"{(cpu1 - cpu0[n]) * 1e3:.1f}"])
    for n, (rc, text, etext) in first_bad.items():
        print(f"[{a.scenario}] WARNING: {n} failed {fails[n]}/{a.rounds} runs; "
              f"first: rc={rc} stdout={text!r} stderr={etext!r}", flush=True)


def pct(xs, q):
    """Percentile by linear interpolation between order statistics."""
    s = sorted(xs)
    if not s:
        return float("nan")
    pos = q * (len(s) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def load_raw(path):
    data = {}   # scenario -> system -> round -> row
    order = {}  # scenario -> [systems in first-seen order]
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            sc, sy = row["scenario"], row["system"]
            order.setdefault(sc, [])
            if sy not in order[sc]:
                order[sc].append(sy)
            data.setdefault(sc, {}).setdefault(sy, {})[int(row["round"])] = row
    return data, order


def stats(rows):
    ok = [r for r in rows.values() if r["ok"] == "1"]
    wall = [float(r["wall_ms"]) for r in ok]
    cpu = [float(r["cpu_ms"]) for r in ok]
    return {"n": len(ok), "fail": len(rows) - len(ok),
            "median": pct(wall, 0.5), "p90": pct(wall, 0.9),
            "min": min(wall) if wall else float("nan"),
            "cpu": pct(cpu, 0.5)}


def paired_ratio(base_rows, rows):
    """Median over rounds of base/other (same round: same conditions)."""
    r = [float(base_rows[k]["wall_ms"]) / float(rows[k]["wall_ms"])
         for k in base_rows if k in rows
         and base_rows[k]["ok"] == "1" and rows[k]["ok"] == "1"]
    return statistics.median(r) if r else float("nan")


def load_server_cpu(path):
    out = {}
    if os.path.exists(path):
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                out[(row["scenario"], row["system"])] = (
                    float(row["server_cpu_ms"]) / int(row["calls"]))
    return out


def cmd_summary(a):
    data, order = load_raw(a.raw)
    server_cpu = load_server_cpu(a.raw + ".server.csv")
    table = {}
    thr = {sc: float(k) for sc, k in (a.throughput or [])}
    for sc in order:
        base = a.base if a.base in data[sc] else None
        print(f"\n### {sc}\n")
        print(f"| system | runs ok | median ms | p90 ms | min ms | CPU median ms "
              f"| + server CPU/call ms "
              f"| {a.base} ÷ system (medians) | {a.base} ÷ system (paired, median) |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for sy in order[sc]:
            st = stats(data[sc][sy])
            table[(sc, sy)] = st
            ratio = pr = float("nan")
            if base:
                bst = stats(data[sc][base])
                ratio = bst["median"] / st["median"]
                pr = paired_ratio(data[sc][base], data[sc][sy])
            fail = f" ({st['fail']} failed)" if st["fail"] else ""
            srv = server_cpu.get((sc, sy))
            srv_s = f"{srv:.2f}" if srv is not None else "–"
            if srv is not None:
                st["cpu"] += srv
            print(f"| {sy} | {st['n']}{fail} | {st['median']:.2f} | {st['p90']:.2f} "
                  f"| {st['min']:.2f} | {st['cpu'] - (srv or 0):.2f} | {srv_s} "
                  f"| {ratio:.3f} | {pr:.3f} |")
        if sc in thr:
            k = thr[sc]
            print(f"\n{sc}: {k:g} calls per unit; throughput from the median unit time "
                  f"(calls ÷ median wall), and per call:\n")
            print(f"| system | calls/s | ms per call (wall ÷ {k:g}) | CPU ms per call | "
                  f"{a.base} calls/s ÷ system calls/s |")
            print("|---|---:|---:|---:|---:|")
            for sy in order[sc]:
                st = table[(sc, sy)]
                b = table.get((sc, a.base))
                x = (st["median"] / b["median"]) if b else float("nan")
                print(f"| {sy} | {k * 1e3 / st['median']:.1f} | {st['median'] / k:.2f} "
                      f"| {st['cpu'] / k:.2f} | {x:.2f} |")
    if any(t.split()[0] in order for t in a.target or []):
        print("\n### Targets\n")
        print("| target | wall, ratio of medians | wall, paired | CPU, ratio of medians | verdict (wall medians) |")
        print("|---|---:|---:|---:|---|")
    for spec in a.target or []:
        # "S1 dolsot 2 py-S": S1 median of dolsot <= 2 x median of py-S
        sc, sy, factor, ref = spec.split()
        factor = float(factor)
        if sc not in order:   # scenario not run at all (BENCH_ONLY)
            continue
        if ref == "ms":   # absolute: "S1 dolsot 2.5 ms"
            if (sc, sy) not in table:
                print(f"| {sc}: {sy} ≤ {factor:g} ms | n/a | n/a | n/a | NOT MEASURED |")
                continue
            st = table[(sc, sy)]
            verdict = "PASS" if st["median"] <= factor else "FAIL"
            print(f"| {sc}: {sy} ≤ {factor:g} ms | {st['median']:.2f} ms | p90 {st['p90']:.2f} ms "
                  f"| CPU {st['cpu']:.2f} ms | {verdict} |")
            continue
        if (sc, sy) not in table or (sc, ref) not in table:
            print(f"| {sc}: {sy} ≤ {factor:g} × {ref} | n/a | n/a | n/a | NOT MEASURED |")
            continue
        got = table[(sc, sy)]["median"] / table[(sc, ref)]["median"]
        pr = 1.0 / paired_ratio(data[sc][ref], data[sc][sy])
        cpu = table[(sc, sy)]["cpu"] / table[(sc, ref)]["cpu"]
        verdict = "PASS" if got <= factor else "FAIL"
        print(f"| {sc}: {sy} ≤ {factor:g} × {ref} | {got:.3f} × | {pr:.3f} × | {cpu:.3f} × | {verdict} |")


# --- rss: per-process peak RSS under ptrace -----------------------------------

PTRACE_TRACEME, PTRACE_CONT = 0, 7
PTRACE_SETOPTIONS, PTRACE_DETACH = 0x4200, 17
PTRACE_SEIZE, PTRACE_INTERRUPT = 0x4206, 0x4207
O_TRACEFORK, O_TRACEVFORK, O_TRACECLONE = 0x2, 0x4, 0x8
O_TRACEEXEC, O_TRACEEXIT, O_EXITKILL = 0x10, 0x40, 0x100000
EV_FORK, EV_VFORK, EV_CLONE, EV_EXIT = 1, 2, 3, 6
WALL = 0x40000000


def proc_status(pid):
    fields = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                fields[k] = v.strip()
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            fields["cmdline"] = f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        pass
    return fields


def kb(v):
    return int(v.split()[0]) if v else 0


def cmd_rss(a):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    libc.ptrace.restype = ctypes.c_long

    def ptrace(req, pid, data=0):
        if libc.ptrace(req, pid, None, ctypes.c_void_p(data)) == -1:
            e = ctypes.get_errno()
            if e != 3:  # ESRCH: the tracee is gone already
                raise OSError(e, f"ptrace({req:#x}, {pid})")

    def let_go(pid):
        """Stop a seized process, then detach it."""
        ptrace(PTRACE_INTERRUPT, pid)
        while True:
            try:
                _, status = os.waitpid(pid, WALL)
            except ChildProcessError:
                return
            if not os.WIFSTOPPED(status):
                return
            sig, ev = os.WSTOPSIG(status), status >> 16
            ptrace(PTRACE_DETACH, pid, 0 if ev or sig == signal.SIGTRAP else sig)
            return

    opts = O_TRACEFORK | O_TRACEVFORK | O_TRACECLONE | O_TRACEEXEC | O_TRACEEXIT
    # Long-lived processes that fork the call's worker (dolsot's zygotes):
    # seize them first, so the worker they fork is traced as well.  A zygote
    # keeps a worker forked ahead of the call (its spare, which takes the
    # call): seize that too.  The spare it forks during the call never exits
    # and is let go once the command has.
    attached = [int(x) for x in a.attach or []]
    seized = []
    for z in attached:
        ptrace(PTRACE_SEIZE, z, opts)
        for kid in spares(z):
            ptrace(PTRACE_SEIZE, kid, opts)
            seized.append(kid)
    (argv, env), = parse_unit(shlex.join(a.command))
    outf, errf = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    root = os.fork()
    if root == 0:
        try:
            os.dup2(outf.fileno(), 1)
            os.dup2(errf.fileno(), 2)
            if libc.ptrace(PTRACE_TRACEME, 0, None, None) == -1:
                os._exit(126)
            os.execve(argv[0], argv, env)
        finally:
            os._exit(127)
    while True:   # the exec stop of the command (attached tracees may report first)
        pid, status = os.waitpid(-1, WALL)
        if pid == root:
            break
        if os.WIFSTOPPED(status):
            sig, ev = os.WSTOPSIG(status), status >> 16
            ptrace(PTRACE_CONT, pid, 0 if ev or sig == signal.SIGTRAP else sig)
    if not os.WIFSTOPPED(status):
        sys.exit(f"timeit rss: tracee did not stop at exec (status {status:#x})")
    ptrace(PTRACE_SETOPTIONS, root, opts | O_EXITKILL)
    ptrace(PTRACE_CONT, root)
    procs = {}   # tgid -> record
    live = {root, *seized}   # traced processes other than the attached ones
    rc = None
    while rc is None or live:
        if rc is not None:
            for pid in [p for p in live if proc_name(p) == "dolsot-spare"]:
                let_go(pid)
                live.discard(pid)
            if not live:
                break
        try:
            pid, status = os.waitpid(-1, WALL)
        except ChildProcessError:
            break
        if os.WIFEXITED(status) or os.WIFSIGNALED(status):
            if pid == root:
                rc = os.waitstatus_to_exitcode(status)
            live.discard(pid)
            continue
        if not os.WIFSTOPPED(status):
            continue
        if pid not in attached:
            live.add(pid)
        sig, ev = os.WSTOPSIG(status), status >> 16
        if ev == EV_EXIT:
            st = proc_status(pid)
            tgid = int(st.get("Tgid", pid))
            rec = procs.setdefault(tgid, {"pid": tgid})
            if st.get("VmHWM"):
                rec["VmHWM_kB"] = max(rec.get("VmHWM_kB", 0), kb(st["VmHWM"]))
                rec["VmRSS_kB_at_exit"] = kb(st.get("VmRSS"))
                rec["ppid"] = int(st.get("PPid", 0))
                rec["name"] = st.get("Name", "")
                rec["cmdline"] = st.get("cmdline", "")[:120]
            ptrace(PTRACE_CONT, pid)
            if pid != root:
                live.discard(pid)
        elif ev:
            ptrace(PTRACE_CONT, pid)
        elif sig in (signal.SIGSTOP, signal.SIGTRAP):
            ptrace(PTRACE_CONT, pid)   # the stop of a newly traced child
        else:
            ptrace(PTRACE_CONT, pid, sig)
    for z in attached:   # stop the attached process, then let it go
        let_go(z)
    outf.seek(0)
    stdout = outf.read().decode("utf-8", "replace")
    errf.seek(0)
    stderr = errf.read().decode("utf-8", "replace")
    # Role of each process: root, its depth below the root, or a worker
    # forked by an attached process.
    depth = {root: 0}
    changed = True
    while changed:
        changed = False
        for t, rec in procs.items():
            if t not in depth and rec.get("ppid") in depth:
                depth[t] = depth[rec["ppid"]] + 1
                changed = True
    for t, rec in procs.items():
        d = depth.get(t)
        if d is None and rec.get("ppid") in attached:
            rec["role"] = "worker (forked by zygote)"
            depth[t] = 1
        else:
            rec["role"] = {0: "parent", 1: "child"}.get(d, f"depth {d}" if d else "other")
    result = {"label": a.label, "argv": argv, "rc": rc, "stdout": stdout[-2000:],
              "stderr": stderr[-2000:], "attached": attached,
              "processes": sorted(procs.values(), key=lambda r: (depth.get(r["pid"], 99), r["pid"]))}
    with open(a.out, "a") as f:
        f.write(json.dumps(result) + "\n")
    for rec in result["processes"]:
        print(f"{a.label}\t{rec['role']}\t{rec.get('name', '?')}\tVmHWM={rec.get('VmHWM_kB', 0)} kB")
    if rc != 0:
        print(f"{a.label}\tWARNING: exit status {rc}: {stderr[-400:]!r}")


def cmd_rss_table(a):
    rows = [json.loads(line) for line in open(a.json) if line.strip()]
    print("| run | process | role | peak RSS (VmHWM) MB |")
    print("|---|---|---|---:|")
    for r in rows:
        for p in r["processes"]:
            cmd = p.get("cmdline", "")
            short = os.path.basename(cmd.split()[0]) if cmd else p.get("name", "?")
            print(f"| {r['label']} | {short} (pid {p['pid']}) | {p['role']} "
                  f"| {p.get('VmHWM_kB', 0) / 1024:.1f} |")


def smaps_rollup(pid):
    out = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                k, _, v = line.partition(":")
                if v.strip().endswith("kB"):
                    out[k.strip()] = int(v.split()[0])
    except OSError:
        return None
    return out


def spares(zygote):
    """The zygote's spares: its children named dolsot-spare (the worker it
    forked ahead of the next call)."""
    try:
        with open(f"/proc/{zygote}/task/{zygote}/children") as f:
            kids = [int(x) for x in f.read().split()]
    except OSError:
        return []
    return [k for k in kids if proc_name(k) == "dolsot-spare"]


def cmd_smaps(a):
    """Memory at rest of the server and each zygote named in --server-status."""
    text = open(a.status).read()
    procs = []   # (role, pid, status line, environment lines)
    for line in text.splitlines():
        m = re.match(r"^pid (\d+)$", line)
        if m:
            procs.append(["server", int(m.group(1)), "", []])
            continue
        m = re.match(r"^memory (.*)$", line)
        if m and procs and procs[-1][0] == "server":
            procs[-1][2] = m.group(1)
            continue
        m = re.match(r"^zygote (\d+) (.*)$", line)
        if m:
            procs.append(["zygote", int(m.group(1)), m.group(2), []])
            continue
        if line.startswith("  ") and procs and procs[-1][0] == "zygote":
            k, _, v = line.strip().partition(" ")
            if k in ("pythonpath", "toolboxes"):
                procs[-1][3].append(f"{k} {v}")
    if not procs:
        print(f"{a.label}: no server in the status output")
        return
    # Each zygote's spare (the worker it forked ahead of the next call) is
    # not in --server-status: it is the zygote's child named dolsot-spare.
    for role, pid, st, env in list(procs):
        if role == "zygote":
            for kid in spares(pid):
                procs.append(["spare", kid, f"spare of zygote {pid}", env])
    print(f"| {a.label} process | pid | threads | RSS kB | PSS kB | private kB "
          f"(clean+dirty) | shared kB | anon kB | swap kB | --server-status says |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    tot = {"Rss": 0, "Pss": 0, "priv": 0}
    for role, pid, st, env in procs:
        r = smaps_rollup(pid)
        name = role + (f" ({'; '.join(env)})" if env else "")
        if r is None:
            print(f"| {name} | {pid} | | gone | | | | | | {st} |")
            continue
        priv = r.get("Private_Clean", 0) + r.get("Private_Dirty", 0)
        shared = r.get("Shared_Clean", 0) + r.get("Shared_Dirty", 0)
        threads = proc_status(pid).get("Threads", "?")
        for k, v in (("Rss", r.get("Rss", 0)), ("Pss", r.get("Pss", 0)), ("priv", priv)):
            tot[k] += v
        print(f"| {name} | {pid} | {threads} | {r.get('Rss', 0)} | {r.get('Pss', 0)} | {priv} "
              f"| {shared} | {r.get('Anonymous', 0)} | {r.get('Swap', 0)} | {st} |")
    print(f"| total | | | {tot['Rss']} | {tot['Pss']} | {tot['priv']} | | | | |")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="mode", required=True)
    t = sub.add_parser("time")
    t.add_argument("--scenario", required=True)
    t.add_argument("--rounds", type=int, default=30)
    t.add_argument("--warmup", type=int, default=2)
    t.add_argument("--raw", required=True)
    t.add_argument("--sys", nargs=2, action="append", required=True, metavar=("NAME", "CMD"))
    t.add_argument("--expect", nargs=2, action="append", metavar=("NAME", "TEXT"))
    t.add_argument("--server-pid", nargs=2, action="append", metavar=("NAME", "PID"),
                   help="also count the CPU of this process tree for NAME")
    t.add_argument("--fanout", nargs=2, action="append", metavar=("NAME", "N"))
    t.add_argument("--pre", nargs=2, action="append", metavar=("NAME", "CMD"))
    t.add_argument("--post", nargs=2, action="append", metavar=("NAME", "CMD"))
    t.add_argument("--free", nargs=2, action="append", metavar=("NAME", "PATH"))
    s = sub.add_parser("summary")
    s.add_argument("--raw", required=True)
    s.add_argument("--base", default="dolsot")
    s.add_argument("--target", action="append")
    s.add_argument("--throughput", nargs=2, action="append", metavar=("SCENARIO", "CALLS"))
    sm = sub.add_parser("smaps")
    sm.add_argument("--status", required=True, help="output of dolsot --server-status")
    sm.add_argument("--label", default="")
    r = sub.add_parser("rss")
    r.add_argument("--out", required=True)
    r.add_argument("--label", required=True)
    r.add_argument("--attach", action="append", metavar="PID",
                   help="also trace the processes PID forks (seized for the call)")
    r.add_argument("command", nargs=argparse.REMAINDER)
    rt = sub.add_parser("rss-table")
    rt.add_argument("--json", required=True)
    a = p.parse_args()
    if a.mode == "rss":
        if a.command[:1] == ["--"]:
            a.command = a.command[1:]
        if not a.command:
            p.error("rss: no command")
    {"time": cmd_time, "summary": cmd_summary, "rss": cmd_rss,
     "rss-table": cmd_rss_table, "smaps": cmd_smaps}[a.mode](a)


if __name__ == "__main__":
    main()
