"""mcp_http_scale.py - one MCP session over several `dolsot mcp --http`
servers on one Redis store (tests/cli/check_mcp_http.c starts them).

    python3.11 tests/lib/mcp_http_scale.py SCRATCH URL=PID URL=PID URL=PID

Prints "ok STEP" per step; the last server is SIGKILLed mid-cell.
"""
import os
import signal
import sys
import threading
import time

from mcp_http_post import post as post_for

WAIT = 120.0
POLL = 0.1


def post(url, body, sid=None):
    return post_for(url, body, sid, WAIT)


def value(url, sid, code, rid):
    _, msgs = post(url, {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {
        "name": "python", "arguments": {"code": code, "session": "ctr"}}}, sid)
    m = [x for x in msgs if x.get("id") == rid][0]
    assert not m["result"]["isError"], m
    return m["result"]["structuredContent"]["value"]


def main():
    url0 = HOSTS[0][0]
    sid, _ = post(url0, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "scale", "version": "1"}}})
    post(url0, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)

    # One session's calls, each on the next server: the last commit each time.
    for i in range(6):
        got = value(HOSTS[i % 3][0], sid, "n = globals().get('n', 0) + 1\nn", 10 + i)
        assert got == str(i + 1), (i, got)
    print("ok calls alternate between servers", flush=True)

    # Two calls at once through two servers: one waits for the other's lock.
    bump = "import time\nv = n\ntime.sleep(1)\nn = v + 1\nn"
    out = {}
    threads = [threading.Thread(target=lambda k=k: out.update({k: value(HOSTS[k][0], sid, bump,
                                                                        20 + k)}))
               for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(out.values()) == ["7", "8"], out
    assert value(HOSTS[2][0], sid, "n", 30) == "8"
    print("ok concurrent calls serialize", flush=True)

    # A server killed mid-cell: only that cell is lost.
    started = os.path.join(SCRATCH, "started")
    url2, pid2 = HOSTS[2]
    dead = threading.Thread(target=lambda: post(url2, {
        "jsonrpc": "2.0", "id": 40, "method": "tools/call", "params": {"name": "python",
        "arguments": {"session": "ctr", "code": "import time\nn = 999\n"
                      f"open({started!r}, 'w').close()\ntime.sleep(60)"}}}, sid))
    dead.daemon = True
    dead.start()
    deadline = time.monotonic() + WAIT
    while not os.path.exists(started):
        assert time.monotonic() < deadline, "the cell never started"
        time.sleep(POLL)
    os.kill(pid2, signal.SIGKILL)
    assert value(url0, sid, "n", 41) == "8"
    assert value(HOSTS[1][0], sid, "n = n + 1\nn", 42) == "9"
    print("ok a killed server loses only its cell", flush=True)


if __name__ == "__main__":
    SCRATCH = sys.argv[1]
    HOSTS = [(u, int(p)) for u, p in (a.rsplit("=", 1) for a in sys.argv[2:])]
    main()
