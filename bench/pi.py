"""A python call through pi against the same cell through a bare dolsot
call (issue 42): the median overhead per call.

    /usr/bin/python3.11 bench/pi.py [ROUNDS]        # default 30

One pi (tools/node's, tools/npm-deps.sh installs it) runs in --mode rpc
with integrations/pi loaded, against tests/pi's scripted model on
127.0.0.1; each round sends one prompt, the model calls python once with
the cell, then says done.  Timed per round, interleaved with a bare call:

  bare     `dolsot --json-stream --namespace pi --session bare` with the
           cell on stdin, as a subprocess (what the extension spawns),
           wall time
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
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "pi"))
from pi_rpc import PiRpc  # noqa: E402
from scripted_model import ScriptedModel  # noqa: E402

PI = os.path.join(ROOT, "tools", "node", "node_modules", "@mariozechner", "pi-coding-agent",
                  "dist", "cli.js")
NODE = shutil.which("node") or "/usr/bin/node"
BIN = os.path.abspath(os.environ.get("DOLSOT_BIN", os.path.join(ROOT, "dolsot")))
CELL = os.environ.get("BENCH_CELL", "x = x + 1 if 'x' in dir() else 0\nx")
WARMUP = int(os.environ.get("BENCH_WARMUP", "3"))
EVENT_SECONDS = 120


def bare(env):
    t = time.perf_counter()
    r = subprocess.run([BIN, "--json-stream", "--namespace", "pi", "--session", "bare"],
                       input=CELL.encode(), env=env, capture_output=True)
    took = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit(f"bench/pi.py: dolsot failed: {r.stderr.decode()[-500:]}")
    return took


def through_pi(pi, model):
    """The seconds of the tool's execution and of the whole round."""
    model.replay({"tool": "python", "arguments": {"code": CELL, "session": "through-pi"}})
    start = len(pi.events)
    sent = time.perf_counter()
    pi.send({"type": "prompt", "message": "go"})

    def at(kind):
        return pi.wait(lambda e: e.get("type") == kind, EVENT_SECONDS, start)

    began, ended, done = at("tool_execution_start"), at("tool_execution_end"), at("agent_end")
    if pi.events[ended]["isError"]:
        sys.exit(f"bench/pi.py: the python call failed: {json.dumps(pi.events[ended])[:500]}")
    return pi.times[ended] - pi.times[began], pi.times[done] - sent


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
        pi = PiRpc([NODE, PI, "--mode", "rpc", "--provider", "scripted", "--model", "scripted",
                    "--no-extensions", "-e", os.path.join(ROOT, "integrations", "pi"),
                    "--no-session", "--no-context-files"], project, env, subprocess.DEVNULL)
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
