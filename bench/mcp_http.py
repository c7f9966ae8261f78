"""MCP over Streamable HTTP at scale (issue 39): SESSIONS MCP sessions at
once across HOSTS `dolsot mcp --http` servers on one Redis store, CELLS
calls each, every call on the next server; then the same cell's calls over
stdio MCP and through the CLI, on the same store, one after another.

    /usr/bin/python3.11 bench/mcp_http.py [SESSIONS [CELLS [HOSTS]]]   # 200 20 3

Each MCP session keeps a counter in its own dolsot session (`n = n + 1`)
and checks every answer: the k-th call must say k (no lost update, on
whichever server it lands).  It prints p50 and p99 per call in
milliseconds for each path.  It starts its own redis-server on a free port
and its own store directory (both removed at the end); DOLSOT_BIN
(default ./dolsot).  Run it on a quiet machine.
"""
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.abspath(os.environ.get("DOLSOT_BIN", os.path.join(ROOT, "dolsot")))
SESSIONS, CELLS, HOSTS = ([int(a) for a in sys.argv[1:4]] + [200, 20, 3][len(sys.argv[1:4]):])
CELL = "n = globals().get('n', 0) + 1\nn"
WAIT = 300.0
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
from mcp_http_post import post as post_for  # noqa: E402  (tests/lib, just put on the path)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_redis(tmp):
    port = free_port()
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                             "--dir", tmp, "--save", "", "--appendonly", "no"],
                            stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    return proc, f"redis://127.0.0.1:{port}"
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise SystemExit("redis-server did not start")
        time.sleep(0.05)


def start_host(env):
    proc = subprocess.Popen([BIN, "mcp", "--http", "127.0.0.1:0", "--timeout", "120"],
                            env=env, stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        if "listening on " in line:
            threading.Thread(target=proc.stderr.read, daemon=True).start()
            return proc, line.split("listening on ", 1)[1].strip()
    raise SystemExit("a server did not start")


def post(url, body, sid=None):
    return post_for(url, body, sid, WAIT)


def client(k, urls, times, errors):
    """One MCP session: CELLS calls, each on the next server."""
    try:
        url = urls[k % len(urls)]
        sid, _ = post(url, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"}}})
        post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
        for i in range(CELLS):
            t0 = time.monotonic()
            _, msgs = post(urls[(k + i) % len(urls)], {
                "jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": {
                    "name": "python", "arguments": {"code": CELL, "session": f"b{k}"}}}, sid)
            times.append(time.monotonic() - t0)
            m = [x for x in msgs if x.get("id") == i + 1][0]
            got = m["result"]["structuredContent"]["value"]
            if got != str(i + 1):
                errors.append(f"session b{k}: call {i + 1} said {got}")
    except Exception as e:  # noqa: BLE001 - counted and reported
        errors.append(f"session b{k}: {e!r}")


def stdio_times(env, n):
    proc = subprocess.Popen([BIN, "mcp"], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)

    def ask(msg):
        proc.stdin.write(json.dumps(msg) + "\n")
        proc.stdin.flush()
        while "id" in msg:
            m = json.loads(proc.stdout.readline())
            if m.get("id") == msg["id"]:
                return m
        return None

    ask({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"}}})
    ask({"jsonrpc": "2.0", "method": "notifications/initialized"})
    times = []
    for i in range(n):
        t0 = time.monotonic()
        m = ask({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": {
            "name": "python", "arguments": {"code": CELL, "session": "stdio"}}})
        times.append(time.monotonic() - t0)
        assert m["result"]["structuredContent"]["value"] == str(i + 1), m
    proc.stdin.close()
    proc.wait()
    return times


def cli_times(env, n):
    times = []
    for i in range(n):
        t0 = time.monotonic()
        out = subprocess.run([BIN, "--session", "cli", CELL], env=env, capture_output=True,
                             text=True, check=True).stdout
        times.append(time.monotonic() - t0)
        assert out.strip() == str(i + 1), out
    return times


def show(name, times):
    q = statistics.quantiles(times, n=100) if len(times) > 1 else times * 99
    print(f"{name:<28} {len(times):>6} calls  p50 {q[49] * 1000:8.1f} ms  "
          f"p99 {q[98] * 1000:8.1f} ms")


def main():
    tmp = tempfile.mkdtemp(prefix="dolsot-bench-http-")
    redis, url = start_redis(tmp)
    env = dict(os.environ, DOLSOT_CACHE_DIR=os.path.join(tmp, "store"), DOLSOT_STORE=url)
    hosts = []
    try:
        hosts = [start_host(env) for _ in range(HOSTS)]
        urls = [u for _, u in hosts]
        times, errors = [], []
        threads = [threading.Thread(target=client, args=(k, urls, times, errors))
                   for k in range(SESSIONS)]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.monotonic() - t0
        if errors:
            print(f"{len(errors)} errors; the first: {errors[0]}")
            raise SystemExit(1)
        print(f"{SESSIONS} sessions x {CELLS} cells over {HOSTS} servers, one Redis: "
              f"every counter exact; {wall:.1f} s wall")
        show("http (concurrent)", times)
        n = min(len(times), 200)
        show("stdio mcp (one at a time)", stdio_times(env, n))
        show("cli (one at a time)", cli_times(env, n))
    finally:
        subprocess.run([BIN, "--server-stop"], env=env, capture_output=True)
        for proc, _ in hosts:
            proc.terminate()
            proc.wait()
        redis.terminate()
        redis.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
