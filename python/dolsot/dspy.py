"""DolsotInterpreter: a DSPy CodeInterpreter whose cells are dolsot cells.

The protocol is the one of stanfordnlp/dspy 3.3.1 (commit 4ed377ee, read
from dspy/primitives/code_interpreter.py, dspy/predict/rlm.py and
dspy/utils/callback.py): a mutable `tools` dict that RLM fills (its
llm_query, llm_query_batched and the user's tools), `output_fields` (the
SUBMIT signature), start(), execute(code, variables=None) returning the
output text, or FinalOutput when the cell called SUBMIT, shutdown(), and
the callbacks `on_interpreter_{startup,execute,tool_call,shutdown}_{start,end}`
fired around start, execute, invoke_tool and shutdown.

When DSPy is importable its own FinalOutput, CodeInterpreterError,
CodeExecutionError, CodeInterpreter, BaseCallback and with_callbacks are
used, so RLM's isinstance checks and dspy.configure(callbacks=...) see
this class as one of theirs; otherwise classes of the same names and
attributes defined here stand in.

How the protocol maps onto dolsot (README, "DSPy"):
- each thread that calls execute() has a session of its own, so one
  instance may be shared by dspy.Parallel's threads; at most
  max_sessions cells run at once (a semaphore), and a session holds no
  process between cells;
- tools are Repl(tools=...) host tools: each call runs here, inside
  invoke_tool, under the callback context of the execute() that made it;
- SUBMIT is one more host tool, its signature the output fields: it
  records what it was given and raises, which ends the cell;
- variables are assigned by a cell of their own before the code, sent
  again only when they differ from those the thread's session last got;
- a runtime error, a limit hit or a rejected cell is CodeExecutionError
  (the model may correct it); a SyntaxError is SyntaxError; a timeout, or
  a failure of dolsot itself, is CodeInterpreterError (terminal for RLM),
  yet the session stays as it was before the cell and stays usable.
"""

import collections
import contextvars
import inspect
import json
import keyword
import os
import threading
import typing
import uuid

from .errors import DolsotError
from .repl import Repl

try:
    from dspy.primitives.code_interpreter import (CodeInterpreter, CodeInterpreterError,
                                                  FinalOutput)
    from dspy.utils.callback import BaseCallback, with_callbacks
    try:
        from dspy.primitives.code_interpreter import CodeExecutionError
    except ImportError:   # a DSPy from before the split: every error correctable
        CodeExecutionError = CodeInterpreterError
    try:
        from dspy.utils.callback_context import ACTIVE_CALL_ID
    except ImportError:
        ACTIVE_CALL_ID = None
    HAVE_DSPY = True
except ImportError:
    HAVE_DSPY = False

