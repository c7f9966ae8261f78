"""Where a warm S3 call spends its time, from the outside.  For bench/run.sh.

    s3phases.py CLIENT.strace ZYGOTE.strace [CLIENT2 ZYGOTE2 ...]
    s3phases.py --perf LABEL FILE.perf [--perf LABEL FILE.perf ...]

Strace mode: each pair is one traced call, `strace -f -tt -T` of the
dolsot client and, at the same time, of the zygote (`-p ZYGOTE`, which
follows the worker it forks).  The cell writes "@cell" to stderr between
restoring the session and dumping it, which splits the worker's time into
unpickle and pickle.  The timeline of each process is cut at marker
syscalls (open of the session file, write of the request memfd, sendmsg,
the worker's mmap of the request, the "@cell" write, ...) into phases; for
each phase the wall time and the part spent inside syscalls is printed
(the rest is user CPU, page faults taken in user code, and waiting for a
CPU).  strace slows every syscall down (tens of microseconds each), so
phases with many small syscalls are inflated; the big ones are not.

Perf mode: `perf record -g -e cpu-clock` of the client and of the zygote
(following the worker); prints the inclusive share of CPU samples of a few
kernel and libc functions (page faults, memcpy, file/memfd writes, fsync,
munmap).  Shares overlap (memcpy includes the page faults it takes).
"""

import re
import statistics
import subprocess
import sys

LINE = re.compile(r"^(\d+)\s+(\d\d):(\d\d):(\d\d\.\d+) (.*)$")
DUR = re.compile(r"<(\d+\.\d+)>\s*$")
RESUMED = re.compile(r"^<\.\.\. (\w+) resumed>(.*)$")
CALL = re.compile(r"^(\w+)\((.*)$")
MB = 1 << 20


def parse(path):
    """-> {pid: [event]}; event = dict(t, dur, name, text, ret)."""
    procs, pending = {}, {}
    with open(path, errors="replace") as f:
        for line in f:
            m = LINE.match(line.rstrip("\n"))
            if not m:
                continue
            pid = int(m.group(1))
            t = int(m.group(2)) * 3600 + int(m.group(3)) * 60 + float(m.group(4))
            rest = m.group(5)
            ev_list = procs.setdefault(pid, [])
            if rest.startswith("+++ exited") or rest.startswith("+++ killed"):
                ev_list.append({"t": t, "dur": 0.0, "name": "+++exit", "text": rest, "ret": ""})
                continue
            if rest.startswith("---"):
                continue
            r = RESUMED.match(rest)
            if r:
                ev = pending.pop(pid, None)
                if ev is None:
                    continue
                ev["text"] += r.group(2)
            else:
                c = CALL.match(rest)
                if not c:
                    continue
                ev = {"t": t, "dur": 0.0, "name": c.group(1), "text": rest, "ret": ""}
                ev_list.append(ev)
                if rest.endswith("<unfinished ...>"):
                    pending[pid] = ev
                    continue
            d = DUR.search(ev["text"])
            if d:
                ev["dur"] = float(d.group(1))
            rm = re.search(r"\) = (-?\w+)", ev["text"])
            if rm:
                ev["ret"] = rm.group(1)
    return procs


def first(events, pred, start=0):
    for i in range(start, len(events)):
        if pred(events[i]):
            return i
    return None


def fd_of_open(ev):
    return int(ev["ret"]) if ev["ret"].isdigit() else None


def big(ev, n=MB):
    """A syscall that moved at least n bytes (return value)."""
    return ev["ret"].isdigit() and int(ev["ret"]) >= n


def phases(events, anchors):
    """anchors: [(label, index or None)] in order -> [(label, t0, t1, sys)]."""
    pts = [(lab, i) for lab, i in anchors if i is not None]
    out = []
    for k, (lab, i) in enumerate(pts):
        j = pts[k + 1][1] if k + 1 < len(pts) else len(events) - 1
        t0, t1 = events[i]["t"], events[j]["t"]
        sysd = sum(e["dur"] for e in events[i:j])
        out.append((lab, t0, t1, sysd))
    return out


