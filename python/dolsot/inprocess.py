"""InProcessSession: cells run in the host's own process, on a live dict.

No process boundary: injected values are used as they are (a connection,
a client, a generator), and what a cell binds stays in the namespace by
reference, never pickled. The price is isolation:

- The timeout is cooperative. A cell runs on a daemon thread; at the
  deadline the call returns a timeout Result (exit_code 124) and asks the
  thread to stop by raising TimeoutError in it. Python delivers that only
  between bytecodes, so a cell blocked in C (time.sleep, a socket read) or
  one that catches the exception goes on running on its leaked thread,
  nothing can kill it, and what it assigns later still lands in the
  namespace. Nothing is rolled back: there is no saved state to go back to.
- Output is captured per thread: what the cell's own thread prints is in
  Result.stdout; threads the cell starts print to the host's streams.
- An AST gate (ast_gate=dolsot.sandbox.check_ast, or any callable taking
  the parsed ast.Module and raising to refuse) can reject a cell before
  it runs. It is a mechanism, not a sandbox: see dolsot.sandbox.
"""

import ast
import asyncio
import ctypes
import importlib
import inspect
import io
import os
import sys
import threading
import traceback

from . import _checks, tools as _tools
from .errors import InvalidToolbox
from .result import Result, error_line

DEFAULT_TIMEOUT = 20.0
DEFAULT_MAX_OUTPUT = 100000
# How long a timed-out cell's thread is given to honour the stop request
# before the Result says it is still running.
STOP_GRACE = 0.2