if not HAVE_DSPY:
    class CodeInterpreterError(RuntimeError):
        """A failure the submitted code cannot repair (DSPy's name)."""

    class CodeExecutionError(CodeInterpreterError):
        """A recoverable error of the submitted code (DSPy's name)."""

    class FinalOutput:
        """What execute() returns when the cell called SUBMIT: .output holds
        what SUBMIT was given (DSPy's name)."""

        def __init__(self, output):
            self.output = output

        def __repr__(self):
            return f"FinalOutput({self.output!r})"

        def __eq__(self, other):
            if not isinstance(other, FinalOutput):
                return NotImplemented
            return self.output == other.output

    @typing.runtime_checkable
    class CodeInterpreter(typing.Protocol):
        """DSPy's interpreter protocol: tools, start, execute, shutdown."""

        @property
        def tools(self) -> dict: ...

        def start(self) -> None: ...

        def execute(self, code: str, variables: typing.Optional[dict] = None): ...

        def shutdown(self) -> None: ...

    class BaseCallback:
        """The interpreter hooks of DSPy's BaseCallback (each a no-op)."""

        def on_interpreter_execute_start(self, call_id, instance, inputs): pass

        def on_interpreter_execute_end(self, call_id, outputs, exception=None): pass

        def on_interpreter_tool_call_start(self, call_id, instance, inputs): pass

        def on_interpreter_tool_call_end(self, call_id, outputs, exception=None): pass

        def on_interpreter_startup_start(self, call_id, instance, inputs): pass

        def on_interpreter_startup_end(self, call_id, outputs, exception=None): pass

        def on_interpreter_shutdown_start(self, call_id, instance, inputs): pass

        def on_interpreter_shutdown_end(self, call_id, outputs, exception=None): pass

    ACTIVE_CALL_ID = contextvars.ContextVar("active_call_id", default=None)
    _OPERATIONS = {"execute": "execute", "invoke_tool": "tool_call",
                   "start": "startup", "shutdown": "shutdown"}

    def with_callbacks(fn):
        """DSPy's with_callbacks for an interpreter's four methods: the
        instance's callbacks' start hooks, the call with ACTIVE_CALL_ID set
        to its id, then their end hooks; a hook that raises is ignored."""
        op = _OPERATIONS[fn.__name__]

        def hooks(instance, which):
            for cb in getattr(instance, "callbacks", []):
                yield cb, getattr(cb, f"on_interpreter_{op}_{which}")

        def wrapper(instance, *args, **kwargs):
            if not getattr(instance, "callbacks", None):
                return fn(instance, *args, **kwargs)
            call_id = uuid.uuid4().hex
            inputs = inspect.getcallargs(fn, instance, *args, **kwargs)
            inputs.pop("self", None)
            for _, hook in hooks(instance, "start"):
                try:
                    hook(call_id=call_id, instance=instance, inputs=inputs)
                except Exception:   # as DSPy: a broken callback is not our failure
                    pass
            token = ACTIVE_CALL_ID.set(call_id)
            results, exception = None, None
            try:
                results = fn(instance, *args, **kwargs)
                return results
            except BaseException as e:
                exception = e
                raise
            finally:
                ACTIVE_CALL_ID.reset(token)
                for _, hook in hooks(instance, "end"):
                    try:
                        hook(call_id=call_id, outputs=results, exception=exception)
                    except Exception:
                        pass

        wrapper.__name__ = fn.__name__
        wrapper.__qualname__ = fn.__qualname__
        wrapper.__doc__ = fn.__doc__
        wrapper.__wrapped__ = fn
        return wrapper


MODES = {"ro": "ro", "rw": "rw", "overlay": "overlay",
         "read-only": "ro", "read-write": "rw"}
LISTING_LIMIT = 20      # entries named per mount, then a summary
NAME_MAX = 40           # characters of a listed name
SCAN_MAX = 5000         # directory entries read per mount
SUBMIT_ENDS = "SUBMIT ended the cell"


class Mount(typing.NamedTuple):
    """A host directory (or file) the cells see at virtual_path: mode "ro"
    (reads only), "rw" (writes land on the host) or "overlay" (writes kept
    until the end of that execute(), never on the host); "read-only" and
    "read-write" are taken too. dolsot's --mount HOST:VIRTUAL:MODE."""

    virtual_path: str
    host_path: str
    mode: str = "ro"


def _mount(m):
    if isinstance(m, dict):
        m = Mount(**m)
    elif not isinstance(m, Mount):
        m = Mount(*m)
    if m.mode not in MODES:
        raise ValueError(f"mount {m.virtual_path!r}: mode {m.mode!r} is not one of "
                         f"{', '.join(MODES)}")
    host = os.path.abspath(os.fspath(m.host_path))
    if not os.path.exists(host):
        raise ValueError(f"mount {m.virtual_path!r}: {host} does not exist")
    return Mount(m.virtual_path, host, MODES[m.mode])


def _cut(name):
    return name if len(name) <= NAME_MAX else name[:NAME_MAX - 1] + "…"