def client_phases(ev):
    """The client opens the session's files and hands them to the worker;
    it never reads or writes the session itself."""
    pkl = first(ev, lambda e: e["name"] == "openat" and ".pkl\"" in e["text"]
                and "O_RDONLY" in e["text"] and "O_CREAT" not in e["text"])
    pfd = fd_of_open(ev[pkl]) if pkl is not None else None
    req = first(ev, lambda e: e["name"] == "memfd_create" and "request" in e["text"])
    rfd = fd_of_open(ev[req]) if req is not None else None
    wreq = first(ev, lambda e: e["name"] in ("write", "pwrite64")
                 and e["text"].startswith(f"{e['name']}({rfd},"), req or 0) if rfd is not None else None
    send = first(ev, lambda e: e["name"] == "sendmsg", wreq or 0)
    tmp = first(ev, lambda e: e["name"] == "openat" and ".tmp\"" in e["text"] and "O_CREAT" in e["text"])
    fs = first(ev, lambda e: e["name"] == "fsync", send or tmp or 0)
    ren = first(ev, lambda e: e["name"] in ("rename", "renameat", "renameat2"), fs or 0)
    dfs = first(ev, lambda e: e["name"] == "fsync", ren or 0) if ren is not None else None
    # Closing the old session's fd drops the last reference: ext4 frees it.
    old = first(ev, lambda e: e["name"] == "close" and e["text"].startswith(f"close({pfd})"),
                dfs or 0) if pfd is not None and dfs is not None else None
    after = old + 1 if old is not None and old + 1 < len(ev) else None
    return phases(ev, [
        ("client: exec, open store, lock", 0),
        ("client: open the session file and the temp file", pkl),
        ("client: write request memfd", wreq),
        ("client: hand-off, wait for worker (see worker rows)", send),
        ("client: fsync temp file", fs),
        ("client: rename", ren),
        ("client: fsync dir", dfs),
        ("client: close the old session (the kernel frees it)", old),
        ("client: print, exit", after),
    ])


def worker_phases(procs):
    """The worker: the process that wrote the @cell marker to stderr."""
    wpid = None
    for pid, ev in procs.items():
        if any(e["name"] == "write" and e["text"].startswith('write(2, "@cell') for e in ev):
            wpid = pid
            break
    if wpid is None:
        return None, []
    ev = procs[wpid]
    # the fork in the zygote, as the start
    fork_t = None
    for pid, zev in procs.items():
        for e in zev:
            if e["name"] in ("clone", "clone3", "fork", "vfork") and e["ret"] == str(wpid):
                fork_t = e["t"]
    mreq = first(ev, lambda e: e["name"] == "mmap" and "PROT_READ," in e["text"]
                 and "MAP_ANONYMOUS" not in e["text"] and big({"ret": e["text"].split(", ")[1]}))
    mark = first(ev, lambda e: e["name"] == "write" and e["text"].startswith('write(2, "@cell'))
    # The first write to the save fd after the cell: the session's header.
    wres = first(ev, lambda e: e["name"] in ("write", "pwrite64")
                 and not e["text"].startswith(("write(1,", "write(2,")), mark or 0)
    wfd = ev[wres]["text"].split("(")[1].split(",")[0] if wres is not None else None
    last = max((i for i, e in enumerate(ev) if e["name"] in ("write", "pwrite64")
                and e["text"].startswith(f"{e['name']}({wfd},")), default=None)
    after = last + 1 if last is not None and last + 1 < len(ev) else None
    ex = first(ev, lambda e: e["name"] == "exit_group")
    # A spare (forked before the call) starts when it receives the call.
    start, label = 0, "worker: start (after fork), reset signals, setup"
    if fork_t is None:
        got = first(ev, lambda e: e["name"] == "recvmsg")
        if got is not None and got + 1 < len(ev):
            start, label = got + 1, "worker (the zygote's spare): takes the call, setup"
    out = phases(ev, [
        (label, start),
        ("worker: restore = map + unpickle the session", mreq),
        ("worker: dump = pickle (into a list of parts)", mark),
        ("worker: write the session into the temp file", wres),
        ("worker: answer, cleanup", after),
        ("worker: exit (kernel frees its memory)", ex),
    ])
    if fork_t is not None and ev:
        out.insert(0, ("zygote: fork of the worker", fork_t, ev[0]["t"], 0.0))
    return wpid, out