def _env_number(name, default, cast):
    raw = os.environ.get(name, "")
    if raw == "":
        return default
    try:
        v = cast(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a valid number") from None
    if v < 0 or (cast is float and v == 0):
        raise ValueError(f"{name}={raw!r} is out of range")
    return v


class _Router:
    """sys.stdout/sys.stderr stand-in: a registered thread's writes go to
    its buffer, every other thread's to the stream that was there before
    (whose other attributes, encoding or fileno, it shows as its own)."""

    def __init__(self, orig):
        self.orig = orig
        self.buffers = {}

    def _target(self):
        return self.buffers.get(threading.get_ident(), self.orig)

    def write(self, s):
        return self._target().write(s)

    def flush(self):
        t = self._target()
        if t is not None:
            t.flush()

    def __getattr__(self, name):
        return getattr(self.orig, name)


_router_lock = threading.Lock()


def _router(name):
    with _router_lock:
        cur = getattr(sys, name)
        if not isinstance(cur, _Router):
            cur = _Router(cur)
            setattr(sys, name, cur)
        return cur


def _cut(s, cap, what):
    """s within cap chars as the binary cuts a text: its head and tail (the
    cap's halves, each at a line break when one is in its outer half) and a
    line between them saying what was kept and cut."""
    if s is None or not cap or len(s) <= cap:
        return s, None
    head, tail = s[:cap // 2], s[len(s) - (cap - cap // 2):]
    at = head.rfind("\n") + 1
    head = head[:at] if at > len(head) // 2 else head
    at = tail.find("\n") + 1
    tail = tail[at:] if 0 < at <= len(tail) // 2 else tail
    cut = s[len(head):len(s) - len(tail)]
    cut_bytes = len(cut.encode("utf-8", "surrogatepass"))
    mark = (f"[{what} truncated: kept the first {len(head)} and the last {len(tail)} "
            f"chars; cut {cut_bytes} bytes ({len(cut)} chars) here]\n")
    return (head + ("\n" if head and not head.endswith("\n") else "") + mark + tail,
            {"kept": len(head) + len(tail), "cut": len(cut), "head": len(head),
             "tail": len(tail), "cut_bytes": cut_bytes})


def _async_raise(thread_id, exc):
    """Ask a thread to raise exc at its next bytecode (CPython's only way to
    interrupt another thread; it cannot interrupt C code)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id),
                                               ctypes.py_object(exc))


class _Cell:
    """One cell on its own daemon thread."""

    def __init__(self, session, code):
        self.session = session
        self.code = code
        self.out = io.StringIO()
        self.err = io.StringIO()
        self.value = None
        self.exc = None
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._main, daemon=True,
                                       name="dolsot-inprocess-cell")

    def start(self, on_done=None):
        self.on_done = on_done
        self.stdout = _router("stdout")
        self.stderr = _router("stderr")
        self.thread.start()

    def _main(self):
        me = threading.get_ident()
        self.stdout.buffers[me] = self.out
        self.stderr.buffers[me] = self.err
        try:
            self.value = self.session._execute(self.code)
        except BaseException as e:  # the cell's failure is its Result
            self.exc = e
        finally:
            self.stdout.buffers.pop(me, None)
            self.stderr.buffers.pop(me, None)
            self.done.set()
            if self.on_done is not None:
                self.on_done()

    def abandon(self, why, wait=True):
        """Stop capturing this cell and ask its thread to stop; with wait, True
        if it did within STOP_GRACE."""
        ident = self.thread.ident
        self.stdout.buffers.pop(ident, None)
        self.stderr.buffers.pop(ident, None)
        if not self.done.is_set():
            _async_raise(ident, why)
        return self.done.wait(STOP_GRACE) if wait else self.done.is_set()


class InProcessSession:
    """A live namespace in this process; run() executes a cell against it.

    inject maps alias to any object (a module name, given as a str, is
    imported here); timeout and max_output fall back to DOLSOT_TIMEOUT and
    DOLSOT_MAX_OUTPUT, then to 20 s and 100000 characters (0 = no cap).
    ast_gate is called with each cell's ast.Module before it runs and
    refuses the cell by raising. tools maps a name to a callable the cells
    call under that name with its own signature; what it raises reaches
    the cell as HostToolError with its text; a coroutine function is
    awaited on arun's loop (run to its end by run).
    """

    def __init__(self, inject=None, timeout=None, max_output=None, ast_gate=None,
                 tools=None):
        if timeout is None:
            timeout = _env_number("DOLSOT_TIMEOUT", DEFAULT_TIMEOUT, float)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) \
                or not timeout > 0:
            raise ValueError(f"timeout must be a number > 0, not {timeout!r}")
        if max_output is None:
            max_output = _env_number("DOLSOT_MAX_OUTPUT", DEFAULT_MAX_OUTPUT, int)
        if isinstance(max_output, bool) or not isinstance(max_output, int) \
                or max_output < 0:
            raise ValueError(f"max_output must be an int >= 0, not {max_output!r}")
        if ast_gate is not None and not callable(ast_gate):
            raise TypeError("ast_gate must be callable")
        self.timeout = float(timeout)
        self.max_output = max_output
        self.ast_gate = ast_gate
        self.inject = {}
        for alias, v in (inject or {}).items():
            _checks.alias(alias)
            if isinstance(v, str):
                if not _checks.module_name(v):
                    raise InvalidToolbox(f"inject[{alias!r}]: {v!r} is not a "
                                         "dotted Python module name")
                try:
                    v = importlib.import_module(v)
                except ImportError as e:
                    raise InvalidToolbox(f"inject[{alias!r}]: cannot import "
                                         f"{v!r}: {e}") from e
            self.inject[alias] = v
        self._loop = None   # arun's, while it runs a cell
        for name, fn in (tools or {}).items():
            self.inject[name] = _tools.in_process(name, fn, lambda: self._loop)
        self.namespace = {}
        self.reset()

    def reset(self):
        """Empty the namespace, keeping only the injected values."""
        self.namespace.clear()
        self.namespace["__builtins__"] = __builtins__
        self.namespace["__name__"] = "__dolsot_cell__"
        self.namespace.update(self.inject)

    # -- running a cell ---------------------------------------------------

    def _execute(self, tree):
        """Run the parsed cell in the namespace; the trailing expression's
        value (not None) as repr, else None."""
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
        body = compile(tree, "<cell>", "exec", flags=flags, dont_inherit=True)
        tail = (compile(last, "<cell>", "eval", flags=flags, dont_inherit=True)
                if last is not None else None)
        is_async = any(c is not None and c.co_flags & inspect.CO_COROUTINE
                       for c in (body, tail))
        if is_async:
            async def both():
                await eval(body, self.namespace)
                if tail is None:
                    return None
                v = eval(tail, self.namespace)
                return (await v) if tail.co_flags & inspect.CO_COROUTINE else v
            value = asyncio.run(both())
        else:
            exec(body, self.namespace)
            value = eval(tail, self.namespace) if tail is not None else None
        return None if value is None else repr(value)

    def _prepare(self, code):
        """The parsed cell, or a Result if it does not parse or is refused."""
        _checks.code_text(code)
        try:
            tree = ast.parse(code, "<cell>")
        except SyntaxError as e:
            return None, self._failed(f"SyntaxError: {e.msg}", e.lineno, "error")
        if self.ast_gate is not None:
            try:
                self.ast_gate(ast.parse(code, "<cell>"))
            except Exception as e:
                msg = error_line(type(e).__name__, str(e)) + \
                    "; the AST gate refused the cell, so it did not run"
                return None, self._failed(msg, None, "rejected")
        return tree, None

    def _failed(self, error, line, status):
        if line:
            error += f" (line {line})"
        return self._result(status=status, error=error, exit_code=1)

    def _result(self, status="ok", value=None, stdout="", stderr="", error=None,
                exit_code=0, tb=(), warnings=()):
        truncated = {}
        stdout, truncated["stdout"] = _cut(stdout, self.max_output, "output")
        stderr, truncated["stderr"] = _cut(stderr, self.max_output, "output")
        value, truncated["value"] = _cut(value, self.max_output, "value")
        error, truncated["error"] = _cut(error, self.max_output, "error")
        truncated = {k: v for k, v in truncated.items() if v}
        held = sorted(n for n in self.namespace
                      if not (n.startswith("__") and n.endswith("__"))
                      and n not in self.inject)
        return Result(ok=status == "ok", value=value, stdout=stdout, error=error,
                      exit_code=exit_code, held=held, status=status,
                      stderr=stderr, session_state="live", traceback=list(tb),
                      truncated=truncated, warnings=list(warnings))

    def _finish(self, cell):
        e = cell.exc
        if e is None:
            return self._result(value=cell.value, stdout=cell.out.getvalue(),
                                stderr=cell.err.getvalue())
        code = getattr(e, "exit_code", None)
        if isinstance(code, bool) or not isinstance(code, int) or not 1 <= code <= 255:
            code = 1
        line = None
        tb = e.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == "<cell>":
                line = tb.tb_lineno
            tb = tb.tb_next
        return self._result(status="error", stdout=cell.out.getvalue(),
                            stderr=cell.err.getvalue(), exit_code=code,
                            error=error_line(type(e).__name__, str(e), line),
                            tb=traceback.format_exception(e))

    def _timed_out(self, cell):
        stopped = cell.abandon(TimeoutError)
        msg = (f"TimeoutError: cell exceeded its {self.timeout:g}s timeout; "
               "the in-process timeout is cooperative, and the namespace is not "
               "rolled back")
        warn = ("warning: the cell stopped when asked" if stopped else
                "warning: the cell is still running on a leaked daemon thread "
                "that cannot be stopped; what it assigns later lands in the "
                "namespace")
        return self._result(status="timeout", stdout=cell.out.getvalue(),
                            stderr=cell.err.getvalue(), error=msg,
                            exit_code=124, warnings=[warn])

    def run(self, code):
        """Run code against the namespace and return its Result."""
        tree, refused = self._prepare(code)
        if refused is not None:
            return refused
        cell = _Cell(self, tree)
        cell.start()
        if not cell.done.wait(self.timeout):
            return self._timed_out(cell)
        return self._finish(cell)

    async def arun(self, code):
        """run() for event loops: the cell runs on its thread while the loop
        goes on. Cancelling the task asks the cell to stop, as a timeout
        does, and cannot force it."""
        tree, refused = self._prepare(code)
        if refused is not None:
            return refused
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        self._loop = loop

        def wake():
            try:
                loop.call_soon_threadsafe(lambda: done.done() or done.set_result(None))
            except RuntimeError:   # a leaked cell that ended after its loop did
                pass

        cell = _Cell(self, tree)
        cell.start(on_done=wake)
        try:
            await asyncio.wait_for(asyncio.shield(done), self.timeout)
        except asyncio.TimeoutError:
            return self._timed_out(cell)
        except asyncio.CancelledError:
            cell.abandon(asyncio.CancelledError, wait=False)
            raise
        finally:
            self._loop = None
        return self._finish(cell)

    @property
    def held(self):
        """The names the cells have bound (injected aliases not included)."""
        return sorted(n for n in self.namespace
                      if not (n.startswith("__") and n.endswith("__"))
                      and n not in self.inject)

    def __repr__(self):
        return (f"InProcessSession(inject={self.inject!r}, timeout={self.timeout!r}, "
                f"max_output={self.max_output!r}, ast_gate={self.ast_gate!r})")


__all__ = ["InProcessSession"]