def listing(path, limit=LISTING_LIMIT):
    """What a mount's top level holds, for the model: up to limit names
    (a directory's with a trailing /), else counts by extension and the
    first few names; at most SCAN_MAX entries are read."""
    if not os.path.isdir(path):
        return "a file"
    names, dirs, more = [], set(), False
    try:
        with os.scandir(path) as it:
            for e in it:
                if len(names) == SCAN_MAX:
                    more = True
                    break
                names.append(e.name)
                if e.is_dir(follow_symlinks=False):
                    dirs.add(e.name)
    except OSError as e:
        return f"(cannot list: {e.strerror})"
    names.sort()
    if not names:
        return "(empty)"
    if len(names) <= limit:
        return ", ".join(_cut(n) + ("/" if n in dirs else "") for n in names)
    nfiles = len(names) - len(dirs)
    exts = collections.Counter(os.path.splitext(n)[1] or "(no extension)"
                               for n in names if n not in dirs)
    by_ext = ", ".join(f"{x} ×{c}" for x, c in exts.most_common(5))
    if len(exts) > 5:
        by_ext += ", ..."
    ndirs = len(dirs)
    head = (f"{'over ' if more else ''}{nfiles:,} file{'' if nfiles == 1 else 's'} and "
            f"{ndirs:,} director{'y' if ndirs == 1 else 'ies'}")
    sample = ", ".join(_cut(n) for n in names[:3])
    return f"{head} ({by_ext}; e.g. {sample})" if by_ext else f"{head} (e.g. {sample})"


_MODE_SAYS = {"ro": "read-only", "rw": "read-write: writes reach the host",
              "overlay": "writable, but what a step writes is gone when the step ends"}


def instructions(mounts=(), sandbox=True, timeout=None, memory=None, recursion=None,
                 listing_limit=LISTING_LIMIT):
    """The text RLM puts in its prompt about this environment."""
    lines = [
        "- Real CPython 3.11 with its whole standard library and the packages "
        "installed on the host; variables, functions and imports persist from "
        "step to step.",
        "- Tools are plain functions (help(name) shows one's signature); a tool "
        "that fails raises HostToolError (a RuntimeError) with its message.",
        "- SUBMIT(...) ends the step at once and hands over the final output.",
    ]
    if not sandbox:
        lines.append("- Files: the host's file system, as the host's user.")
    elif mounts:
        lines.append("- Files: only these directories (and a private /tmp, "
                     "emptied after each step); no network:")
        for m in mounts:
            what = f"  - {m.virtual_path} ({_MODE_SAYS[m.mode]})"
            if listing_limit:
                what += " holding " + listing(m.host_path, listing_limit)
            lines.append(what)
    else:
        lines.append("- Files: none of the host's; only a private /tmp, emptied "
                     "after each step. No network.")
    limits = []
    if timeout is not None:
        limits.append(f"{timeout:g} s per step (a step that runs out is undone)")
    if memory is not None:
        limits.append(f"{memory // (1 << 20)} MiB of memory (MemoryError beyond)")
    if recursion is not None:
        limits.append(f"call depth {recursion} (RecursionError beyond)")
    if limits:
        lines.append("- Limits: " + "; ".join(limits) + ".")
    return "\n".join(lines)


def _limits(resource_limits, timeout):
    """(timeout, memory bytes, recursion depth) from DSPy-style limits."""
    rl = dict(resource_limits or {})
    unknown = set(rl) - {"max_memory", "max_duration_secs", "max_recursion_depth"}
    if unknown:
        raise ValueError(f"resource_limits: unknown keys {sorted(unknown)}; known: "
                         "max_memory, max_duration_secs, max_recursion_depth")
    duration = rl.get("max_duration_secs")
    if duration is not None and timeout is not None and duration != timeout:
        raise ValueError("give the duration once: timeout or resource_limits"
                         "['max_duration_secs']")
    memory, depth = rl.get("max_memory"), rl.get("max_recursion_depth")
    for name, v in (("max_memory", memory), ("max_recursion_depth", depth)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise ValueError(f"resource_limits['{name}'] must be a positive int, not {v!r}")
    if memory is not None and memory < 32 << 20:
        raise ValueError("resource_limits['max_memory'] must be at least 32 MiB")
    return (duration if duration is not None else timeout), memory, depth


class _FlagRepl(Repl):
    """A Repl whose calls carry flags of the binary Repl has no argument
    for (--sandbox, --mount, --memory, --recursion-limit) and
    DOLSOT_TOOL_TIMEOUT."""

    flags = ()
    tool_timeout = None

    def _run_argv(self, *args, **kwargs):
        argv, env = super()._run_argv(*args, **kwargs)
        if self.tool_timeout is not None:
            env["DOLSOT_TOOL_TIMEOUT"] = repr(float(self.tool_timeout))
        return argv + list(self.flags), env


def _jsonable(name, value):
    if hasattr(value, "model_dump"):   # a pydantic model, as DSPy sends them
        value = value.model_dump(mode="json")
    if isinstance(value, (set, frozenset)):
        value = sorted(value, key=repr)
    try:
        return json.dumps(value, default=_container)
    except (TypeError, ValueError) as e:
        raise CodeInterpreterError(f"variable {name!r}: {type(value).__name__} cannot "
                                   f"be sent to the interpreter ({e})") from None


def _container(v):
    if isinstance(v, (set, frozenset, tuple)):
        return sorted(v, key=repr) if not isinstance(v, tuple) else list(v)
    if hasattr(v, "model_dump"):
        return v.model_dump(mode="json")
    raise TypeError(f"{type(v).__name__} is not JSON")


def _variables_cell(variables, reserved):
    """A cell that assigns each variable (JSON's round trip: a tuple or a
    set arrives as a list, as in DSPy's own interpreter)."""
    lines = []
    for name, value in variables.items():
        if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name) \
                or name in reserved:
            raise CodeInterpreterError(f"Invalid variable name: {name!r}")
        text = _jsonable(name, value)
        lines.append(f"{name} = __import__('json').loads({text!r})")
    lines.append("None")
    return "\n".join(lines)


