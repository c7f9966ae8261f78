import json, socket, subprocess, sys
tools = {"search": lambda query, limit=3: [f"{query} #{i}" for i in range(limit)]}
decls = [{"name": "search", "description": "Search the docs.", "inputSchema": {
    "type": "object", "required": ["query"], "properties": {
        "query": {"type": "string"}, "limit": {"type": "integer", "default": 3}}}}]
host, end = socket.socketpair()
dolsot = subprocess.Popen(["dolsot", "--session", "demo", "--tools-fd", str(end.fileno()),
                           'print(search("dolsot", limit=2))'], pass_fds=[end.fileno()])
end.close()
with host.makefile("rwb") as f:
    for msg in map(json.loads, f):
        if "id" not in msg: continue  # a notification: a call given up on
        if msg["method"] == "tools/list": out = {"result": {"tools": decls}}
        else:
            try: out = {"result": tools[msg["params"]["name"]](**msg["params"]["arguments"])}
            except Exception as e: out = {"error": {"code": -32000, "message": str(e)}}
        f.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], **out}).encode() + b"\n")
        f.flush()
sys.exit(dolsot.wait())
