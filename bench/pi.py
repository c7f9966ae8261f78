"""A python call through pi against the same cell through a bare dolsot
call (issue 42): the median overhead per call.

    /usr/bin/python3.11 bench/pi.py [ROUNDS]        # default 30

One pi (tools/node's, tools/npm-deps.sh installs it) runs in --mode rpc
with integrations/pi loaded, against tests/pi's scripted model on
127.0.0.1; each round sends one prompt, the model calls python once with
the cell, then says done.  Timed per round, interleaved with a bare call:

  bare     `dolsot --json --session bare` with the cell on stdin, as a
           subprocess (what the extension spawns), wall time
  tool     pi's tool_execution_start to tool_execution_end of the python
           call (the extension's spawn, dolsot, parsing and bounding)
  round    the prompt sent to pi's agent_end: the tool plus pi's two model
           round trips to the scripted server and its own bookkeeping

and the overhead is tool - bare, round by round.  Both use the warm path
(DOLSOT_SERVER=auto) of one store, warmed up first (BENCH_WARMUP rounds,
default 3, not recorded); the cell is `x = x + 1 if 'x' in dir() else 0;
x` by default (BENCH_CELL sets another).  DOLSOT_BIN (default ./dolsot).
Run it on a quiet machine; it prints medians, quartiles and min/max in
milliseconds.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "pi"))
from scripted_model import ScriptedModel  # noqa: E402

PI = os.path.join(ROOT, "tools", "node", "node_modules", "@mariozechner", "pi-coding-agent",
                  "dist", "cli.js")
NODE = shutil.which("node") or "/usr/bin/node"
BIN = os.path.abspath(os.environ.get("DOLSOT_BIN", os.path.join(ROOT, "dolsot")))
CELL = os.environ.get("BENCH_CELL", "x = x + 1 if 'x' in dir() else 0\nx")
WARMUP = int(os.environ.get("BENCH_WARMUP", "3"))
EVENT_SECONDS = 120


class Pi:
    """pi --mode rpc; events read by a thread, split on LF only."""

    def __init__(self, argv, cwd, env):
        self.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.events = []
        self.cond = threading.Condition()
        self.reader = threading.Thread(target=self.read, daemon=True)
        self.reader.start()

    def read(self):
        buf = b""
        while chunk := self.proc.stdout.read1(65536):
            buf += chunk
            *lines, buf = buf.split(b"\n")
            with self.cond:
                for line in lines:
                    if line.strip():
                        self.events.append((time.perf_counter(), json.loads(line)))
                self.cond.notify_all()

    def send(self, command):
        self.proc.stdin.write(json.dumps(command).encode() + b"\n")
        self.proc.stdin.flush()

    def wait(self, kind, start):
        end = time.monotonic() + EVENT_SECONDS
        with self.cond:
            while True:
                for at, e in self.events[start:]:
                    if e.get("type") == kind:
                        return at, e
                if time.monotonic() > end:
                    sys.exit(f"bench/pi.py: no {kind} from pi")
                self.cond.wait(1)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        self.reader.join()


def bare(env):
    t = time.perf_counter()
    r = subprocess.run([BIN, "--json", "--session", "bare"], input=CELL.encode(), env=env,
                       capture_output=True)
    took = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit(f"bench/pi.py: dolsot failed: {r.stderr.decode()[-500:]}")
    return took


def through_pi(pi, model):
    model.replay({"tool": "python", "arguments": {"code": CELL, "session": "through-pi"}})
    start = len(pi.events)
    sent = time.perf_counter()
    pi.send({"type": "prompt", "message": "go"})
    began, _ = pi.wait("tool_execution_start", start)
    ended, e = pi.wait("tool_execution_end", start)
    if e["isError"]:
        sys.exit(f"bench/pi.py: the python call failed: {json.dumps(e)[:500]}")
    done, _ = pi.wait("agent_end", start)
    return ended - began, done - sent


def show(name, seconds):
    ms = sorted(1000 * s for s in seconds)
    q = statistics.quantiles(ms, n=4)
    print(f"{name:<10} median {statistics.median(ms):8.2f}  quartiles {q[0]:8.2f} {q[2]:8.2f}"
          f"  min {ms[0]:8.2f}  max {ms[-1]:8.2f}  (ms, {len(ms)} rounds)")


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    if not os.path.exists(PI):
        sys.exit("bench/pi.py: no pi in tools/node (sh tools/npm-deps.sh)")
    work = tempfile.mkdtemp(prefix="dolsot-bench-pi-")
    agent, project = os.path.join(work, "agent"), os.path.join(work, "project")
    os.makedirs(agent)
    os.makedirs(project)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DOLSOT_", "PI_"))}
    env.update(HOME=work, TMPDIR=work, PI_CODING_AGENT_DIR=agent, PI_OFFLINE="1",
               PI_SKIP_VERSION_CHECK="1", PI_TELEMETRY="0",
               DOLSOT_CACHE_DIR=os.path.join(work, "store"), DOLSOT_SERVER="auto")
    with ScriptedModel() as model:
        with open(os.path.join(agent, "models.json"), "w") as f:
            json.dump({"providers": {"scripted": {
                "baseUrl": model.base_url, "api": "openai-completions", "apiKey": "none",
                "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
                "models": [{"id": "scripted", "reasoning": False, "input": ["text"]}]}}}, f)
        with open(os.path.join(agent, "settings.json"), "w") as f:
            json.dump({"dolsot": {"binary": BIN}}, f)
        pi = Pi([NODE, PI, "--mode", "rpc", "--provider", "scripted", "--model", "scripted",
                 "--no-extensions", "-e", os.path.join(ROOT, "integrations", "pi"),
                 "--no-session", "--no-context-files"], project, env)
        try:
            bares, tools, whole = [], [], []
            for i in range(WARMUP + rounds):
                b = bare(env)
                t, w = through_pi(pi, model)
                if i >= WARMUP:
                    bares.append(b)
                    tools.append(t)
                    whole.append(w)
        finally:
            pi.close()
            subprocess.run([BIN, "--server-stop"], env=env, capture_output=True)
            shutil.rmtree(work, True)
    print(f"cell: {CELL!r}; dolsot {BIN}; pi {PI}")
    show("bare", bares)
    show("tool", tools)
    show("round", whole)
    show("overhead", [t - b for t, b in zip(tools, bares)])


if __name__ == "__main__":
    main()
