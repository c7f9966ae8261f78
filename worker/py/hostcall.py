"""dolsot host calls (issue 37): the host's tools as plain functions.

Compiled into the binary and imported (as _dolsot_hostcall) only by a call
whose request declares host tools.  Each declaration ({"name",
"description", "inputSchema", "outputSchema"}) becomes a function under its
name, with a signature built from its schemas (parameters, defaults,
annotations, return type) and a docstring, so that inspect, help(), the
type gate (stub()) and --describe all see one signature.  A call binds its
arguments to that signature (a TypeError that quotes it when they do not
fit), sends one JSON-RPC 2.0 request on the call's tools fd, one line, and
waits for the answer with its id: the result is returned, an error is
raised as HostToolError carrying the host's message, and a host that did
not answer within its bound (the caller's, which answers for it) raises
TimeoutError.  Once the caller closed the channel (a bound broken), every
call raises HostToolError saying why.  The fd is never the cell's stdout.
"""

import inspect
import json
import keyword
import os
import socket
import threading
import typing

# toolchan.h's error codes.
TOOL_ERROR = -32000
TIMEOUT = -32001
BOUND = -32002
READ_SIZE = 65536

_SIMPLE = {"string": str, "integer": int, "number": float, "boolean": bool,
           "array": list, "object": dict, "null": type(None)}


class HostToolError(RuntimeError):
    """A host tool failed: its message is the host's."""

    def __init__(self, message, code=TOOL_ERROR):
        super().__init__(message)
        self.code = code


class _Channel:
    """One call's tools fd: requests out, answers in, one at a time."""

    def __init__(self, fd):
        self.fd = fd
        # A socket object only to send without SIGPIPE: a dup, so that
        # closing it leaves the call's fd as it is.
        self.sock = socket.socket(fileno=os.dup(fd))
        self.buf = b""
        self.next_id = 1
        self.closed = None
        self.lock = threading.Lock()

    def _close(self, why):
        self.closed = why
        raise HostToolError(why, BOUND)

    def _line(self):
        while b"\n" not in self.buf:
            try:
                got = os.read(self.fd, READ_SIZE)
            except OSError as e:
                got = b""
                if self.closed is None:
                    self.closed = f"the host-call channel failed: {e.strerror}"
            if not got:
                return None
            self.buf += got
        line, _, self.buf = self.buf.partition(b"\n")
        return line

    def _send(self, data):
        try:
            self.sock.sendall(data, socket.MSG_NOSIGNAL)
        except OSError as e:
            self._close(f"the host-call channel is closed ({e.strerror})")

    def call(self, name, arguments):
        with self.lock:
            if self.closed is not None:
                raise HostToolError(self.closed, BOUND)
            rid = self.next_id
            self.next_id += 1
            data = json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                               "params": {"name": name, "arguments": arguments}},
                              separators=(",", ":"), ensure_ascii=False,
                              allow_nan=False).encode("utf-8", "surrogatepass") + b"\n"
            self._send(data)
            while True:
                line = self._line()
                if line is None:
                    self._close(self.closed or "the host-call channel was closed")
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue
                if not isinstance(msg, dict):
                    continue
                if msg.get("id") == rid:
                    break
                err = msg.get("error")
                if (msg.get("id") is None and isinstance(err, dict)
                        and err.get("code") == BOUND):
                    self._close(str(err.get("message", "channel closed")))
        err = msg.get("error")
        if err is None:
            return msg.get("result")
        code = err.get("code") if isinstance(err, dict) else None
        text = str(err.get("message", "host tool failed")) if isinstance(err, dict) else str(err)
        if code == TIMEOUT:
            raise TimeoutError(text)
        if code == BOUND:
            self.closed = text
        raise HostToolError(text, code if isinstance(code, int) else TOOL_ERROR)


_channel = None


def _type_of(schema):
    """A Python annotation for a JSON Schema (typing.Any when unsure)."""
    if not isinstance(schema, dict):
        return typing.Any
    if "enum" in schema and isinstance(schema["enum"], list) and schema["enum"] and all(
            isinstance(v, (str, int, bool)) or v is None for v in schema["enum"]):
        return typing.Literal[tuple(schema["enum"])]
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return typing.Union[tuple(_type_of(s) for s in schema[key])]
    kind = schema.get("type")
    if isinstance(kind, list) and kind:
        return typing.Union[tuple(_type_of({"type": k}) for k in kind)]
    if kind == "array" and isinstance(schema.get("items"), dict):
        return list[_type_of(schema["items"])]
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return dict[str, _type_of(schema["additionalProperties"])]
    return _SIMPLE.get(kind, typing.Any) if isinstance(kind, str) else typing.Any