def _submit_tool(fields, box):
    """SUBMIT as a host tool: its parameters the output fields' names (one
    `output` when RLM gave none), its call recorded in box, then an error
    that ends the cell."""
    names = [f["name"] for f in fields or ()] or ["output"]

    def SUBMIT(**kwargs):
        box.append(kwargs if fields else kwargs["output"])
        raise RuntimeError(SUBMIT_ENDS)

    SUBMIT.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names])
    SUBMIT.__doc__ = "Submit the final output; ends the step."
    return SUBMIT


class _Factory:
    """DolsotInterpreter.factory(...): a zero-argument callable for RLM's
    interpreter_factory, with the execution_instructions its instances have."""

    def __init__(self, cls, kwargs):
        self._cls, self._kwargs = cls, kwargs
        self.execution_instructions = cls._instructions_for(**kwargs)

    def __call__(self):
        return self._cls(**self._kwargs)


class DolsotInterpreter:
    """A DSPy CodeInterpreter: each thread's cells in a dolsot session of
    its own, in a sandbox by default.

    tools: name -> callable, called from cells as plain functions (RLM adds
    its own to this dict). mounts: Mount tuples (or dicts, or (virtual,
    host, mode) tuples). resource_limits: max_memory (bytes, --memory),
    max_duration_secs (the cell's timeout), max_recursion_depth
    (--recursion-limit). sandbox: kernel isolation (--sandbox; mounts
    imply it). max_sessions: how many cells run at once (default: the
    CPU count). callbacks: DSPy callbacks of this instance.
    mount_listing_limit: names listed per mount in execution_instructions
    (0: only the path and mode). tool_timeout: seconds one tool call (an
    llm_query) may take before the cell gets TimeoutError
    (DOLSOT_TOOL_TIMEOUT, default 30). The other arguments are Repl's.
    """

    execution_instructions = instructions()

    def __init__(self, tools=None, *, mounts=(), resource_limits=None, sandbox=True,
                 max_sessions=None, callbacks=None, output_fields=None,
                 mount_listing_limit=LISTING_LIMIT, tool_timeout=None, inject=None,
                 timeout=None,
                 max_output=None, store=None, typecheck=None, ty_bin=None, binary=None,
                 namespace=None):
        self.tools = dict(tools or {})
        self.output_fields = output_fields
        self.callbacks = list(callbacks or [])
        self.mounts = [_mount(m) for m in ([mounts] if isinstance(mounts, Mount)
                                           else mounts or ())]
        self.sandbox = bool(sandbox or self.mounts)
        timeout, self.memory, self.recursion_limit = _limits(resource_limits, timeout)
        self.max_sessions = max_sessions or os.cpu_count() or 4
        if isinstance(self.max_sessions, bool) or not isinstance(self.max_sessions, int) \
                or self.max_sessions < 1:
            raise ValueError(f"max_sessions must be a positive int, not {max_sessions!r}")
        try:
            self._repl = _FlagRepl(inject, timeout, max_output, store, typecheck, ty_bin,
                                   binary=binary, namespace=namespace)
        except DolsotError as e:
            raise CodeInterpreterError(str(e)) from e
        self._repl.flags = self._flags()
        if tool_timeout is not None:
            if isinstance(tool_timeout, bool) or not isinstance(tool_timeout, (int, float)) \
                    or not 0 < tool_timeout < float("inf"):
                raise ValueError(f"tool_timeout must be a positive number of seconds, "
                                 f"not {tool_timeout!r}")
            self._repl.tool_timeout = tool_timeout
        self.execution_instructions = instructions(
            self.mounts, self.sandbox, self._repl.timeout, self.memory,
            self.recursion_limit, mount_listing_limit)
        self._pool = threading.BoundedSemaphore(self.max_sessions)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._sessions = []
        self._prefix = f"dspy-{uuid.uuid4().hex[:12]}"
        self._started = False
        self._closed = False

    @classmethod
    def factory(cls, **kwargs):
        """A callable for dspy.RLM(interpreter_factory=...) that makes an
        instance with these arguments; it carries their
        execution_instructions, which RLM reads once, at construction."""
        cls._instructions_for(**kwargs)   # a bad argument fails here
        return _Factory(cls, kwargs)

    @staticmethod
    def _instructions_for(mounts=(), resource_limits=None, sandbox=True, timeout=None,
                          mount_listing_limit=LISTING_LIMIT, **_):
        ms = [_mount(m) for m in ([mounts] if isinstance(mounts, Mount) else mounts or ())]
        t, memory, depth = _limits(resource_limits, timeout)
        return instructions(ms, bool(sandbox or ms), t, memory, depth, mount_listing_limit)

    def _flags(self):
        flags = ["--sandbox"] if self.sandbox else []
        for m in self.mounts:
            flags += ["--mount", f"{m.host_path}:{m.virtual_path}:{m.mode}"]
        if self.memory is not None:
            flags += ["--memory", str(self.memory)]
        if self.recursion_limit is not None:
            flags += ["--recursion-limit", str(self.recursion_limit)]
        return tuple(flags)

    # -- the session of this thread -----------------------------------------

    @property
    def session(self):
        """The dolsot session id of the calling thread (made on first use)."""
        sid = getattr(self._local, "session", None)
        if sid is None:
            with self._lock:
                sid = f"{self._prefix}-{len(self._sessions) + 1}"
                self._sessions.append(sid)
            self._local.session = sid
            self._local.sent = None
        return sid

    def _check_open(self):
        if self._closed:
            raise CodeInterpreterError("this DolsotInterpreter was shut down; make a new one")

    # -- the protocol ---------------------------------------------------------

    @with_callbacks
    def start(self):
        """Ready the interpreter (idempotent): the binary was found and the
        store checked by the constructor; each thread's session is made by
        its first cell, so nothing is held here."""
        self._check_open()
        self._started = True

    @with_callbacks
    def invoke_tool(self, tool_name, kwargs):
        """Run one of self.tools for a cell (DSPy's hook for tool calls)."""
        fn = self.tools.get(tool_name)
        if fn is None:
            raise CodeInterpreterError(f"Unknown tool: {tool_name}")
        result = fn(**kwargs)
        if inspect.isawaitable(result):
            import asyncio
            result = asyncio.run(_awaited(result))
        return result

    def _host_tools(self, ctx, box):
        """The callables a cell gets: each tool through invoke_tool, under
        the execute()'s callback context; SUBMIT recording into box."""
        out = {}
        for name, fn in list(self.tools.items()):   # other threads' RLMs update it
            if name == "SUBMIT":
                continue
            out[name] = self._routed(name, fn, ctx)
        out["SUBMIT"] = _submit_tool(self.output_fields, box)
        return out

    def _routed(self, name, fn, ctx):
        sig = inspect.signature(fn)
        positional = [p.name for p in sig.parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]

        def call(*args, **kwargs):
            kwargs = {**dict(zip(positional, args)), **kwargs}
            return _sendable(ctx.copy().run(self.invoke_tool, name, kwargs))

        call.__signature__ = sig
        call.__doc__ = inspect.getdoc(fn) or ""
        return call

    @with_callbacks
    def execute(self, code, variables=None):
        """Run code in the calling thread's session. Returns its output
        (stdout, stderr, the trailing expression's repr, warnings) or None
        when there is none; FinalOutput when it called SUBMIT."""
        self._check_open()
        if not isinstance(code, str):
            raise CodeInterpreterError(f"code must be a str, not {type(code).__name__}")
        if not code.strip():
            return None
        box = []
        tools = self._host_tools(contextvars.copy_context(), box)
        with self._pool:
            repl = _copy_repl(self._repl, tools)
            if variables:
                self._send_variables(repl, variables, tools)
            result = self._run(repl, code)
        if box:
            return FinalOutput(box[0])
        return _outcome(result)

    def _send_variables(self, repl, variables, tools):
        cell = _variables_cell(variables, set(tools))
        if cell == getattr(self._local, "sent", None):
            return
        r = self._run(repl, cell)
        if not r.ok:
            raise CodeInterpreterError(f"could not set the variables: {r.error}")
        self._local.sent = cell

    def _run(self, repl, code):
        try:
            return repl.run(self.session, code)
        except (DolsotError, ValueError) as e:
            raise CodeInterpreterError(str(e)) from e

    @with_callbacks
    def shutdown(self):
        """Forget every session this instance made; it cannot run again."""
        if self._closed:
            return
        self._closed = True
        with self._lock:
            sessions, self._sessions = self._sessions, []
        for sid in sessions:
            try:
                self._repl.reset(sid)
            except DolsotError:
                pass

    def __call__(self, code, variables=None):
        return self.execute(code, variables)

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.shutdown()

    def __repr__(self):
        return (f"DolsotInterpreter(tools={sorted(self.tools)!r}, mounts={self.mounts!r}, "
                f"sandbox={self.sandbox!r}, max_sessions={self.max_sessions!r})")


