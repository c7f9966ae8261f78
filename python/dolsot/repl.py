"""Repl: the subprocess backend, one dolsot binary call per cell.

Every call runs `dolsot --json` with the settings as flags and variables,
so the binary applies them exactly as on the command line: an argument
given to Repl() is passed explicitly and wins; a setting left as None is
not passed, so the binary's environment variable applies, else its
default. The cell goes on stdin (no argument-size limit, no `--`).
Calls go through the warm server like any CLI call (DOLSOT_SERVER).
"""

import asyncio
import datetime
import json
import math
import os
import signal
import subprocess
import sysconfig
import time

from . import _binary, _checks, handle as _handle, store as _store, tools as _tools
from .errors import DolsotError
from .result import Move, SessionInfo, failure, from_json

# Repl.export's formats (the binary's --format).
EXPORT_FORMATS = ("ipynb", "py", "md")

# How long a cancelled call gets to end its cell and clean up after SIGTERM
# before its process group is killed outright.
TERM_GRACE = 5.0


_STDLIB = {os.path.realpath(sysconfig.get_paths()[k]) for k in ("stdlib", "platstdlib")}


def _module_root(mod):
    """The sys.path entry a module object was imported from, or None for a
    built-in module or one of this interpreter's standard library (the
    worker has its own, and another Python's must not shadow it)."""
    f = getattr(mod, "__file__", None)
    if not f:
        return None
    root = os.path.dirname(os.path.abspath(f))
    if os.path.basename(f).startswith("__init__."):
        root = os.path.dirname(root)
    for _ in range(mod.__name__.count(".")):
        root = os.path.dirname(root)
    real = os.path.realpath(root)
    if real in _STDLIB or os.path.dirname(real) in _STDLIB:   # lib-dynload too
        return None
    return root


def _number(name, v, minimum, integer=False):
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int,) if integer else (int, float)):
        kind = "an int" if integer else "a number"
        raise TypeError(f"{name} must be {kind} or None, not {type(v).__name__}")
    if not (v >= minimum and math.isfinite(v)):
        raise ValueError(f"{name} must be a finite number >= {minimum}, not {v!r}")
    return v


