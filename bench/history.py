"""What a session's history costs (issue 43), on the warm path, in one
interleaved run:

  S1 on / off   `x + 1` with the history kept (DOLSOT_HISTORY=50) and
                without (0): the paired ratio is what keeping costs a call
  undo S7       `--undo` of a session holding a 1 GiB float64 array and a
                counter (each undo goes back over the one before it)
  checkout S7   `--checkout` of that session's state before its last
  kept S3       the bytes a state of S3's `n += 1` (50 MB of bytes, 200k
                ints and a counter) keeps in the store: the new unit files
                and the head's growth, per call

    /usr/bin/python3.11 bench/history.py [ROUNDS]

DOLSOT_BIN (default ./dolsot).  Prints medians in ms, the paired ratios,
the load average before and after.
"""

import os
import shutil
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
S3_SETUP = "import os\nblob = os.urandom(50_000_000)\nnums = list(range(200_000))\nn = 0"
S7_SETUP = "import numpy as np\na = np.random.default_rng(0).random(1 << 27)\nn = 0"


def env_for(store, history):
    return {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root"),
            "DOLSOT_CACHE_DIR": store, "DOLSOT_SERVER": "auto",
            "DOLSOT_MAX_SESSION_SIZE": "4G", "DOLSOT_TYPECHECK": "0",
            "DOLSOT_HISTORY": str(history)}


def call(binary, env, argv):
    """Wall seconds of one call, which must exit 0."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    t0 = time.monotonic()
    pid = os.posix_spawn(binary, [binary] + argv, env,
                         file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1),
                                       (os.POSIX_SPAWN_DUP2, devnull, 2)])
    _, status, _ = os.wait4(pid, 0)
    wall = time.monotonic() - t0
    os.close(devnull)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{argv}: exit {os.waitstatus_to_exitcode(status)}")
    return wall


def files_of(store):
    """{path: size} of the store's unit files (stamps left out)."""
    out = {}
    for dirpath, _, names in os.walk(os.path.join(store, "objects")):
        for name in names:
            if len(name) == 62:
                path = os.path.join(dirpath, name)
                out[path] = os.stat(path).st_size
    return out


def kept_bytes(binary, store, rounds):
    """Median bytes a state of S3's `n += 1` adds to the store."""
    env = env_for(store, 50)
    call(binary, env, ["--session", "s3", S3_SETUP])
    call(binary, env, ["--session", "s3", "n += 1"])
    head = os.path.join(store, "s3.pkl")
    grown = []
    for _ in range(rounds):
        before, head_before = files_of(store), os.stat(head).st_size
        call(binary, env, ["--session", "s3", "n += 1"])
        after = files_of(store)
        new = sum(size for path, size in after.items() if path not in before)
        grown.append((new, os.stat(head).st_size - head_before, os.stat(head).st_size))
    return grown


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    binary = os.environ.get("DOLSOT_BIN") or os.path.join(ROOT, "dolsot")
    store = tempfile.mkdtemp(prefix="dolsot-hist-")
    os.chmod(store, 0o700)
    load0 = os.getloadavg()
    on, off = env_for(store, 50), env_for(store, 0)
    try:
        call(binary, on, ["--server-start"])
        call(binary, on, ["--session", "on", "x = 1"])
        call(binary, off, ["--session", "off", "x = 1"])
        call(binary, on, ["--session", "s7", S7_SETUP])
        call(binary, on, ["--session", "s7", "n += 1"])
        times = {k: [] for k in ("S1 on", "S1 off", "undo S7", "checkout S7")}
        for i in range(rounds + 2):
            # s7's states: 1 and 2, then each round's undo (3 + 2i) and its
            # checkout of the state before that undo (2 + 2i), within the depth
            t = {"S1 on": call(binary, on, ["--session", "on", "x + 1"]),
                 "S1 off": call(binary, off, ["--session", "off", "x + 1"]),
                 "undo S7": call(binary, on, ["--undo", "s7"]),
                 "checkout S7": call(binary, on, ["--checkout", f"s7@{2 + 2 * i}"])}
            if i >= 2:   # two warm-up rounds
                for k, v in t.items():
                    times[k].append(v)
        kept = kept_bytes(binary, store, max(5, rounds // 4))
        call(binary, on, ["--server-stop"])
    finally:
        shutil.rmtree(store, ignore_errors=True)
    med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    for k, v in med.items():
        print(f"{k:12s} median {v:8.2f} ms")
    pairs = lambda a, b: statistics.median(x / y for x, y in zip(times[a], times[b]))
    print(f"S1 on / S1 off (paired): {pairs('S1 on', 'S1 off'):.3f}")
    print(f"undo S7 / S1 on (paired): {pairs('undo S7', 'S1 on'):.3f}")
    print(f"checkout S7 / S1 on (paired): {pairs('checkout S7', 'S1 on'):.3f}")
    units = statistics.median(k[0] for k in kept)
    head_growth = statistics.median(k[1] for k in kept)
    head = statistics.median(k[2] for k in kept)
    print(f"kept per state of S3 n += 1: {units:.0f} bytes of new units "
          f"(the head is {head:.0f} bytes, grew {head_growth:+.0f})")
    print(f"load average before {load0[0]:.2f}, after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
