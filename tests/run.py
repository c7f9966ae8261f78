"""Run test suites, several at once, and print a table of their times.

usage: tests/run.py [-j N] [--quick | --whole] JOB...

A JOB is a suite, tests/TIER/check_NAME (the program make built,
build/tests/TIER/check_NAME, or the path as given: from the root, or
absolute), tests/python (the
Python package's unittest suite) or tests/pi (pi with integrations/pi,
unittest too), optionally led by the way it runs:

  cold:JOB   with DOLSOT_SERVER=off
  warm:JOB   with DOLSOT_SERVER=auto, and for a Check suite DOLSOT_TEST_WARM=1
             (the warm server up before each case; tests/lib/cli_helpers.h)

and a Check suite optionally followed by @TCASE: only that TCase of it
(Check's CK_RUN_CASE), so that a long suite's TCases run side by side.
A job ending in !LOCK never runs beside another job with the same LOCK
(the jobs that run dolsot as the one test user, whose processes count
against each other's limits, say !user).

Every job gets the caller's environment besides.  Up to N jobs (-j, 1 by
default) run at once, started in the order given: put the longest first.
With one at a time each job's output goes straight through; with more, a
job's output (stdout and stderr) is kept apart and printed whole, in the
order given, as soon as it and the jobs before it are done.  At the end a
table gives each job's seconds, the slowest first, and the CPU seconds it
and the children it reaped used (not a warm server's, which no job reaps),
then the wall time and all that CPU; the exit status is 1 when a job failed, and the
failed jobs are named last.

--whole says the suites run as SUITE@TCASE jobs must run whole: a TCase
their source creates (tcase_create("NAME")) that no job runs fails the run
before any job starts (`make check` says it).

--quick runs, of each suite tests/quick.txt lists, only the cases it lists
there (DOLSOT_TEST_ONLY, tests/lib/ck_run.h); suites it does not list run
whole.  Run from anywhere: the jobs run in the repository's root.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = os.environ.get("PYTHON", "/usr/bin/python3.11")
QUICK_LIST = os.path.join(ROOT, "tests", "quick.txt")
# The suites that are Python unittest directories, not Check programs.
UNITTEST_DIRS = ("tests/python", "tests/pi")
MODES = {
    "": {},
    "cold": {"DOLSOT_SERVER": "off"},
    "warm": {"DOLSOT_SERVER": "auto", "DOLSOT_TEST_WARM": "1"},
}


def read_quick():
    """tests/quick.txt: suite -> the names of its quick cases."""
    quick, suite = {}, None
    with open(QUICK_LIST, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            if line.endswith(":"):
                suite = line[:-1].strip()
                quick.setdefault(suite, [])
            elif suite is None:
                sys.exit(f"{QUICK_LIST}: a case before any 'suite:' line: {line}")
            else:
                quick[suite].extend(line.split())
    return quick


class Job:
    def __init__(self, spec, quick):
        mode, _, name = spec.rpartition(":")
        if mode not in MODES:
            sys.exit(f"tests/run.py: unknown way '{mode}' in {spec}")
        name, _, self.lock = name.partition("!")
        name, _, tcase = name.partition("@")
        self.spec, self.name = spec, name
        self.env = dict(os.environ, **MODES[mode])
        if tcase:
            self.env["CK_RUN_CASE"] = tcase
        if name.rstrip("/") in UNITTEST_DIRS:
            self.env.pop("DOLSOT_TEST_WARM", None)
            self.argv = [PYTHON, "-m", "unittest", "discover", "-s", name.rstrip("/"),
                         "-t", name.rstrip("/")]
        else:
            built = os.path.join("build", name)
            path = built if os.access(os.path.join(ROOT, built), os.X_OK) else name
            self.argv = [os.path.join(".", path)]
        suite = name[:-len("-asan")] if name.endswith("-asan") else name
        if quick is not None and suite in quick:
            self.env["DOLSOT_TEST_ONLY"] = " ".join(quick[suite])
        self.proc = self.out = None
        self.start = self.seconds = self.cpu = 0.0
        self.code = None

    def launch(self, capture):
        if capture:
            self.out = tempfile.TemporaryFile(prefix="dolsot-run-")
        else:
            print(f"== {self.spec}", flush=True)
        self.start = time.monotonic()
        kw = {"stdout": self.out, "stderr": subprocess.STDOUT} if capture else {}
        try:
            self.proc = subprocess.Popen(self.argv, cwd=ROOT, env=self.env, **kw)
        except OSError as e:
            print(f"tests/run.py: cannot start {self.argv[0]}: {e.strerror}", flush=True)
            self.code, self.seconds = 127, 0.0

    def ended(self, status, usage):
        """The job's process ended with wait status status, having used
        usage (its own and its reaped children's CPU)."""
        self.code = os.waitstatus_to_exitcode(status)
        self.proc.returncode = self.code
        self.seconds = time.monotonic() - self.start
        self.cpu = usage.ru_utime + usage.ru_stime

    def report(self):
        """Print the job's output (when kept) and its closing line."""
        if self.out is not None:
            print(f"== {self.spec}", flush=True)
            self.out.seek(0)
            sys.stdout.buffer.write(self.out.read())
            sys.stdout.flush()
            self.out.close()
        if self.code != 0:
            print(f"FAILED: {self.spec} ({self.why()})")
        print(f"== {self.spec}: {self.seconds:.0f} s", flush=True)

    def why(self):
        return f"killed by signal {-self.code}" if self.code < 0 else f"exit {self.code}"


TCASE_CREATE = re.compile(r'tcase_create\("([^"]+)"\)')


def uncovered_tcases(jobs):
    """Lines naming each TCase of a split suite (one run as SUITE@TCASE
    jobs) that its source creates but no job runs: a TCase added to the
    suite and not to the Makefile's list would otherwise never run."""
    split = {}
    for j in jobs:
        if "CK_RUN_CASE" in j.env:
            split.setdefault(j.name, set()).add(j.env["CK_RUN_CASE"])
    missing = []
    for suite, covered in sorted(split.items()):
        source = os.path.relpath(os.path.join(ROOT, suite), ROOT)
        source = source[:-len("-asan")] if source.endswith("-asan") else source
        source = os.path.join(ROOT, source[len("build/"):] if source.startswith("build/") else source)
        try:
            with open(source + ".c", encoding="utf-8") as f:
                made = TCASE_CREATE.findall(f.read())
        except OSError as e:
            missing.append(f"tests/run.py: cannot read {source}.c: {e.strerror}")
            continue
        for tcase in made:
            if tcase not in covered:
                missing.append(f"tests/run.py: {suite} creates TCase '{tcase}', which no "
                               f"{suite}@TCASE job runs: add it to the Makefile's jobs")
    return missing


def next_job(waiting, running):
    """The first waiting job whose lock no running job holds, or None."""
    held = {j.lock for j in running if j.lock}
    return next((j for j in waiting if not j.lock or j.lock not in held), None)


def run(jobs, width):
    capture = width > 1
    waiting, running, shown = list(jobs), [], 0
    while waiting or running:
        while len(running) < width and (job := next_job(waiting, running)):
            waiting.remove(job)
            job.launch(capture)
            if job.code is None:
                running.append(job)
        if running:
            pid, status, usage = os.wait4(-1, 0)
            for job in running:
                if job.proc.pid == pid:
                    job.ended(status, usage)
            running = [j for j in running if j.code is None]
        while shown < len(jobs) and jobs[shown].code is not None and \
                jobs[shown] not in running:
            jobs[shown].report()
            shown += 1


def table(jobs, wall):
    width = max(len(j.spec) for j in jobs)
    print(f"\n{'suite':<{width}}  seconds      cpu")
    for j in sorted(jobs, key=lambda j: -j.seconds):
        mark = "" if j.code == 0 else f"  FAILED ({j.why()})"
        print(f"{j.spec:<{width}}  {j.seconds:7.1f}  {j.cpu:7.1f}{mark}")
    print(f"{'wall':<{width}}  {wall:7.1f}  {sum(j.cpu for j in jobs):7.1f}")
    failed = [j.spec for j in jobs if j.code != 0]
    if failed:
        print("FAILED: " + " ".join(failed))
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(prog="tests/run.py", description=__doc__.split("\n")[0])
    ap.add_argument("-j", type=int, default=1, metavar="N", help="jobs at once (1)")
    ap.add_argument("--quick", action="store_true", help="the cases tests/quick.txt lists")
    ap.add_argument("--whole", action="store_true",
                    help="every TCase of a suite split by TCase has a job")
    ap.add_argument("jobs", nargs="+", metavar="JOB")
    args = ap.parse_args()
    quick = read_quick() if args.quick else None
    jobs = [Job(spec, quick) for spec in args.jobs]
    missing = uncovered_tcases(jobs) if args.whole else []
    if missing:
        print("\n".join(missing), file=sys.stderr)
        return 1
    t0 = time.monotonic()
    run(jobs, max(1, args.j))
    return table(jobs, time.monotonic() - t0)


if __name__ == "__main__":
    sys.exit(main())
