"""Host tools for Repl(tools=...): callables of this process a cell calls.

The binary is started with --tools-fd N on one end of a socket pair; this
module speaks the host's side on the other (README, "Host tools"): it
answers "tools/list" with a declaration per callable (its JSON Schema built
from inspect.signature: parameters, defaults, annotations, the return type
and the docstring), then each "tools/call" by calling it here with the
arguments the cell passed. An exception becomes the error the cell raises
(its message is the exception's text); a value that is not JSON is one too.
One JSON-RPC 2.0 message per line, both ways.
"""

import asyncio
import functools
import inspect
import json
import socket
import threading
import types
import typing

TOOL_ERROR = -32000
_NAMES = {str: "string", int: "integer", float: "number", bool: "boolean",
          list: "array", tuple: "array", dict: "object", type(None): "null"}


def _schema_of(annotation):
    """A JSON Schema for a Python annotation ({} when there is none)."""
    if annotation is inspect.Parameter.empty or annotation is typing.Any:
        return {}
    if annotation is None:
        return {"type": "null"}
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [_schema_of(a) for a in args]}
    if origin in (list, tuple) and args:
        return {"type": "array", "items": _schema_of(args[0])}
    if origin is dict and len(args) == 2:
        return {"type": "object", "additionalProperties": _schema_of(args[1])}
    kind = _NAMES.get(origin or annotation)
    return {"type": kind} if kind else {}


def _json_ok(value):
    try:
        json.dumps(value, allow_nan=False)
        return True
    except (TypeError, ValueError):
        return False


def declare(name, fn):
    """The declaration of callable fn as tool name."""
    if not name.isidentifier() or name.startswith("_"):
        raise ValueError(f"tool name {name!r}: want a Python identifier not starting with '_'")
    if not callable(fn):
        raise TypeError(f"tool {name!r} is not callable")
    sig = inspect.signature(fn)
    props, required, more = {}, [], False
    for p in sig.parameters.values():
        if p.kind is p.VAR_KEYWORD:
            more = True
            continue
        if p.kind is p.VAR_POSITIONAL:
            continue
        entry = _schema_of(p.annotation)
        if p.default is p.empty:
            required.append(p.name)
        elif _json_ok(p.default):
            entry["default"] = p.default
        props[p.name] = entry
    schema = {"type": "object", "properties": props, "required": required}
    if not more:
        schema["additionalProperties"] = False
    decl = {"name": name, "description": inspect.getdoc(fn) or "", "inputSchema": schema}
    out = _schema_of(sig.return_annotation)
    if out:
        decl["outputSchema"] = out
    return decl


def _bind(fn, arguments):
    """args, kwargs for fn from the cell's arguments (positional-only
    parameters passed by position)."""
    args, kwargs = [], dict(arguments)
    for p in inspect.signature(fn).parameters.values():
        if p.kind is p.POSITIONAL_ONLY and p.name in kwargs:
            args.append(kwargs.pop(p.name))
    return args, kwargs


class Host:
    """The host's side of one call's --tools-fd, for a map of callables."""

    def __init__(self, tools):
        self.tools = dict(tools)
        self.decls = [declare(n, f) for n, f in self.tools.items()]
        self.sock, self.child = socket.socketpair()
        self.sock.set_inheritable(False)
        self.child.set_inheritable(True)

    def argv(self):
        return ["--tools-fd", str(self.child.fileno())]

    def fds(self):
        return (self.child.fileno(),)

    def started(self):
        """After the binary started: drop our copy of its end."""
        self.child.close()

    def _answer(self, msg, result=None, error=None):
        out = {"jsonrpc": "2.0", "id": msg.get("id")}
        if error is not None:
            out["error"] = {"code": TOOL_ERROR, "message": error}
        else:
            out["result"] = result
        try:
            return json.dumps(out, allow_nan=False).encode() + b"\n"
        except (TypeError, ValueError) as e:
            return self._answer(msg, error=f"the tool's result is not JSON: {e}")

    def _prepare(self, msg):
        """(callable, args, kwargs) to run, or the answer's bytes, or None
        for a message that wants none."""
        if not isinstance(msg, dict) or "id" not in msg or "method" not in msg:
            return None
        if msg["method"] == "tools/list":
            return self._answer(msg, {"tools": self.decls})
        params = msg.get("params") or {}
        fn = self.tools.get(params.get("name"))
        if msg["method"] != "tools/call" or fn is None:
            return self._answer(msg, error=f"no tool {params.get('name')!r}")
        args, kwargs = _bind(fn, params.get("arguments") or {})
        return fn, args, kwargs

    def _todo(self, line):
        """(message, what _prepare says of it); (None, None) for a line
        that is not JSON."""
        try:
            msg = json.loads(line)
        except ValueError:
            return None, None
        return msg, self._prepare(msg)

    def _done(self, msg, run):
        try:
            return self._answer(msg, run())
        except Exception as e:
            return self._answer(msg, error=str(e) or type(e).__name__)

    def serve(self):
        """Answer until the binary closes its end (a thread's loop)."""
        try:
            self._serve()
        except (BrokenPipeError, ConnectionResetError):
            pass   # the binary went first: an answer to a call it gave up on

    def _serve(self):
        with self.sock.makefile("rwb") as f:
            for line in f:
                msg, todo = self._todo(line)
                if todo is None:
                    continue
                if not isinstance(todo, bytes):
                    fn, args, kwargs = todo
                    todo = self._done(msg, lambda: fn(*args, **kwargs))
                f.write(todo)
                f.flush()

    def thread(self):
        t = threading.Thread(target=self.serve, name="dolsot-tools", daemon=True)
        t.start()
        return t

    async def aserve(self):
        """serve() on the running loop: a coroutine function is awaited, a
        plain one runs in a thread, so the loop is never held."""
        self.sock.setblocking(False)
        reader, writer = await asyncio.open_connection(sock=self.sock, limit=1 << 21)
        try:
            while line := await reader.readline():
                msg, todo = self._todo(line)
                if todo is None:
                    continue
                if not isinstance(todo, bytes):
                    todo = await self._adone(msg, *todo)
                writer.write(todo)
                await writer.drain()
        finally:
            writer.close()

    async def _adone(self, msg, fn, args, kwargs):
        try:
            if inspect.iscoroutinefunction(fn):
                value = await fn(*args, **kwargs)
            else:
                value = await asyncio.to_thread(fn, *args, **kwargs)
            return self._answer(msg, value)
        except Exception as e:
            return self._answer(msg, error=str(e) or type(e).__name__)

    def close(self):
        self.sock.close()
        if self.child.fileno() >= 0:
            self.child.close()


def in_process(name, fn, loop_of):
    """fn as InProcessSession's cells call it: its signature, its exception
    raised as HostToolError with its text; a coroutine function awaited on
    the loop loop_of() gives (arun's), else run to its end on the cell's
    thread."""
    from .errors import HostToolError
    declare(name, fn)

    @functools.wraps(fn)
    def tool(*args, **kwargs):
        try:
            if not inspect.iscoroutinefunction(fn):
                return fn(*args, **kwargs)
            loop = loop_of()
            if loop is None:
                return asyncio.run(fn(*args, **kwargs))
            return asyncio.run_coroutine_threadsafe(fn(*args, **kwargs), loop).result()
        except Exception as e:
            raise HostToolError(str(e) or type(e).__name__) from None

    tool.__name__ = tool.__qualname__ = name
    return tool