def strace_mode(paths):
    runs = []
    for k in range(0, len(paths) - 1, 2):
        cprocs, zprocs = parse(paths[k]), parse(paths[k + 1])
        cpid = min(cprocs, key=lambda p: cprocs[p][0]["t"] if cprocs[p] else 1e18)
        cev = cprocs[cpid]
        t_start = cev[0]["t"]
        t_end = cev[-1]["t"]
        rows = {}
        for lab, t0, t1, sysd in client_phases(cev):
            rows[lab] = (t0 - t_start, t1 - t0, sysd)
        _, wrows = worker_phases(zprocs)
        for lab, t0, t1, sysd in wrows:
            rows[lab] = (t0 - t_start, t1 - t0, sysd)
        runs.append((t_end - t_start, rows))
    if not runs:
        print("no traces")
        return
    labels = []
    for _, rows in runs:
        for lab in sorted(rows, key=lambda lab: (rows[lab][0], not lab.startswith("zygote"))):
            if lab not in labels:
                labels.append(lab)
    labels.sort(key=lambda lab: statistics.median(
        [r[lab][0] for _, r in runs if lab in r]))
    n = len(runs)
    print(f"\n### S3 warm under strace: phases ({n} traced call(s); ms; median over calls)\n")
    print("Start offset from the client's exec. The client's \"wait\" phase overlaps the "
          "worker rows. \"in syscalls\" is the part of the phase spent inside system calls "
          "(strace -T); the rest is user CPU (memcpy, (un)pickling), page faults and waiting "
          "for a CPU.\n")
    print("| phase | starts at | wall | in syscalls | per call (wall) |")
    print("|---|---:|---:|---:|---|")
    for lab in labels:
        vals = [r[lab] for _, r in runs if lab in r]
        st = statistics.median(v[0] for v in vals) * 1e3
        wl = statistics.median(v[1] for v in vals) * 1e3
        sy = statistics.median(v[2] for v in vals) * 1e3
        per = " / ".join(f"{v[1] * 1e3:.1f}" for v in vals)
        print(f"| {lab} | {st:.1f} | {wl:.1f} | {sy:.1f} | {per} |")
    tot = [t for t, _ in runs]
    print(f"| **whole call under strace (client exec to exit)** | | "
          f"**{statistics.median(tot) * 1e3:.1f}** | | "
          f"{' / '.join(f'{t * 1e3:.1f}' for t in tot)} |")
    # Totals by kind of work, from the same phases.
    def pick(*keys):
        out = []
        for _, r in runs:
            out.append(sum(v[1] for lab, v in r.items() if any(k in lab for k in keys)))
        return statistics.median(out) * 1e3
    print("\nBy kind (medians, ms): open files and hand-off in the client "
          f"{pick('open the session', 'write request memfd'):.1f}; unpickle "
          f"{pick('unpickle'):.1f}; pickle {pick('dump = pickle'):.1f}; write the session "
          f"{pick('write the session'):.1f}; worker exit {pick('worker: exit'):.1f}; fsync "
          f"{pick('fsync temp', 'fsync dir'):.1f}; rename {pick('client: rename'):.1f}; freeing "
          f"the old session {pick('close the old'):.1f}.")


PERF_ROWS = [
    ("page faults (first touch of new memory)", ["asm_exc_page_fault"]),
    ("  of which zeroing pages (clear_page)", ["clear_page_erms", "clear_page_rep", "clear_page_orig"]),
    ("memcpy/memmove in user space (incl. its faults)", ["__memmove_avx512_unaligned_erms",
                                                        "__memmove_avx_unaligned_erms",
                                                        "__memcpy_avx_unaligned_erms",
                                                        "__memmove_evex_unaligned_erms"]),
    ("read() of files", ["ksys_read"]),
    ("write to the session file (ext4)", ["ext4_buffered_write_iter", "ext4_file_write_iter"]),
    ("write to a memfd (shmem)", ["shmem_file_write_iter"]),
    ("fsync", ["__x64_sys_fsync", "__x64_sys_fdatasync"]),
    ("rename", ["__x64_sys_renameat", "__x64_sys_renameat2", "__x64_sys_rename"]),
    ("munmap", ["__x64_sys_munmap"]),
    ("process exit (freeing memory)", ["do_exit", "mmput"]),
    ("fork", ["__x64_sys_clone", "__x64_sys_clone3", "ret_from_fork"]),
]


