"""What one call writes to the store and its peak memory, by session size
(issue 36): bytes the call's processes sent to the file system, from
wait4's ru_oublock (512-byte blocks, counted as pages are dirtied), and
the peak RSS of the largest of them (ru_maxrss), on the cold path, where
every process of the call (client and worker) is a child of this one.

    /usr/bin/python3.11 bench/units_cost.py [ROUNDS]

DOLSOT_BIN (default ./dolsot) and, when set, DOLSOT_BIN_B, each with its
own fresh store.  Scenarios: S1 `x + 1` on x = 1; S3 `len(blob) +
len(nums)` on 50 MB of bytes and 200k ints; S7 `n += 1`, `float(a[:1000]
.sum())` and `a[0] += 1` on a 1 GiB float64 array of random values (no two parts
alike) and a counter
(DOLSOT_MAX_SESSION_SIZE=4G); --fork of the S7 session.  Prints the
median of each measure per scenario and binary, and the load average.
"""

import os
import shutil
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SETUPS = {
    "S1": "x = 1",
    "S3": "import os\nblob = os.urandom(50_000_000)\nnums = list(range(200_000))",
    "S7": "import numpy as np\na = np.random.default_rng(0).random(1 << 27)\nn = 0",
}
CELLS = [("S1", "x + 1"), ("S3", "len(blob) + len(nums)"), ("S7 n += 1", "n += 1"),
         ("S7 sum", "float(a[:1000].sum())"), ("S7 a[0] += 1", "a[0] += 1")]


def call(binary, store, argv):
    """(wall seconds, bytes written, peak RSS kB) of one cold call."""
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root"),
           "DOLSOT_CACHE_DIR": store, "DOLSOT_SERVER": "off",
           "DOLSOT_MAX_SESSION_SIZE": "4G", "DOLSOT_TYPECHECK": "0"}
    devnull = os.open(os.devnull, os.O_WRONLY)
    t0 = time.monotonic()
    pid = os.posix_spawn(binary, [binary] + argv, env,
                         file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1),
                                       (os.POSIX_SPAWN_DUP2, devnull, 2)])
    _, status, ru = os.wait4(pid, 0)
    wall = time.monotonic() - t0
    os.close(devnull)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{binary} {argv}: exit {os.waitstatus_to_exitcode(status)}")
    return wall, ru.ru_oublock * 512, ru.ru_maxrss


def session_of(label):
    return label.split()[0].lower()


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    bins = [("A", os.environ.get("DOLSOT_BIN") or os.path.join(ROOT, "dolsot"))]
    if os.environ.get("DOLSOT_BIN_B"):
        bins.append(("B", os.environ["DOLSOT_BIN_B"]))
    work = tempfile.mkdtemp(prefix="dolsot-units.")
    stores = {name: os.path.join(work, name) for name, _ in bins}
    print(f"# units_cost {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, "
          f"load {os.getloadavg()[0]:.2f}, rounds {rounds}")
    for name, binary in bins:
        print(f"{name}: {binary}")
    try:
        for name, binary in bins:
            for sess, code in SETUPS.items():
                call(binary, stores[name], ["--session", sess.lower(), code])
        rows = {}
        for label, cell in CELLS:
            for _ in range(rounds):
                for name, binary in bins:
                    rows.setdefault((label, name), []).append(
                        call(binary, stores[name], ["--session", session_of(label), cell]))
        for r in range(rounds):
            for name, binary in bins:
                rows.setdefault(("S7 --fork", name), []).append(
                    call(binary, stores[name], ["--session", f"f{r}", "--fork", "s7", "n"]))
        print("\n| scenario | binary | median ms | written (median) | peak RSS MiB |")
        print("|---|---|---:|---:|---:|")
        for (label, name), xs in rows.items():
            wall = statistics.median(x[0] for x in xs) * 1e3
            wrote = statistics.median(x[1] for x in xs)
            rss = statistics.median(x[2] for x in xs) / 1024
            print(f"| {label} | {name} | {wall:.1f} | {wrote / 1024:.1f} KiB | {rss:.1f} |")
        print(f"\nload average at end {os.getloadavg()[0]:.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
