"""Where a warm type checker would put the gate (issue 18, item 3).

usage: /usr/bin/python3.11 bench/typegate_warm.py [ROUNDS]   (from the repo root)

Checks the same gate-shaped file (the prelude gate.py writes, a toolbox
import, one wrong call) side by side, interleaved round by round:

  pyright cold   tools/node/.../pyright --outputjson FILE (what the gate runs)
  pyright warm   one pyright-langserver over stdio, kept running: the time
                 from textDocument/didChange to its publishDiagnostics
  mypy cold      mypy FILE with a warm cache (what the gate runs)
  mypy warm      one dmypy daemon, kept running: `dmypy check FILE` (the
                 client's own start is part of it)

and prints medians, 90th percentiles and the paired cold/warm ratios.  It
measures only: dolsot does not keep a checker warm yet.
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
PYRIGHT = os.path.join(ROOT, "tools/node/node_modules/.bin/pyright")
LANGSERVER = PYRIGHT + "-langserver"
MYPY_FLAGS = ["--show-column-numbers", "--show-error-codes", "--no-error-summary",
              "--follow-imports=error", "--ignore-missing-imports", "--allow-redefinition",
              "--no-strict-optional", "--allow-untyped-globals", "--python-version", "3.11"]
TOOLBOX = "def add(a: int, b: int) -> int:\n    return a + b\n"
PRELUDE = ("import builtins as _dolsot_b\nfrom typing import Any as _dolsot_Any\n"
           "def _dolsot_v() -> _dolsot_Any: return None\nimport mytools as mt\n"
           "x: _dolsot_b.int = _dolsot_v()\n")


def cell(i):
    return PRELUDE + f"y = mt.add(x, {i}, 3)\n"


class LangServer:
    def __init__(self, root, path):
        self.p = subprocess.Popen([LANGSERVER, "--stdio"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=root)
        self.uri = "file://" + path
        self.version = 1
        self.send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                   "params": {"processId": os.getpid(), "rootUri": "file://" + root,
                              "capabilities": {}}})
        while self.recv().get("id") != 1:
            pass
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        self.send({"jsonrpc": "2.0", "method": "textDocument/didOpen",
                   "params": {"textDocument": {"uri": self.uri, "languageId": "python",
                                               "version": 1, "text": cell(0)}}})
        self.wait(1)

    def send(self, msg):
        data = json.dumps(msg).encode()
        self.p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(data) + data)
        self.p.stdin.flush()

    def recv(self):
        n = 0
        while True:
            line = self.p.stdout.readline()
            if line in (b"\r\n", b""):
                break
            if line.lower().startswith(b"content-length:"):
                n = int(line.split(b":")[1])
        return json.loads(self.p.stdout.read(n))

    def wait(self, version):
        while True:
            m = self.recv()
            if m.get("method") == "workspace/configuration":
                self.send({"jsonrpc": "2.0", "id": m["id"],
                           "result": [{} for _ in m["params"]["items"]]})
            elif m.get("id") is not None and m.get("method"):
                self.send({"jsonrpc": "2.0", "id": m["id"], "result": None})
            elif (m.get("method") == "textDocument/publishDiagnostics"
                  and m["params"].get("version") == version):
                return m["params"]["diagnostics"]

    def check(self, text):
        self.version += 1
        self.send({"jsonrpc": "2.0", "method": "textDocument/didChange",
                   "params": {"textDocument": {"uri": self.uri, "version": self.version},
                              "contentChanges": [{"text": text}]}})
        return self.wait(self.version)

    def close(self):
        self.p.kill()
        self.p.wait()


def timed(fn):
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1000


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    work = tempfile.mkdtemp(prefix="dolsot-bench-tgwarm-")
    status = os.path.join(work, "dmypy.json")
    mypy = MYPY_FLAGS + ["--cache-dir", os.path.join(work, "cache")]
    ls = None
    try:
        with open(os.path.join(work, "mytools.py"), "w") as f:
            f.write(TOOLBOX)
        path = os.path.join(work, "cell.py")
        with open(path, "w") as f:
            f.write(cell(0))
        ls = LangServer(work, path)
        run = lambda argv: subprocess.run(argv, cwd=work, capture_output=True)  # noqa: E731
        run(["dmypy", "--status-file", status, "start", "--"] + mypy)
        run(["dmypy", "--status-file", status, "check", "cell.py", "mytools.py"])
        run(["mypy"] + mypy + ["cell.py"])
        t = {"pyright cold": [], "pyright warm": [], "mypy cold": [], "mypy warm": []}
        for i in range(1, rounds + 1):
            with open(path, "w") as f:
                f.write(cell(i))
            t["pyright cold"].append(timed(lambda: run([PYRIGHT, "--outputjson", "cell.py"])))
            t["pyright warm"].append(timed(lambda: ls.check(cell(i))))
            t["mypy cold"].append(timed(lambda: run(["mypy"] + mypy + ["cell.py"])))
            t["mypy warm"].append(timed(lambda: run(["dmypy", "--status-file", status,
                                                     "check", "cell.py", "mytools.py"])))
        print(f"rounds {rounds}")
        for name, v in t.items():
            s = sorted(v)
            print(f"{name:14} median {statistics.median(s):8.1f} ms  p90 "
                  f"{s[min(len(s) - 1, int(len(s) * 0.9))]:8.1f} ms")
        for k in ("pyright", "mypy"):
            ratios = [c / w for c, w in zip(t[k + " cold"], t[k + " warm"])]
            print(f"{k:14} cold/warm paired ratio median {statistics.median(ratios):.1f}")
    finally:
        if ls is not None:
            ls.close()
        subprocess.run(["dmypy", "--status-file", status, "kill"], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
