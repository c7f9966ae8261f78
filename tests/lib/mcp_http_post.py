"""mcp_http_post.py - one MCP POST to `dolsot mcp --http`, its SSE answer
parsed: the one home of it for tests/lib/mcp_http_scale.py and
bench/mcp_http.py.
"""
import json
import urllib.request

ACCEPT = "application/json, text/event-stream"


def post(url, body, sid=None, timeout=120.0):
    """POST body (a JSON-RPC message) to url, in session sid: the session id
    the answer names and the messages of its event stream."""
    h = {"Content-Type": "application/json", "Accept": ACCEPT,
         "MCP-Protocol-Version": "2025-11-25"}
    if sid:
        h["Mcp-Session-Id"] = sid
    req = urllib.request.Request(url, json.dumps(body).encode(), h, method="POST")
    with urllib.request.urlopen(req, timeout=timeout) as r:
        data = r.read().decode()
        return r.headers.get("Mcp-Session-Id"), [
            json.loads(x[6:]) for x in data.splitlines() if x.startswith("data: ")]
