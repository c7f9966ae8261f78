"""What the hints cost (issue 18): nothing on success, <= 5 ms on failure.

usage: /usr/bin/python3.11 bench/hints_cost.py [ROUNDS]   (from the repo root)

Each round makes one cold dolsot call (DOLSOT_SERVER=off: a fresh worker)
per kind of failure, with the crm toolbox of the tests.  The cell notes
whether the hints module was imported by then (it must not be: nothing has
failed yet), raises the failure for real, and times inside the worker what
worker.py does after a failed cell: importing the embedded hints module
and calling runtime_hints() on the exception.  Prints the median and the
90th percentile per kind in milliseconds, of wall time and of the worker
thread's CPU time (which a loaded machine's preemption does not inflate).
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

CASES = [
    ("import (NameError)", "", "json.dumps(1)"),
    ("alias (NameError)", "", "fetch_user(1)"),
    ("near miss (NameError)", "tickets = 1", "print(tikets)"),
    ("dropped (NameError)", "", "conn.execute('select 1')"),
    ("attribute (AttributeError)", "", "c = crm.fetch_user(1)\nc.emial"),
    ("key (KeyError, dict)", "", "row = {'id': 1, 'region': 'x'}\nrow['regin']"),
    ("key (KeyError, DataFrame)", "df = crm.tickets_frame()", "df['priorty']"),
    ("iloc (KeyError, df[0])", "df = crm.tickets_frame()", "df[0]"),
    ("not callable (TypeError)", "lookup = 5", "lookup('a')"),
    ("toolbox parameter (TypeError)", "",
     "crm.open_ticket(crm.fetch_user(1), 'x', priority='h')"),
    ("signature (TypeError)", "", "crm.fetch_user(1, 2)"),
]

# One failure per worker, as in a real call: the hints module and what it
# imports lazily are loaded by the failure that needs them.
CELL = r'''
import sys, time, _dolsot
before = "_dolsot_hints" in sys.modules
ns = {"crm": crm, "__name__": "__main__"}
exec(compile(%r, "<setup>", "exec"), ns)
code = %r
try:
    exec(compile(code, "<cell>", "exec"), ns)
except Exception as e:
    exc = e
memory = {"dropped": [("conn", "sqlite3.Connection", "TypeError: cannot pickle",
                        "conn = sqlite3.connect(':memory:')")], "failed": []}
t0, c0 = time.perf_counter(), time.thread_time()
hints = _dolsot.embedded("hints").runtime_hints(exc, code, ns, {"crm": crm}, memory)
c1, t1 = time.thread_time(), time.perf_counter()
print(repr((before, (t1 - t0) * 1000, (c1 - c0) * 1000, hints)))
'''


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    work = tempfile.mkdtemp(prefix="dolsot-bench-hints-")
    try:
        binary = os.path.join(work, "dolsot")
        shutil.copy(os.path.join(root, "dolsot"), binary)
        shutil.copy(os.path.join(root, "tests", "toolbox", "crm.py"), work)
        env = dict(os.environ, DOLSOT_SERVER="off", DOLSOT_TYPECHECK="0",
                   DOLSOT_CACHE_DIR=os.path.join(work, "store"))
        times, cpus, imported, shown = {}, {}, 0, {}
        for _ in range(rounds):
            for label, setup, code in CASES:
                r = subprocess.run([binary, "--toolbox", "crm:crm", "--session", "b",
                                    "--timeout", "60", CELL % (setup, code)], cwd=work,
                                   env=env, capture_output=True, text=True, check=True)
                before, ms, cpu, hints = eval(r.stdout.strip().splitlines()[-1])
                imported += before
                times.setdefault(label, []).append(ms)
                cpus.setdefault(label, []).append(cpu)
                shown[label] = hints
                subprocess.run([binary, "--reset", "b"], cwd=work, env=env, check=True,
                               capture_output=True)
        print(f"rounds {rounds}; hints imported before any failure: {imported} of "
              f"{rounds * len(CASES)} calls")
        print(f"{'failure':32} {'wall median':>11} {'p90':>6} {'CPU median':>10} {'p90':>6}"
              "  (ms)  hint")
        for label, ms in times.items():
            ms.sort()
            cpu = sorted(cpus[label])
            p90 = ms[min(len(ms) - 1, int(len(ms) * 0.9))]
            cpu90 = cpu[min(len(cpu) - 1, int(len(cpu) * 0.9))]
            hint = (shown[label] or ["(none)"])[0]
            print(f"{label:32} {statistics.median(ms):11.2f} {p90:6.2f} "
                  f"{statistics.median(cpu):10.2f} {cpu90:6.2f}        {hint[:60]}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
