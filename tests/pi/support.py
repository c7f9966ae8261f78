"""What the pi tests share: a world per test (a private directory with
pi's agent directory, a project with .pi/settings.json, a dolsot store and
a temporary directory), the scripted model, and pi run in --mode json or
--mode rpc with integrations/pi loaded.  Every process a test starts is
waited for, and its directory removed, when the test ends."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from pi_rpc import PiRpc
from scripted_model import ScriptedModel

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PI = os.path.join(ROOT, "tools", "node", "node_modules", "@mariozechner", "pi-coding-agent",
                  "dist", "cli.js")
NODE = shutil.which("node") or "/usr/bin/node"
BIN = os.path.abspath(os.environ.get("DOLSOT_BIN", os.path.join(ROOT, "dolsot")))
PACKAGE = os.path.join(ROOT, "integrations", "pi")
# A pi run is a node start, two model round trips and a dolsot call.
PI_SECONDS = 120


# pi's package.json: "engines": {"node": ">=20.6.0"} (Debian 12's nodejs is 18).
NODE_MIN = (20, 6)


def node_version():
    r = subprocess.run([NODE, "--version"], capture_output=True, text=True)
    return tuple(int(p) for p in r.stdout.strip().lstrip("v").split(".")[:2])


def missing():
    """Why these tests cannot run here, or None."""
    if not os.access(NODE, os.X_OK):
        return "node is missing"
    if node_version() < NODE_MIN:
        return f"pi needs node {NODE_MIN[0]}.{NODE_MIN[1]} or later, {NODE} is older"
    if not os.path.exists(PI):
        return "tools/node has no pi (tools/npm-deps.sh installs it)"
    if not os.access(BIN, os.X_OK):
        return f"no dolsot binary at {BIN}"
    return None


class PiCase(unittest.TestCase):
    """One world per test, and the scripted model."""

    def setUp(self):
        why = missing()
        if why:
            print(f"SKIP {self.id()}: {why}", file=sys.stderr)
            self.skipTest(why)
        self.dir = tempfile.mkdtemp(prefix="dolsot-pi-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.agent = self.path("agent")
        self.project = self.path("project")
        self.store = self.path("store")
        self.tmp = self.path("tmp")
        for d in (self.agent, self.project, os.path.join(self.project, ".pi"), self.tmp):
            os.makedirs(d)
        self.model = ScriptedModel().__enter__()
        self.addCleanup(self.model.__exit__)
        self.addCleanup(self.stop_server)
        self.write_json(os.path.join(self.agent, "models.json"), {"providers": {"scripted": {
            "baseUrl": self.model.base_url, "api": "openai-completions", "apiKey": "none",
            "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False,
                       "supportsStrictMode": False},
            "models": [{"id": "scripted", "reasoning": False, "input": ["text", "image"],
                        "contextWindow": 128000, "maxTokens": 4096}]}}})
        self.settings({"binary": BIN})

    def path(self, name):
        return os.path.join(self.dir, name)

    @staticmethod
    def write_json(path, obj):
        with open(path, "w", encoding="utf-8") as f:
            json.dump(obj, f)

    def settings(self, dolsot, project=None):
        """pi's global settings with this dolsot key; the project's too when given."""
        self.write_json(os.path.join(self.agent, "settings.json"), {"dolsot": dolsot})
        if project is not None:
            self.write_json(os.path.join(self.project, ".pi", "settings.json"),
                            {"dolsot": project})

    # Variables a test adds to pi's environment (and to its own dolsot calls').
    extra_env = {}

    def env(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DOLSOT_", "PI_"))}
        env.update(HOME=self.dir, TMPDIR=self.tmp, PI_CODING_AGENT_DIR=self.agent,
                   PI_OFFLINE="1", PI_SKIP_VERSION_CHECK="1", PI_TELEMETRY="0",
                   DOLSOT_CACHE_DIR=self.store,
                   DOLSOT_SERVER=os.environ.get("DOLSOT_SERVER", "auto"), **self.extra_env)
        return env

    def dolsot(self, *args, code=None):
        """dolsot run in this world, as a user's shell would; its stdout."""
        r = subprocess.run([BIN, *args], env=self.env(), capture_output=True,
                           input=(code or "").encode(), timeout=PI_SECONDS)
        self.assertIn(r.returncode, (0, 1), r.stderr.decode(errors="replace")[-2000:])
        return r.stdout.decode()

    def listed(self, namespace):
        """The ids --list-sessions gives in namespace."""
        out = self.dolsot("--json", "--namespace", namespace, "--list-sessions")
        return {s["id"] for s in json.loads(out)["sessions"]}

    # What pi loads: integrations/pi, or a test's other way in.
    package = PACKAGE

    def argv(self, mode, *extra):
        """pi's command line; with no package, only what pi's settings name."""
        load = ["--no-extensions", "-e", self.package] if self.package else []
        return [NODE, PI, "--mode", mode, "--provider", "scripted", "--model", "scripted",
                *load, "--no-context-files", "--session-dir", self.path("sessions"), *extra]

    def pi(self, prompt, *extra):
        """Run pi --mode json on prompt; its events."""
        r = subprocess.run(self.argv("json", *extra, prompt), cwd=self.project, env=self.env(),
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=PI_SECONDS)
        self.assertEqual(r.returncode, 0, r.stderr.decode(errors="replace")[-3000:])
        return [json.loads(line) for line in r.stdout.decode().splitlines() if line.startswith("{")]

    def stop_server(self):
        subprocess.run([BIN, "--server-stop"], env=self.env(), capture_output=True, timeout=60)

    @staticmethod
    def tool_ends(events):
        return [e for e in events if e.get("type") == "tool_execution_end"]

    def python(self, *cells, session=None, timeout=None, extra=()):
        """One pi run whose model calls python once per cell, then says done;
        the tool_execution_end events, in order."""
        for code in cells:
            args = {"code": code}
            if session is not None:
                args["session"] = session
            if timeout is not None:
                args["timeout"] = timeout
            self.model.replay({"tool": "python", "arguments": args})
        events = self.pi("go", *extra)
        ends = self.tool_ends(events)
        self.assertEqual(len(ends), len(cells), json.dumps(events)[-3000:])
        return ends

    @staticmethod
    def text(end):
        return "\n".join(c["text"] for c in end["result"]["content"] if c["type"] == "text")

    def last_tool_text(self):
        """What the model got back last, as the scripted model recorded it."""
        return self.model.tool_results(self.model.requests[-1])[-1][1]


class Rpc(PiRpc):
    """pi --mode rpc in a test's world, ended when the test ends."""

    def __init__(self, case, *extra):
        # One stderr file per pi the test starts.
        self.stderr = open(case.path(f"rpc-stderr-{len(os.listdir(case.dir))}"), "wb")
        super().__init__(case.argv("rpc", *extra), case.project, case.env(), self.stderr)
        case.addCleanup(self.close)

    def wait(self, pred, seconds=PI_SECONDS, start=0):
        """The first event from index start on that pred takes."""
        return self.events[super().wait(pred, seconds, start)]

    def close(self, seconds=30):
        super().close(seconds)
        self.stderr.close()
