"""mcp_http_hostile.py - hostile clients against `dolsot mcp --http`.

tests/cli/check_mcp_http.c runs it against a server it started:

    python3.11 tests/lib/mcp_http_hostile.py URL SCRATCH CASE...

Each case prints "ok CASE" or raises (a traceback, exit 1).  After each
one a well-behaved client is still served.
"""
import http.client
import json
import os
import resource
import select
import socket
import sys
import time
import urllib.parse

URL, SCRATCH = sys.argv[1], sys.argv[2]
_u = urllib.parse.urlsplit(URL)
HOST, PORT, PATH = _u.hostname, _u.port, _u.path
ACCEPT = "application/json, text/event-stream"
# Bounds on waiting for an event (never asserted as timings).
WAIT = 60.0
# The server's --http-timeout, or http.h's MCP_HTTP_HEADER_TIMEOUT.
HEADER_TIMEOUT = float(os.environ.get("MCP_HTTP_TIMEOUT", "10"))
POLL = 0.1


def conn():
    return http.client.HTTPConnection(HOST, PORT, timeout=TIMEOUT[0])


# A request's own bound: WAIT, or shorter while retrying.
TIMEOUT = [WAIT]


# The bearer token every request carries (MCP_HTTP_TOKEN), or none.
AUTH = {}


def as_tenant(token):
    AUTH.clear()
    if token:
        AUTH["Authorization"] = "Bearer " + token


as_tenant(os.environ.get("MCP_HTTP_TOKEN"))


def post(body, sid=None, headers=None, raw=False):
    h = {"Content-Type": "application/json", "Accept": ACCEPT, **AUTH}
    if sid:
        h["Mcp-Session-Id"] = sid
    h.update(headers or {})
    c = conn()
    c.request("POST", PATH, body if raw else json.dumps(body), h)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r, data


def messages(r, data):
    """The JSON-RPC messages of a response, SSE or JSON."""
    if r.getheader("Content-Type", "").startswith("text/event-stream"):
        return [json.loads(line[6:]) for line in data.decode().splitlines()
                if line.startswith("data: ")]
    return [json.loads(data)] if data else []


