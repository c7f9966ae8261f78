"""A scripted, OpenAI-compatible chat completions server for the pi tests.

It listens on 127.0.0.1 only (a port the system picks), answers each
POST /v1/chat/completions with the next reply of its script (a tool call
or a text), streamed as OpenAI's server-sent events when the request asks
for a stream, and records every request's body, so a test can read what pi
sent back: the tool results, images included.  An empty script answers
"done", which ends pi's turn.
"""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def tool_call(name, **arguments):
    """A reply that calls one tool with these arguments."""
    return {"tool": name, "arguments": arguments}


def text(words):
    """A reply that is only text (pi's turn ends on it)."""
    return {"text": words}


class ScriptedModel:
    def __init__(self):
        self.script = []
        self.requests = []
        self.lock = threading.Lock()
        self.calls = 0
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                self.send_json({"object": "list", "data": [{"id": "scripted", "object": "model"}]})

            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                with model.lock:
                    model.requests.append(body)
                    reply = model.script.pop(0) if model.script else text("done")
                    model.calls += 1
                    n = model.calls
                if body.get("stream"):
                    self.send_stream(reply, n)
                else:
                    self.send_json(model.completion(reply, n))

            def send_json(self, obj):
                data = json.dumps(obj).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def send_stream(self, reply, n):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                for chunk in model.chunks(reply, n):
                    self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self.port}/v1"

    def replay(self, *replies):
        with self.lock:
            self.script.extend(replies)

    @staticmethod
    def _usage():
        return {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}

    def completion(self, reply, n):
        message = {"role": "assistant", "content": reply.get("text")}
        finish = "stop"
        if "tool" in reply:
            message["tool_calls"] = [{"id": f"call_{n}", "type": "function",
                                      "function": {"name": reply["tool"],
                                                   "arguments": json.dumps(reply["arguments"])}}]
            finish = "tool_calls"
        return {"id": f"chatcmpl-{n}", "object": "chat.completion", "model": "scripted",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": self._usage()}

    def chunks(self, reply, n):
        base = {"id": f"chatcmpl-{n}", "object": "chat.completion.chunk", "model": "scripted"}
        if "tool" in reply:
            delta = {"role": "assistant", "tool_calls": [{
                "index": 0, "id": f"call_{n}", "type": "function",
                "function": {"name": reply["tool"], "arguments": json.dumps(reply["arguments"])}}]}
            finish = "tool_calls"
        else:
            delta = {"role": "assistant", "content": reply["text"]}
            finish = "stop"
        yield dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": None}])
        yield dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": finish}])
        yield dict(base, choices=[], usage=self._usage())

    def tool_results(self, request):
        """The tool messages of one recorded request: (tool_call_id, text)."""
        return [(m.get("tool_call_id"), m.get("content")) for m in request.get("messages", [])
                if m.get("role") == "tool"]

    def images(self, request):
        """The data: URLs of the images one recorded request carries."""
        urls = []
        for m in request.get("messages", []):
            if isinstance(m.get("content"), list):
                urls += [p["image_url"]["url"] for p in m["content"] if p.get("type") == "image_url"]
        return urls