def _text_of(annotation):
    """An annotation as source the gate's prelude can read (it imports
    typing): typing's forms spelt out in full, at any depth."""
    if annotation is type(None):
        return "None"
    if isinstance(annotation, type) and not typing.get_args(annotation):
        return annotation.__name__
    return repr(annotation)


def _usable(name):
    return isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name)


def _parameters(schema):
    """[(name, annotation, default or inspect.Parameter.empty, description)]
    and whether more keyword arguments are taken."""
    schema = schema if isinstance(schema, dict) else {}
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    required = schema.get("required") if isinstance(schema.get("required"), list) else []
    first, rest, more = [], [], not props
    for name, sub in props.items():
        if not _usable(name):
            more = True
            continue
        sub = sub if isinstance(sub, dict) else {}
        doc = sub.get("description") if isinstance(sub.get("description"), str) else ""
        if name in required:
            first.append((name, _type_of(sub), inspect.Parameter.empty, doc))
        else:
            annotation = _type_of(sub)
            default = sub.get("default")
            if default is None and annotation is not typing.Any:
                annotation = typing.Optional[annotation]
            rest.append((name, annotation, default, doc))
    return first + rest, more


def signature(decl):
    """The inspect.Signature of a declaration, and its parameters' docs."""
    params, more = _parameters(decl.get("inputSchema"))
    out = [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=d,
                             annotation=a) for n, a, d, _ in params]
    if more:
        out.append(inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD,
                                     annotation=typing.Any))
    ret = _type_of(decl["outputSchema"]) if isinstance(decl.get("outputSchema"), dict) \
        else typing.Any
    return inspect.Signature(out, return_annotation=ret), [(n, d) for n, _, _, d in params if d]


def _doc(decl, param_docs):
    text = decl.get("description") if isinstance(decl.get("description"), str) else ""
    lines = [text.strip() or f"Host tool {decl['name']}."]
    if param_docs:
        lines += ["", "Args:"] + [f"    {n}: {d}" for n, d in param_docs]
    return "\n".join(lines)


def stub(decl):
    """The tool as a declaration for the type gate's prelude:
    'def name(a: int, b: str = "x") -> list[str]: ...'."""
    sig, _ = signature(decl)
    parts = []
    for p in sig.parameters.values():
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            parts.append(f"**{p.name}: {_text_of(p.annotation)}")
            continue
        text = f"{p.name}: {_text_of(p.annotation)}"
        if p.default is not inspect.Parameter.empty:
            text += f" = {p.default!r}"
        parts.append(text)
    ret = _text_of(sig.return_annotation)
    return f"def {decl['name']}({', '.join(parts)}) -> {ret}: ..."


def _function(decl):
    name = decl["name"]
    sig, param_docs = signature(decl)

    def tool(*args, **kwargs):
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{name}{sig}: {e}") from None
        arguments = {}
        for key, value in bound.arguments.items():
            if sig.parameters[key].kind is inspect.Parameter.VAR_KEYWORD:
                arguments.update(value)
            else:
                arguments[key] = value
        if _channel is None:
            raise HostToolError(f"host tool {name}() cannot be called here: no host is "
                                "attached to this call")
        return _channel.call(name, arguments)

    tool.__name__ = tool.__qualname__ = name
    tool.__module__ = "dolsot.tools"
    tool.__doc__ = _doc(decl, param_docs)
    tool.__signature__ = sig
    tool.__annotations__ = {p.name: p.annotation for p in sig.parameters.values()}
    tool.__annotations__["return"] = sig.return_annotation
    tool.__dolsot_tool__ = decl
    return tool


def declarations(text):
    """The request's declarations: a list of dicts with a usable name."""
    try:
        decls = json.loads(text)
    except ValueError:
        return []
    return [d for d in decls if isinstance(d, dict) and _usable(d.get("name"))] \
        if isinstance(decls, list) else []


def attach(tools):
    """For one call: tools is (fd, declarations' JSON) or None.  Returns
    {name: function} for the cell's namespace."""
    global _channel
    if tools is None:
        _channel = None
        return {}
    fd, text = tools
    _channel = _Channel(fd) if fd >= 0 else None
    return {d["name"]: _function(d) for d in declarations(text)}
