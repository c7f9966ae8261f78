"""How long a session's zygote takes to get ready, and what it holds.

    /usr/bin/python3.11 bench/zygote_ready.py [ROUNDS]    # from the repository root

For each binary (DOLSOT_BIN, default ./dolsot, and DOLSOT_BIN_B when set),
interleaved per round, in a fresh store and directory: a session imports
numpy and pandas and builds a frame; once the environment's first zygote
is ready (--server-start), the next call asks for a zygote
holding them (step "pandas"); once that is ready, the session imports
fractions and the call after asks for one holding that too (step
"+fractions").  Timed: from the asking call's start until --server-status
shows the zygote ready (polled every 10 ms), and that zygote's private
and resident memory from the status.  A grown zygote imports only what its
parent lacks and shares the rest; a fresh one imports all of it.
"""
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

FIRST = ("import numpy as np, pandas as pd\n"
         "df = pd.DataFrame({'a': np.arange(1000), 'b': np.arange(1000) * 2})")


def run(binary, env, cwd, *args):
    return subprocess.run([binary, *args], env=env, cwd=cwd, capture_output=True,
                          text=True, check=False)


def ready_zygote(status, module, without=None):
    """(private kB, rss kB) of the ready zygote whose preload names module
    (and not without), or None."""
    for block in status.split("\nzygote ")[1:]:
        head = block.split("\n", 1)[0]
        pre = re.search(r"\n  preload ([^\n]*)", block)
        names = pre.group(1).split() if pre else []
        if " ready " in head and module in names and (without is None or without not in names):
            rss = int(re.search(r"(\d+) kB rss", head).group(1))
            priv = int(re.search(r"(\d+) kB private", head).group(1))
            return priv, rss
    return None


def wait_ready(binary, env, cwd, module, without=None, limit=60.0):
    start = time.monotonic()
    while time.monotonic() - start < limit:
        got = ready_zygote(run(binary, env, cwd, "--server-status").stdout, module, without)
        if got:
            return got
        time.sleep(0.01)
    sys.exit(f"zygote_ready.py: {binary}: no zygote with {module} within {limit} s")


def one_round(binary):
    work = tempfile.mkdtemp(prefix="dolsot-zr.")
    env = {"PATH": "/usr/bin:/bin", "HOME": work, "DOLSOT_CACHE_DIR": work + "/store",
           "MPLCONFIGDIR": work + "/mpl"}
    out = {}
    try:
        run(binary, env, work, "--session", "s", FIRST)
        run(binary, env, work, "--server-start")   # the environment's first zygote
        t = time.monotonic()
        run(binary, env, work, "--session", "s", "int(df.b.sum())")
        priv, rss = wait_ready(binary, env, work, "pandas", "fractions")
        out["pandas"] = ((time.monotonic() - t) * 1e3, priv, rss)
        run(binary, env, work, "--session", "s", "import fractions")
        t = time.monotonic()
        run(binary, env, work, "--session", "s", "fractions.Fraction(1, 3)")
        priv, rss = wait_ready(binary, env, work, "fractions")
        out["+fractions"] = ((time.monotonic() - t) * 1e3, priv, rss)
    finally:
        run(binary, env, work, "--server-stop")
        shutil.rmtree(work, ignore_errors=True)
    return out


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    binaries = [("A", os.path.abspath(os.environ.get("DOLSOT_BIN", "./dolsot")))]
    if os.environ.get("DOLSOT_BIN_B"):
        binaries.append(("B", os.path.abspath(os.environ["DOLSOT_BIN_B"])))
    print(f"# zygote_ready {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, "
          f"load {os.getloadavg()[0]:.2f}, {rounds} rounds")
    for name, binary in binaries:
        print(f"{name}: {binary}")
    results = {name: [] for name, _ in binaries}
    for _ in range(rounds):
        for name, binary in binaries:
            results[name].append(one_round(binary))
    print("| binary | step | ready after (ms), median | private kB, median | rss kB, median |")
    print("|---|---|---:|---:|---:|")
    for name, _ in binaries:
        for step in ("pandas", "+fractions"):
            rows = [r[step] for r in results[name]]
            print(f"| {name} | {step} | {statistics.median(r[0] for r in rows):.0f} | "
                  f"{statistics.median(r[1] for r in rows):.0f} | "
                  f"{statistics.median(r[2] for r in rows):.0f} |")
    print(f"# load at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
