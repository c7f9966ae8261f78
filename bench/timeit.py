"""Timing helper for bench/run.sh.  Run it with /usr/bin/python3.11.

    timeit.py time --scenario S --rounds N --warmup W --raw FILE.csv \
        --sys NAME CMD [--sys NAME CMD ...] [--expect NAME TEXT ...] \
        [--server-pid NAME PID ...]
    timeit.py summary --raw FILE.csv --base dolsot [--target SPEC ...]
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
    env = {"PATH": CLEAN_PATH, "LANG": "C.UTF-8"}
    for key in ("HOME", "TMPDIR"):
        if key in os.environ:
            env[key] = os.environ[key]
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
    units = {n: parse_unit(c) for n, c in a.sys}
    expect = {n: t for n, t in (a.expect or [])}
    new = not os.path.exists(a.raw) or os.path.getsize(a.raw) == 0
    # stdout and stderr of a unit go to these files, read back after each run.
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    fd, efd = out.fileno(), err.fileno()
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
                wall, cpu, rc = run_unit(units[n], fd, efd)
                text = read_fd(fd).decode("utf-8", "replace").strip()
                ok = rc == 0 and (n not in expect or text == expect[n])
                if not ok:
                    etext = read_fd(efd).decode("utf-8", "replace").strip()
                    bad = (rc, text[:200], etext[-400:])
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
    if a.target:
        print("\n### Targets\n")
        print("| target | wall, ratio of medians | wall, paired | CPU, ratio of medians | verdict (wall medians) |")
        print("|---|---:|---:|---:|---|")
    for spec in a.target or []:
        # "S1 dolsot 2 py-S": S1 median of dolsot <= 2 x median of py-S
        sc, sy, factor, ref = spec.split()
        factor = float(factor)
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

    opts = O_TRACEFORK | O_TRACEVFORK | O_TRACECLONE | O_TRACEEXEC | O_TRACEEXIT
    # Long-lived processes that fork the call's worker (dolsot's zygotes):
    # seize them first, so the worker they fork is traced as well.
    attached = [int(x) for x in a.attach or []]
    for z in attached:
        ptrace(PTRACE_SEIZE, z, opts)
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
    live = {root}   # traced processes other than the attached ones
    rc = None
    while rc is None or live:
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
        ptrace(PTRACE_INTERRUPT, z)
        while True:
            try:
                pid, status = os.waitpid(z, WALL)
            except ChildProcessError:
                break
            if not os.WIFSTOPPED(status):
                break
            sig, ev = os.WSTOPSIG(status), status >> 16
            ptrace(PTRACE_DETACH, z, 0 if ev or sig == signal.SIGTRAP else sig)
            break
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
    s = sub.add_parser("summary")
    s.add_argument("--raw", required=True)
    s.add_argument("--base", default="dolsot")
    s.add_argument("--target", action="append")
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
     "rss-table": cmd_rss_table}[a.mode](a)


if __name__ == "__main__":
    main()