async def _awaited(aw):
    return await aw


def _sendable(value):
    """A tool's result as the cell gets it: JSON as it is, a pydantic model
    dumped, anything else its str() (DSPy's own interpreter does alike)."""
    try:
        json.dumps(value, allow_nan=False)
        return value
    except (TypeError, ValueError):
        pass
    if hasattr(value, "model_dump"):
        return _sendable(value.model_dump(mode="json"))
    return str(value)


def _copy_repl(base, tools):
    repl = _FlagRepl.__new__(_FlagRepl)
    repl.__dict__.update(base.__dict__)
    repl.tools = tools
    return repl


def _outcome(r):
    """execute()'s answer for a finished cell, or the error to raise."""
    if r.raw is None:   # dolsot ran no cell: a busy session, a refused store
        raise CodeInterpreterError(r.error or "dolsot failed")
    if r.status == "timeout":
        raise CodeInterpreterError(f"{r.error}; the session is as it was before this cell")
    if not r.ok:
        ename = (r.raw.get("error") or {}).get("ename", "")
        text = _output(r)
        message = "\n".join([text] * bool(text) + [r.error] + r.hints)
        if ename in ("SyntaxError", "IndentationError", "TabError"):
            raise SyntaxError(message)
        raise CodeExecutionError(message)
    return _output(r) or None


def _output(r):
    parts = [r.stdout, r.stderr]
    if r.value is not None:
        parts.append(r.value + "\n")
    parts += [w + "\n" for w in r.warnings]
    if r.dropped:
        parts.append("warning: not kept for the next step (cannot be saved): " +
                     ", ".join(r.dropped) + "\n")
    return "".join(p for p in parts if p).rstrip("\n")


__all__ = ["DolsotInterpreter", "Mount", "FinalOutput", "CodeInterpreterError",
           "CodeExecutionError", "CodeInterpreter", "BaseCallback", "with_callbacks",
           "HAVE_DSPY", "instructions", "listing"]