class Repl:
    """Stateful Python cells in sessions, each cell in its own worker.

    inject maps an alias to a module or an importable module name; timeout
    (seconds), max_output (characters, 0 = no cap), typecheck (bool) and
    ty_bin fall back to DOLSOT_TIMEOUT, DOLSOT_MAX_OUTPUT, DOLSOT_TYPECHECK
    and DOLSOT_TY_BIN, then to the binary's defaults. store is a
    dolsot.store.FileStore, MemoryStore or Store, any DOLSOT_STORE value
    ("file", "memory", "redis://...", "cmd:...") or a directory (default:
    DOLSOT_STORE and DOLSOT_CACHE_DIR). namespace names the sessions'
    namespace (default: DOLSOT_NAMESPACE, then "default", the command
    line's): sessions(), reset("all") and the session ids stay within it.
    binary is the dolsot executable (default: DOLSOT_BIN, the source
    tree's, then PATH).
    tools maps a name to a callable of this process that cells call as a
    plain function of that name (README, "Host tools"): its signature
    (from inspect.signature) is the cell's; arun awaits a coroutine
    function on the running loop and runs a plain one in a thread.
    """

    def __init__(self, inject=None, timeout=None, max_output=None, store=None,
                 typecheck=None, ty_bin=None, *, binary=None, tools=None, namespace=None):
        self.inject = inject
        self.tools = dict(tools or {})
        for name, fn in self.tools.items():
            _tools.declare(name, fn)   # a bad name or signature fails here
        self.timeout = _number("timeout", timeout, 0)
        if self.timeout == 0:
            raise ValueError("timeout must be > 0")
        self.max_output = _number("max_output", max_output, 0, integer=True)
        if typecheck is not None and not isinstance(typecheck, bool):
            raise TypeError(f"typecheck must be a bool or None, not "
                            f"{type(typecheck).__name__}")
        self.typecheck = typecheck
        if ty_bin is not None:
            ty_bin = os.fspath(ty_bin)
            if not ty_bin:
                raise ValueError("ty_bin must not be empty")
        self.ty_bin = ty_bin
        self.namespace = _checks.namespace(namespace)
        self.store = _store.resolve(store)
        self.binary = _binary.locate(binary)
        if isinstance(self.store, _store.MemoryStore):
            self.store._used_by(self.binary)
        if isinstance(self.store, _store.Store):
            self.store.check(self.binary)
        self._toolboxes = None

    # -- what a call runs -------------------------------------------------

    def _resolved_inject(self):
        if self._toolboxes is None:
            self._toolboxes = _checks.inject_modules(self.inject)
        return self._toolboxes

    def _env(self, toolboxes=()):
        env = dict(os.environ)
        if self.max_output is not None:
            env["DOLSOT_MAX_OUTPUT"] = str(self.max_output)
        if self.typecheck is not None:
            env["DOLSOT_TYPECHECK"] = "1" if self.typecheck else "0"
        if self.ty_bin is not None:
            env["DOLSOT_TY_BIN"] = self.ty_bin
        if self.store is not None:
            env.update(self.store.env())
        if self.namespace is not None:
            env["DOLSOT_NAMESPACE"] = self.namespace
        # A module object is re-imported by name in the worker: make the
        # directory it came from findable there.
        roots = []
        for _, _, mod in toolboxes:
            root = mod is not None and _module_root(mod)
            if root and root not in roots:
                roots.append(root)
        if roots:
            old = env.get("PYTHONPATH", "")
            have = old.split(os.pathsep) if old else []
            add = [r for r in roots if r not in have]
            if add:
                env["PYTHONPATH"] = os.pathsep.join(add + have)
        return env

    def _run_argv(self, session, fork=None, replace=False, call_id=None, stream=False,
                  detach_after=None):
        toolboxes = self._resolved_inject()
        argv = [self.binary, "--json-stream" if stream else "--json", "--session", session]
        if detach_after is not None:
            argv += ["--detach-after", repr(float(detach_after))]
        if call_id is not None:
            argv += ["--call-id", call_id]
        if fork is not None:
            argv += ["--fork", fork] + (["--replace"] if replace else [])
        for a, name, _ in toolboxes:
            argv += ["--toolbox", f"{name}:{a}"]
        if self.timeout is not None:
            argv += ["--timeout", repr(float(self.timeout))]
        return argv, self._env(toolboxes)

    def _prepare(self, session, code, fork, replace, call_id, stream=False,
                 detach_after=None):
        _checks.session_id(session)
        _checks.code_text(code)
        _checks.fork(session, fork, replace)
        _checks.call_id(call_id)
        if detach_after is not None:
            _number("detach_after", detach_after, 0)
            if stream or self.tools:
                raise ValueError("detach_after does not go with on_stdout, on_stderr or "
                                 "tools: a detached cell outlives this call (use "
                                 "Handle.peek)")
        argv, env = self._run_argv(session, fork, replace, call_id, stream, detach_after)
        return argv, env, code.encode("utf-8", "surrogatepass")

    # -- results ----------------------------------------------------------

    @staticmethod
    def _answer(rc, out, err):
        """A Result from a finished binary; DolsotError for a usage error."""
        text = err.decode("utf-8", "replace").strip()
        if rc == 2:
            raise DolsotError(text or "dolsot exited 2 (usage error)")
        if out.strip():
            try:
                return from_json(json.loads(out))
            except (ValueError, KeyError, TypeError) as e:
                raise DolsotError(f"dolsot printed output that is not its --json "
                                  f"result ({e}): {out[:200]!r}") from e
        if rc < 0:
            return failure(f"dolsot: the call was killed by signal {-rc}; "
                           "session unchanged")
        return failure(text or f"dolsot exited {rc} without a result", rc or 1)

    # -- the API ------------------------------------------------------------

    def run(self, session, code, *, fork=None, replace=False, call_id=None,
            on_stdout=None, on_stderr=None, detach_after=None):
        """Run code in session and return its Result.

        fork: start session as a copy of that session's stored state first
        (a copy of bytes; the source is left as it is), then run code in it.
        The session must not exist unless replace is True. A missing source,
        or an existing session without replace, is a failed Result.
        call_id: the binary's --call-id; a call repeating the id of a call
        that saved returns that call's Result again without running code,
        so a retry after a lost answer applies the cell once.
        on_stdout, on_stderr: called with each chunk of the cell's output
        (a str) while it runs (the binary's --json-stream: coalesced, at
        most 8192 bytes a chunk, a flood thinned); the Result is the same
        as without them. An exception a callback raises ends the call (its
        session unchanged) and is raised here.
        detach_after: seconds; a cell still running then is returned as a
        dolsot.Handle (wait, peek, cancel) and runs on under its timeout,
        committing when it completes; one that ends sooner is its Result."""
        stream = on_stdout is not None or on_stderr is not None
        argv, env, data = self._prepare(session, code, fork, replace, call_id, stream,
                                        detach_after)
        host = _tools.Host(self.tools) if self.tools else None
        try:
            proc = subprocess.Popen(argv + (host.argv() if host else []),
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, env=env,
                                    start_new_session=True,
                                    pass_fds=host.fds() if host else ())
            serving = host and (host.started() or host.thread())
            try:
                if stream:
                    out, err = _streamed(proc, data,
                                         {"stdout": on_stdout, "stderr": on_stderr})
                else:
                    out, err = proc.communicate(data)
            except BaseException:
                _stop_group(proc.pid, proc.poll)
                proc.wait()
                raise
            if serving:
                serving.join()
        finally:
            if host:
                host.close()
        return _handle.answer(self, proc.returncode, out, err)

    async def arun(self, session, code, *, fork=None, replace=False, call_id=None,
                   on_stdout=None, on_stderr=None, detach_after=None):
        """run() for event loops: an asyncio subprocess. Cancelling the task
        ends the call (its worker and every process it started); the session
        stays as it was before the cell. on_stdout and on_stderr as run()'s
        (plain functions, called from the event loop); detach_after as
        run()'s (cancelling then ends the call only until it detaches)."""
        stream = on_stdout is not None or on_stderr is not None
        argv, env, data = self._prepare(session, code, fork, replace, call_id, stream,
                                        detach_after)
        host = _tools.Host(self.tools) if self.tools else None
        serving = None
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv, *(host.argv() if host else []), stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
                start_new_session=True, pass_fds=host.fds() if host else (),
                limit=_LINE_MAX)
            if host:
                host.started()
                serving = asyncio.ensure_future(host.aserve())
            try:
                if stream:
                    out, err = await _astreamed(proc, data,
                                                {"stdout": on_stdout, "stderr": on_stderr})
                else:
                    out, err = await proc.communicate(data)
            except BaseException:
                await _astop_group(proc)
                raise
            if serving:
                await serving
        finally:
            if serving and not serving.done():
                serving.cancel()
            if host:
                host.close()
        return _handle.answer(self, proc.returncode, out, err)

    def list_running(self):
        """This user's detached cells that still run (of this store
        directory), as dolsot.Handles."""
        return _handle.running(self)

    def sessions(self):
        """The sessions of the configured store in this Repl's namespace,
        sorted by id."""
        obj = self._housekeeping(["--list-sessions", "--json"])
        return [SessionInfo(s["id"], s["size"],
                            datetime.datetime.fromisoformat(s["last_used"]))
                for s in obj["sessions"]]

    def reset(self, session):
        """Forget one session, or every session of this Repl's namespace
        with "all"; returns how many were removed."""
        _checks.session_id(session, allow_all=True)
        return self._housekeeping(["--reset", session, "--json"])["removed"]

    def history(self, session):
        """The session's kept states, oldest first, the current one last:
        each the object --history --json gives for it (a dict: "state",
        "current", "gone", "kind", "time", "status", "code", "names",
        "result", "rolled_back"...; see dolsot(1)). DolsotError when the
        session does not exist."""
        _checks.session_id(session)
        return self._housekeeping(["--history", session, "--json"])["states"]

    def undo(self, session):
        """Move the session back to the state before its current one (a
        commit of its own, so an undo can be undone); returns a Move.
        DolsotError with the binary's message when there is no earlier
        state, or its state is gone from the store."""
        _checks.session_id(session)
        return Move(**self._housekeeping(["--undo", session, "--json"]))

    def checkout(self, session, state):
        """Move the session to its kept state number state (an int from 1,
        as history lists it); returns a Move. DolsotError with the binary's
        message when that state is not kept, or gone."""
        _checks.session_id(session)
        _checks.state_number(state)
        return Move(**self._housekeeping(["--checkout", f"{session}@{state}", "--json"]))

    def _housekeeping(self, args):
        p = subprocess.run([self.binary] + args, stdin=subprocess.DEVNULL,
                           capture_output=True, env=self._env(), check=False)
        if p.returncode != 0:
            raise DolsotError(p.stderr.decode("utf-8", "replace").strip() or
                              f"dolsot {args[0]} exited {p.returncode}")
        return json.loads(p.stdout)

    def export(self, session, path, format="ipynb"):
        """Write session's history to path as a Jupyter notebook ("ipynb",
        nbformat 4.5), a script of # %% cells ("py") or a markdown report
        ("md"): each kept state's cell with its outputs, the cells rolled
        back, the moves back (the binary's --export). The file is replaced
        whole (written beside it, then renamed). Returns path. A session
        that does not exist is a DolsotError."""
        _checks.session_id(session)
        if format not in EXPORT_FORMATS:
            raise ValueError(f"format must be one of {', '.join(EXPORT_FORMATS)}, "
                             f"not {format!r}")
        p = subprocess.run([self.binary, "--export", session, "--format", format],
                           stdin=subprocess.DEVNULL, capture_output=True, env=self._env(),
                           check=False)
        if p.returncode != 0:
            raise DolsotError(p.stderr.decode("utf-8", "replace").strip() or
                              f"dolsot --export exited {p.returncode}")
        _replace_file(os.fspath(path), p.stdout)
        return path

    def __repr__(self):
        return (f"Repl(inject={self.inject!r}, timeout={self.timeout!r}, "
                f"max_output={self.max_output!r}, store={self.store!r}, "
                f"typecheck={self.typecheck!r}, ty_bin={self.ty_bin!r}, "
                f"binary={self.binary!r}, namespace={self.namespace!r})")


