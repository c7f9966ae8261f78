"""The stores side by side on the warm path (issue 13).

Each round runs, in a shuffled order, the same call through each store:

  file   the FileStore (the default), in a temp dir
  redis  a redis-server this script starts on 127.0.0.1 (no persistence)
  cmd    examples/dolsot-store-dir, a sh helper over a temp dir

S1 is `x + 1` on a session holding x = 1.  big is `n = len(b)` on a session
holding b = os.urandom(50 MiB): the call loads the 50 MiB session and saves
it again.  Prints medians, quartiles and per-round ratios against file,
each store's stored size of the S1 session (its signature included), and
how many calls each warm server ran warm (every timed call should be).

usage: /usr/bin/python3.11 bench/stores.py [S1_ROUNDS [BIG_ROUNDS]]
(DOLSOT_BIN: the binary to time, e.g. a copy, so that a rebuild during the
run cannot replace it; default ./dolsot)
"""

import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("DOLSOT_BIN") or os.path.join(ROOT, "dolsot")
HELPER = os.path.join(ROOT, "examples", "dolsot-store-dir")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def q(xs):
    xs = sorted(xs)
    return statistics.median(xs), xs[len(xs) // 4], xs[(3 * len(xs)) // 4]


def main():
    s1_rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    big_rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    tmp = tempfile.mkdtemp(prefix="dolsot-bench-stores-")
    port = free_port()
    redis = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                              "--dir", tmp, "--save", "", "--appendonly", "no",
                              "--logfile", "redis.log"])
    stores = {
        "file": "file",
        "redis": "redis://127.0.0.1:%d" % port,
        "cmd": "cmd:%s %s" % (HELPER, os.path.join(tmp, "helper")),
    }
    envs = {}
    for name, spec in stores.items():
        env = dict(os.environ, DOLSOT_CACHE_DIR=os.path.join(tmp, name), DOLSOT_SERVER="auto",
                   DOLSOT_TYPECHECK="0", DOLSOT_STORE=spec, DOLSOT_TIMEOUT="300")
        envs[name] = env
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), 1).close()
                break
            except OSError:
                time.sleep(0.05)

        def call(name, session, code):
            t0 = time.perf_counter()
            subprocess.run([BIN, "--session", session, code], env=envs[name],
                           capture_output=True, check=True)
            return (time.perf_counter() - t0) * 1e3

        for name in stores:
            subprocess.run([BIN, "--server-start"], env=envs[name], capture_output=True,
                           check=True)
            call(name, "s1", "x = 1")
            call(name, "big", "import os\nb = os.urandom(50 * 2**20)")
        for part, session, code, rounds in (("S1", "s1", "x + 1", s1_rounds),
                                             ("big", "big", "n = len(b)", big_rounds)):
            times = {k: [] for k in stores}
            for _ in range(3):
                for name in stores:
                    call(name, session, code)
            for _ in range(rounds):
                order = list(stores)
                random.shuffle(order)
                for name in order:
                    times[name].append(call(name, session, code))
            print("%s, %d rounds (ms): median (IQR); per-round ratio to file, median (IQR)"
                  % (part, rounds))
            for name in stores:
                m, lo, hi = q(times[name])
                r = [a / b for a, b in zip(times[name], times["file"])]
                rm, rlo, rhi = q(r)
                print("  %-5s %8.2f (%.2f .. %.2f)   %.3f (%.3f .. %.3f)"
                      % (name, m, lo, hi, rm, rlo, rhi))
        for name in stores:
            listed = subprocess.run([BIN, "--list-sessions"], env=envs[name],
                                    capture_output=True, text=True, check=True).stdout
            size = [ln.split("\t")[1] for ln in listed.splitlines() if ln.startswith("s1\t")]
            status = subprocess.run([BIN, "--server-status"], env=envs[name],
                                    capture_output=True, text=True, check=False).stdout
            calls = [ln for ln in status.splitlines() if ln.startswith("calls ")]
            print("  %-5s S1 session %s bytes stored; server: %s"
                  % (name, size[0] if size else "?", calls[0] if calls else "?"))
    finally:
        for name in stores:
            try:
                subprocess.run([BIN, "--server-stop"], env=envs[name], capture_output=True,
                               timeout=60)
            except (OSError, subprocess.SubprocessError) as e:
                print("server-stop %s: %s" % (name, e), file=sys.stderr)
        redis.terminate()
        redis.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