def initialize():
    r, data = post({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                    "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                               "clientInfo": {"name": "hostile", "version": "1"}}})
    assert r.status == 200, (r.status, data)
    sid = r.getheader("Mcp-Session-Id")
    assert sid, r.getheaders()
    r, data = post({"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
    assert r.status == 202, (r.status, data)
    return sid


def call(sid, code, session, rid=1):
    r, data = post({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                    "params": {"name": "python",
                               "arguments": {"code": code, "session": session}}}, sid)
    assert r.status == 200, (r.status, data)
    return [m for m in messages(r, data) if m.get("id") == rid][0]


def served():
    """A well-behaved client still gets its answer."""
    sid = initialize()
    r, data = post({"jsonrpc": "2.0", "id": 5, "method": "ping"}, sid)
    assert r.status == 200 and messages(r, data)[0]["result"] == {}, (r.status, data)


def error_of(r, data, status, code=None):
    assert r.status == status, (r.status, data)
    m = json.loads(data)
    assert m["jsonrpc"] == "2.0" and "error" in m, m
    if code is not None:
        assert m["error"]["code"] == code, m
    return m["error"]["message"]


def case_malformed():
    sid = initialize()
    error_of(*post("{not json", sid, raw=True), 400, -32700)
    error_of(*post({"jsonrpc": "1.0", "id": 1, "method": "ping"}, sid), 400, -32600)
    error_of(*post("[]", sid, raw=True), 400, -32600)
    msg = error_of(*post({"jsonrpc": "2.0", "id": 1, "method": "ping"}, sid,
                         {"Content-Type": "text/plain"}), 415)
    assert "application/json" in msg, msg
    # A message the session's server refuses is its JSON-RPC error.
    r, data = post({"jsonrpc": "2.0", "id": 3, "method": "no/such"}, sid)
    assert messages(r, data)[0]["error"]["code"] == -32601, data


def case_oversized():
    sid = initialize()
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + \
        b"a" * (17 << 20) + b'"}}'
    c = conn()
    try:
        c.request("POST", PATH, body, {"Content-Type": "application/json",
                                       "Accept": ACCEPT, "Mcp-Session-Id": sid})
        r = c.getresponse()
        error_of(r, r.read(), 413, -32600)
    except (BrokenPipeError, ConnectionResetError):
        pass    # refused before the body was all sent
    c.close()


def case_sessions():
    msg = error_of(*post({"jsonrpc": "2.0", "id": 1, "method": "ping"}), 400)
    assert "Mcp-Session-Id" in msg, msg
    error_of(*post({"jsonrpc": "2.0", "id": 1, "method": "ping"}, "0" * 32), 404)
    error_of(*post({"jsonrpc": "2.0", "id": 1, "method": "ping"}, "../../etc"), 404)
    sid = initialize()
    c = conn()
    c.request("DELETE", PATH, headers={"Mcp-Session-Id": sid, **AUTH})
    r = c.getresponse()
    r.read()
    assert r.status == 200, r.status
    error_of(*post({"jsonrpc": "2.0", "id": 1, "method": "ping"}, sid), 404)


def case_headers():
    sid = initialize()
    msg = error_of(*post({"jsonrpc": "2.0", "id": 1, "method": "ping"}, sid,
                         {"Origin": "http://evil.example"}), 403)
    assert "Origin" in msg, msg
    r, data = post({"jsonrpc": "2.0", "id": 1, "method": "ping"}, sid,
                   {"Origin": "http://localhost:3000"})
    assert r.status == 200, (r.status, data)
    # A client that takes no event stream gets one JSON body.
    r, data = post({"jsonrpc": "2.0", "id": 4, "method": "ping"}, sid,
                   {"Accept": "application/json"})
    assert r.status == 200 and r.getheader("Content-Type") == "application/json", \
        (r.status, r.getheaders())
    assert json.loads(data) == {"jsonrpc": "2.0", "id": 4, "result": {}}, data
    msg = error_of(*post({"jsonrpc": "2.0", "id": 1, "method": "ping"}, sid,
                         {"MCP-Protocol-Version": "1999-01-01"}), 400)
    assert "MCP-Protocol-Version" in msg, msg
    c = conn()
    c.request("GET", "/other")
    r = c.getresponse()
    error_of(r, r.read(), 404)
    c.request("PUT", PATH, "{}")
    r = c.getresponse()
    error_of(r, r.read(), 405)
    c.close()


def closed_by_server(s):
    """Whether the server closed s (reads until EOF, a reset, or WAIT)."""
    s.settimeout(WAIT)
    try:
        while s.recv(4096):
            pass
        return True
    except socket.timeout:
        return False
    except OSError:
        return True     # reset, or never let in


def case_slowloris():
    s = socket.create_connection((HOST, PORT))
    request = (f"POST {PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               "X-Slow: " + "a" * 200 + "\r\n").encode()
    deadline = time.monotonic() + WAIT
    dropped = False
    for i, byte in enumerate(request):
        try:
            s.send(bytes([byte]))
        except (BrokenPipeError, ConnectionResetError):
            dropped = True
            break
        if i == 3:
            served()    # another client meanwhile
        # A byte a second, as a slow-loris client sends; stop at the bound.
        time.sleep(1)
        if time.monotonic() > deadline:
            break
    assert dropped or closed_by_server(s), "the slow connection was never dropped"
    s.close()


def case_idle():
    """1,000 connections that send nothing: the server holds at most 512
    (the rest wait in the kernel's queue), drops each at its header
    timeout, and serves others once they are gone."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    idle = []
    for _ in range(1000):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex((HOST, PORT))
        idle.append(s)
    # Those the server took are dropped at their header timeout; the
    # kernel may hold or lose the rest (a full queue), never the server.
    left = {s for s in idle if connected(s)}
    got_in = len(left)
    deadline = time.monotonic() + 3 * HEADER_TIMEOUT
    while left and time.monotonic() < deadline:
        readable, _, _ = select.select(list(left)[:500], [], [], POLL)
        for s in readable:
            try:
                if s.recv(4096):
                    continue
            except OSError:
                pass
            left.discard(s)
    assert got_in > len(left), (got_in, len(left))
    deadline = time.monotonic() + WAIT
    for s in idle:
        s.close()
    # What the kernel had queued meanwhile is accepted as room frees up,
    # each at most a header timeout: served within a few of them.
    deadline = time.monotonic() + 3 * HEADER_TIMEOUT + 2 * WAIT
    TIMEOUT[0] = 5.0
    while True:
        try:
            served()
            TIMEOUT[0] = WAIT
            return
        except (ConnectionError, socket.timeout, http.client.HTTPException):
            assert time.monotonic() < deadline, "never served again"
            time.sleep(POLL)


def connected(s):
    return s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0 and \
        select.select([], [s], [], 0)[1] != []


def raw_call(sid, rid, session, code, headers="", accept=ACCEPT, meta=None):
    """A tools/call sent on a socket of its own, left open: the socket."""
    s = socket.create_connection((HOST, PORT))
    params = {"name": "python", "arguments": {"session": session, "code": code}}
    if meta:
        params["_meta"] = meta
    body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})
    s.sendall((f"POST {PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               f"Accept: {accept}\r\nMcp-Session-Id: {sid}\r\n{headers}"
               f"Content-Length: {len(body)}\r\n\r\n{body}").encode())
    return s


def recv_until(s, marker):
    """What s gets until marker is in it (or the server closes: an error)."""
    s.settimeout(WAIT)
    got = b""
    while marker not in got:
        chunk = s.recv(65536)
        assert chunk, got
        got += chunk
    return got


def wait_for(path):
    deadline = time.monotonic() + WAIT
    while not os.path.exists(path):
        assert time.monotonic() < deadline, "the cell never started"
        time.sleep(POLL)


def case_disconnect():
    """A client gone mid-cell: the cell finishes and commits (the
    specification: a disconnect is no cancellation)."""
    sid = initialize()
    started = os.path.join(SCRATCH, "started")
    s = raw_call(sid, 7, "gone",
                 f"import time\nopen({started!r}, 'w').close()\ntime.sleep(2)\nn = 41")
    wait_for(started)
    s.close()
    m = call(sid, "n + 1", "gone", 8)
    # A cancelled call's stream ends, with no answer.
    s = raw_call(sid, 9, "gone", "import time\ntime.sleep(30)")
    r, data = post({"jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": {"requestId": 9}}, sid)
    assert r.status == 202, (r.status, data)
    s.settimeout(WAIT)
    got = b""
    while not got.endswith(b"0\r\n\r\n"):
        chunk = s.recv(65536)
        assert chunk, got
        got += chunk
    assert b'"id":9' not in got, got
    s.close()
    assert m["result"]["structuredContent"]["value"] == "42", m


def tool(sid, name, args, rid=1):
    r, data = post({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                    "params": {"name": name, "arguments": args}}, sid)
    return r, data


def case_tenants():
    """Tenants A and B (MCP_HTTP_TOKEN is A's, MCP_HTTP_TOKEN_B is B's,
    whose file line has cells=1 bytes=4096)."""
    a, b = os.environ["MCP_HTTP_TOKEN"], os.environ["MCP_HTTP_TOKEN_B"]
    for token in (None, "wrong-" + a, a + "x", a[:-1]):
        as_tenant(token)
        r, data = post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}})
        assert r.status == 401 and r.getheader("WWW-Authenticate") == "Bearer", \
            (r.status, data)
        assert json.loads(data)["error"]["code"] == -32001, data
    as_tenant(a)
    sid_a = initialize()
    assert call(sid_a, "mine = 1", "shared")["result"]["isError"] is False
    as_tenant(b)
    # A's session id is unknown to B; B's namespace is its own.
    error_of(*post({"jsonrpc": "2.0", "id": 1, "method": "ping"}, sid_a), 404)
    sid_b = initialize()
    m = call(sid_b, "'mine' in globals()", "shared")
    assert m["result"]["structuredContent"]["value"] == "False", m
    r, data = tool(sid_b, "reset_session", {"session": "all"})
    r, data = tool(sid_b, "list_sessions", {})
    ids = [s["id"] for s in messages(r, data)[0]["result"]["structuredContent"]["sessions"]]
    assert ids == [], ids
    # B's caps: one call at a time, 4096 bytes a body.
    started = os.path.join(SCRATCH, "b-started")
    s = raw_call(sid_b, 7, "slow", f"import time\nopen({started!r}, 'w').close()\n"
                 "time.sleep(3)", f"Authorization: Bearer {b}\r\n")
    wait_for(started)
    r, data = tool(sid_b, "python", {"session": "other", "code": "1"}, 8)
    msg = error_of(r, data, 429, -32000)
    assert "tenant" in msg, msg
    as_tenant(a)
    assert call(sid_a, "mine", "shared", 9)["result"]["structuredContent"]["value"] == "1"
    as_tenant(b)
    recv_until(s, b'"id":7')
    s.close()
    error_of(*post({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": "a" * 5000}},
                   sid_b), 413, -32600)
    as_tenant(a)
    r, data = tool(sid_a, "list_sessions", {})
    ids = [s["id"] for s in messages(r, data)[0]["result"]["structuredContent"]["sessions"]]
    assert ids == ["shared"], ids


# ---- resumability: SSE event ids and Last-Event-ID ----

def sse_events(r):
    """(id, message) of each SSE event of response r as it comes; ends with
    the stream."""
    ev = {}
    while True:
        line = r.readline()
        if not line:
            return
        line = line.decode().rstrip("\r\n")
        if line == "":
            if "data" in ev:
                yield ev.get("id"), json.loads(ev["data"])
            ev = {}
        elif line.startswith("id: "):
            ev["id"] = line[4:]
        elif line.startswith("data: "):
            ev["data"] = line[6:]


def get_stream(sid, last=None):
    """A GET of the session's stream (resuming after `last`): conn, response."""
    h = {"Accept": "text/event-stream", "Mcp-Session-Id": sid, **AUTH}
    if last is not None:
        h["Last-Event-ID"] = last
    c = conn()
    c.request("GET", PATH, headers=h)
    return c, c.getresponse()


def id_parts(event_id):
    tag, stream, seq = event_id.split("-")
    return tag, int(stream), int(seq)


def staged_cell(name):
    """A cell that prints part A, waits for SCRATCH/NAME-1, prints B, waits
    for NAME-2, prints C, and is 42: its code, its go files and its whole
    output."""
    go = [os.path.join(SCRATCH, f"{name}-{i}") for i in (1, 2)]
    lines = {part: "".join(f"{part}{i}\n" for i in range(5)) for part in "ABC"}
    code = ("import os, sys, time\n"
            "def wait(p):\n"
            "    while not os.path.exists(p): time.sleep(0.02)\n"
            f"sys.stdout.write({lines['A']!r}); sys.stdout.flush()\n"
            f"wait({go[0]!r})\n"
            f"sys.stdout.write({lines['B']!r}); sys.stdout.flush()\n"
            f"wait({go[1]!r})\n"
            f"sys.stdout.write({lines['C']!r}); sys.stdout.flush()\n"
            "42")
    return code, go, lines["A"] + lines["B"] + lines["C"]


def output_of(events):
    """The stdout the progress notifications carried, checking their
    chunks' seq runs on with none dropped."""
    text, seqs = "", []
    for _, m in events:
        meta = m.get("params", {}).get("_meta", {}).get("dolsot/output")
        if m.get("method") == "notifications/progress" and meta:
            assert meta["stream"] == "stdout" and meta["dropped"] == 0, m
            seqs.append(meta["seq"])
            text += m["params"]["message"]
    assert seqs == list(range(1, len(seqs) + 1)), seqs
    return text


def touch(path):
    open(path, "w").close()


def lost_then_resumed(first, resume_from):
    """The events read before the stream was lost (`first`, up to and
    with the one of id resume_from) and those after resuming must be
    exactly one run of the stream's ids: each once, none missing."""
    tag, stream, seq = id_parts(resume_from)
    ids = [id_parts(i) for i, _ in first]
    assert all(t == tag and s == stream for t, s, _ in ids), ids
    assert [q for _, _, q in ids] == list(range(1, seq + 1)), ids
    return tag, stream, seq


def read_until(events, want):
    got = []
    for ev in events:
        got.append(ev)
        if want(got):
            return got
    raise AssertionError(f"the stream ended early: {got}")


def case_resume():
    """A POST's stream lost mid-cell: a GET with Last-Event-ID gets the
    events after it, each once, then the rest live and the answer; the
    cell was never orphaned."""
    sid = initialize()
    code, go, whole = staged_cell("post")
    body = json.dumps({"jsonrpc": "2.0", "id": 21, "method": "tools/call", "params": {
        "name": "python", "arguments": {"session": "resumed", "code": code},
        "_meta": {"progressToken": "p21"}}})
    c = conn()
    c.request("POST", PATH, body, {"Content-Type": "application/json", "Accept": ACCEPT,
                                   "Mcp-Session-Id": sid, **AUTH})
    r = c.getresponse()
    assert r.status == 200 and r.getheader("Content-Type") == "text/event-stream", r.status
    first = read_until(sse_events(r), lambda got: "A4\n" in output_of(got))
    c.close()   # lost, mid-cell
    last = first[-1][0]
    tag, stream, seq = lost_then_resumed(first, last)
    touch(go[0])    # B comes while no connection holds the stream
    c, r = get_stream(sid, last)
    assert r.status == 200 and r.getheader("Content-Type") == "text/event-stream", \
        (r.status, r.read())
    events = sse_events(r)
    rest = read_until(events, lambda got: "B4\n" in output_of(first + got))
    touch(go[1])    # C comes live on the resumed stream
    rest += list(events)    # to the answer, and the stream's end
    c.close()
    ids = [id_parts(i) for i, _ in rest]
    assert ids == [(tag, stream, q) for q in range(seq + 1, seq + 1 + len(ids))], ids
    assert output_of(first + rest) == whole, output_of(first + rest)
    answer = rest[-1][1]
    assert answer.get("id") == 21 and answer["result"]["structuredContent"]["value"] == "42", \
        answer
    # Resumed again from its last event: nothing more (204).
    finished(sid, rest[-1][0])


def finished(sid, last):
    c, r = get_stream(sid, last)
    assert r.status == 204 and r.read() == b"", r.status
    c.close()


def case_resume_get():
    """The GET stream lost: its events after Last-Event-ID, then live."""
    sid = initialize()
    code, go, whole = staged_cell("get")
    g, gr = get_stream(sid)
    assert gr.status == 200, gr.status
    # A POST that takes no stream: its progress goes to the GET stream.
    s = raw_call(sid, 22, "resumed-get", code, accept="application/json",
                 meta={"progressToken": "p22"})
    first = read_until(sse_events(gr), lambda got: "A4\n" in output_of(got))
    g.close()
    last = first[-1][0]
    tag, stream, seq = lost_then_resumed(first, last)
    touch(go[0])
    g, gr = get_stream(sid, last)
    assert gr.status == 200, (gr.status, gr.read())
    events = sse_events(gr)
    rest = read_until(events, lambda got: "B4\n" in output_of(first + got))
    # The resumed stream is the session's GET stream: a second is refused.
    c, r = get_stream(sid)
    error_of(r, r.read(), 409)
    c.close()
    touch(go[1])
    rest += read_until(events, lambda got: "C4\n" in output_of(first + rest + got))
    g.close()
    ids = [id_parts(i) for i, _ in rest]
    assert ids == [(tag, stream, q) for q in range(seq + 1, seq + 1 + len(ids))], ids
    assert output_of(first + rest) == whole, output_of(first + rest)
    got = recv_until(s, b'"id":22')
    s.close()
    assert b'"value":"42"' in got, got


def event_id_of_ping(sid, rid):
    c = conn()
    c.request("POST", PATH, json.dumps({"jsonrpc": "2.0", "id": rid, "method": "ping"}),
              {"Content-Type": "application/json", "Accept": ACCEPT,
               "Mcp-Session-Id": sid, **AUTH})
    r = c.getresponse()
    (event_id, m), = list(sse_events(r))
    c.close()
    assert m == {"jsonrpc": "2.0", "id": rid, "result": {}}, m
    return event_id


def resume_refused(sid, last, status):
    c, r = get_stream(sid, last)
    msg = error_of(r, r.read(), status, -32600)
    c.close()
    assert "Last-Event-ID" in msg, msg
    return msg


def case_resume_refused():
    """An id that is not one of the session's streams' is a 400; one whose
    events are no longer kept a 410; never a 404 (the session lives)."""
    sid, other = initialize(), initialize()
    mine = event_id_of_ping(sid, 31)
    tag, stream, seq = id_parts(mine)
    for bad in ("junk", "", f"{tag}-{stream}-{seq + 5}", f"{tag}-{stream + 50}-1",
                f"{tag}-{stream}-0", f"{tag}-0{stream}-{seq}",
                ("0" if tag[0] != "0" else "1") + tag[1:] + f"-{stream}-{seq}",
                event_id_of_ping(other, 32)):
        resume_refused(sid, bad, 400)
    # Kept: resuming after its last event is a 204, nothing more.
    finished(sid, mine)
    # A session keeps its last 8 finished streams (http.h's
    # MCP_HTTP_STREAMS_KEPT): after 8 more, the first is gone.
    for rid in range(40, 48):
        event_id_of_ping(sid, rid)
    msg = resume_refused(sid, mine, 410)
    assert "no longer kept" in msg, msg
    r, data = post({"jsonrpc": "2.0", "id": 50, "method": "ping"}, sid)
    assert r.status == 200, (r.status, data)


for name in sys.argv[3:]:
    globals()["case_" + name]()
    served()
    print("ok", name, flush=True)