def _killpg(pid, sig):
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass


# The longest line --json-stream prints: a result object (each text in it
# capped, at most 6 bytes of JSON a byte) is well within it.
_LINE_MAX = 64 << 20


def _chunk(line, callbacks):
    """Hand a --json-stream chunk line to its callback; False for any other
    line (the result object, the last line)."""
    try:
        obj = json.loads(line)
    except ValueError:
        return False
    if not isinstance(obj, dict) or "status" in obj or obj.get("stream") not in callbacks:
        return False
    if callbacks[obj["stream"]] is not None:
        callbacks[obj["stream"]](obj["text"])
    return True


def _streamed(proc, data, callbacks):
    """communicate() for --json-stream: chunk lines to their callbacks as
    they come; (the rest of stdout, stderr)."""
    import threading
    err = []

    def feed():
        try:
            proc.stdin.write(data)
            proc.stdin.close()
        except OSError:
            pass
        err.append(proc.stderr.read())

    side = threading.Thread(target=feed, daemon=True)
    side.start()
    rest = []
    for line in proc.stdout:
        if rest or not _chunk(line, callbacks):
            rest.append(line)
    proc.wait()
    side.join()
    return b"".join(rest), err[0] if err else b""


async def _astreamed(proc, data, callbacks):
    async def feed():
        try:
            proc.stdin.write(data)
            await proc.stdin.drain()
            proc.stdin.close()
        except OSError:
            pass
        return await proc.stderr.read()

    side = asyncio.ensure_future(feed())
    rest = []
    try:
        while line := await proc.stdout.readline():
            if rest or not _chunk(line, callbacks):
                rest.append(line)
    except BaseException:
        side.cancel()
        raise
    err = await side
    await proc.wait()
    return b"".join(rest), err


def _stop_group(pid, poll):
    """SIGTERM the call's group (the binary then kills its worker and all it
    started, and commits nothing); SIGKILL the group if it is still there
    after TERM_GRACE seconds."""
    _killpg(pid, signal.SIGTERM)
    end = time.monotonic() + TERM_GRACE
    while poll() is None and time.monotonic() < end:
        time.sleep(0.01)
    _killpg(pid, signal.SIGKILL)


async def _astop_group(proc):
    _killpg(proc.pid, signal.SIGTERM)
    try:
        await asyncio.shield(asyncio.wait_for(proc.wait(), TERM_GRACE))
    except (asyncio.TimeoutError, asyncio.CancelledError):
        pass
    _killpg(proc.pid, signal.SIGKILL)
    if proc.returncode is None:
        try:
            await asyncio.shield(proc.wait())
        except asyncio.CancelledError:
            pass


def _replace_file(path, data):
    """path holding data, or as it was: a new file beside it (the umask's
    mode), written and synced, renamed over it."""
    tmp = os.path.join(os.path.dirname(os.path.abspath(path)),
                       f".{os.path.basename(path)}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