def perf_mode(items):
    print("\n### S3 warm under perf (cpu-clock samples, kernel call chains)\n")
    print("Inclusive share of each process's CPU samples; rows overlap. "
          "ms = share × samples ÷ sampling rate.\n")
    header = "| work | " + " | ".join(f"{lab} % | {lab} ms" for lab, _ in items) + " |"
    print(header)
    print("|---|" + "---:|---:|" * len(items))
    tables = []
    for lab, path in items:
        try:
            out = subprocess.run(["perf", "report", "-i", path, "--children", "--sort", "sym",
                                  "-g", "none", "--stdio"], capture_output=True, text=True,
                                 timeout=300).stdout
            hdr = subprocess.run(["perf", "report", "-i", path, "--stdio", "--sort", "comm",
                                  "-g", "none"], capture_output=True, text=True,
                                 timeout=300).stdout
        except (OSError, subprocess.TimeoutExpired) as e:
            print(f"perf report failed: {e}")
            return
        m = re.search(r"# Samples: (\d+)([KM]?)", hdr)
        samples = int(m.group(1)) * {"": 1, "K": 1000, "M": 10 ** 6}[m.group(2)] if m else 0
        freq = 4000
        fm = re.search(r"-F (\d+)", subprocess.run(["perf", "report", "-i", path, "--header-only"],
                                                     capture_output=True, text=True).stdout)
        if fm:
            freq = int(fm.group(1))
        incl = {}
        for line in out.splitlines():
            mm = re.match(r"^\s+(\d+\.\d+)%\s+(\d+\.\d+)%\s+\[[.k]\]\s+(\S+)", line)
            if mm:
                incl.setdefault(mm.group(3), float(mm.group(1)))
        dso = subprocess.run(["perf", "report", "-i", path, "--no-children", "--sort", "dso",
                              "-g", "none", "--stdio"], capture_output=True, text=True,
                             timeout=300).stdout
        for line in dso.splitlines():
            mm = re.match(r"^\s+(\d+\.\d+)%\s+(\S+)", line)
            if mm:
                incl["dso:" + mm.group(2)] = float(mm.group(1))
        tables.append((incl, samples, freq))
    for row, syms in PERF_ROWS:
        cells = []
        for incl, samples, freq in tables:
            pct = sum(incl.get(s, 0.0) for s in syms)
            cells.append(f"{pct:.1f} | {pct / 100 * samples / freq * 1e3:.0f}")
        print(f"| {row} | " + " | ".join(cells) + " |")
    for row, key in (("self time in the kernel", "dso:[kernel.kallsyms]"),
                     ("self time in libc (memcpy, malloc)", "dso:libc.so.6"),
                     ("self time in dolsot (embedded CPython: (un)pickling, ...)", "dso:dolsot")):
        cells = []
        for incl, samples, freq in tables:
            pct = incl.get(key, 0.0)
            cells.append(f"{pct:.1f} | {pct / 100 * samples / freq * 1e3:.0f}")
        print(f"| {row} | " + " | ".join(cells) + " |")
    cells = [f"100 | {samples / freq * 1e3:.0f}" for _, samples, freq in tables]
    print("| total CPU sampled | " + " | ".join(cells) + " |")


def main():
    args = sys.argv[1:]
    if args and args[0] == "--perf":
        items = []
        while args:
            if args[0] != "--perf" or len(args) < 3:
                sys.exit(__doc__)
            items.append((args[1], args[2]))
            args = args[3:]
        perf_mode(items)
    elif args and len(args) % 2 == 0:
        strace_mode(args)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
