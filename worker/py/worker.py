"""dolsot worker: the Python half of one call.

worker.c initializes the interpreter, imports this module as _dolsot_worker
and calls run() once.  The cell's namespace is the interpreter's own
__main__ module, so functions and classes defined in a cell belong to
__main__, as in a REPL, and dill (imported only when needed) pickles them by
value with their globals as a reference to the session namespace.

The session blob, value by value, is _dolsot_session's (session.py);
the state carried outside the namespace is _dolsot_state's (state.py).
"""

# The C module rather than ast: ast imports re, enum and functools,
# several milliseconds of every cold call.
import _ast
import errno
import importlib
import sys
import time
import types

import _dolsot

# The flags, as frame.h defines them.
RES_OK = _dolsot.RES_OK
RES_SAVE = _dolsot.RES_SAVE
RES_RAN = _dolsot.RES_RAN
RES_REJECTED = _dolsot.RES_REJECTED
REQ_TYPECHECK = _dolsot.REQ_TYPECHECK
REQ_CARRY = _dolsot.REQ_CARRY
REQ_SANDBOX = _dolsot.REQ_SANDBOX
REQ_JSON = _dolsot.REQ_JSON
REQ_DESCRIBE = _dolsot.REQ_DESCRIBE
REQ_LIVE = _dolsot.REQ_LIVE
MAX_ERROR_LINES = 20
# The deepest recursion dolsot's own pickling may use, whatever limit a cell
# set.  Without a bound, a value nested past what the 8 MB C stack holds
# (between 10,000 and 100,000 levels, by shape) kills the worker and every
# name of the call with it; with it, a RecursionError drops just that value.
# A level costs the pickler two or three of these: lists, dicts, tuples and
# objects with __reduce__ or __getstate__ nested 200,000 deep are dropped,
# 3,000 deep kept (tests/check_hostile.c).
DUMP_RECURSION_MAX = 20000


def _import_pickle():
    """Import the C pickler without importing functools.

    _pickle takes one thing from functools when it initializes: partial,
    which is _functools.partial.  The real functools imports collections,
    operator, reprlib and more, about 2 ms of every cold call, so _pickle
    is shown a module holding just that class, which is then removed: a
    cell that imports functools gets the real one, and functools.partial
    is the very class _pickle holds."""
    if "_pickle" in sys.modules or "functools" in sys.modules:
        return
    import _functools
    lean = type(sys)("functools")
    lean.partial = _functools.partial
    sys.modules["functools"] = lean
    try:
        import _pickle  # noqa: F401
    finally:
        if sys.modules.get("functools") is lean:
            del sys.modules["functools"]


_import_pickle()
_main = sys.modules["__main__"]
_session = _dolsot.embedded("session")
_state = _dolsot.embedded("state")
_Fatal = _session.Fatal
_reason = _session.reason   # one short line: why a name was dropped, a load failed
# Version 1 sessions refer to the loader by this name.
_dill_loads = _session._dill_loads
_limits = {}          # the limits of this call that are set, by option name
_flags = 0            # the request's REQ_* bits
# In a live session's process (live.h), after each completed cell: what the
# next call goes on from instead of loading the store, which holds the same
# (see _live_state).  None elsewhere.
_live = None
# The answer's structured detail (issue 12), gathered during the call and
# joined to answer() by _detail_fields(): lists travel as NUL-separated
# items, built by _items().
_detail = {}
_last_event = None    # the last audit event, to tell a failed fork (max-procs)
_SPAWN_EVENTS = frozenset(("os.fork", "os.forkpty", "os.posix_spawn", "os.spawn",
                           "os.system", "os.exec", "subprocess.Popen"))
_LIMIT_WORDS = {"memory": "memory limit", "max-procs": "process limit",
                "max-file-size": "file size limit", "cpu-seconds": "CPU time limit",
                "recursion-limit": "recursion limit"}
# One word for each limit rlimits.c names, and for nothing else.
assert set(_LIMIT_WORDS) == set(_dolsot.LIMITS)


def _add_site_builtins():
    """exit(), quit() and help(), which the site module (not run here)
    defines in every other Python.  As site.setquit() and site.sethelper()
    do, without importing site, which imports os (about 1 ms)."""
    import builtins
    if not hasattr(builtins, "exit"):
        import _sitebuiltins
        eof = "Ctrl-D (i.e. EOF)"
        builtins.quit = _sitebuiltins.Quitter("quit", eof)
        builtins.exit = _sitebuiltins.Quitter("exit", eof)
        builtins.help = _sitebuiltins._Helper()


_add_site_builtins()


def _text(exc):
    """str(exc), which a cell's exception class can make fail too."""
    try:
        return str(exc)
    except BaseException as e:
        return f"<str() failed: {type(e).__name__}>"


def _repr(value):
    try:
        return repr(value)
    except BaseException as e:
        return f"<unrepresentable {type(value).__name__}: {_reason(e)}>"


class _LimitHit(Exception):
    """The cell reached one of the call's limits: the session is not saved."""

    def __init__(self, name, exc):
        super().__init__(name)
        self.name = name
        self.exc = exc


def _audit(event, args):
    global _last_event
    _last_event = event


def _limit_of(exc):
    """The name of the limit that exc shows was reached, or None."""
    if isinstance(exc, MemoryError) and "memory" in _limits:
        return "memory"
    if isinstance(exc, RecursionError) and "recursion-limit" in _limits:
        return "recursion-limit"
    if isinstance(exc, OSError) and exc.errno == errno.EFBIG and "max-file-size" in _limits:
        return "max-file-size"
    if "max-procs" in _limits:
        if (isinstance(exc, OSError) and exc.errno == errno.EAGAIN
                and _last_event in _SPAWN_EVENTS):
            return "max-procs"
        if isinstance(exc, RuntimeError) and str(exc) == "can't start new thread":
            return "max-procs"
    return None


def _check_memory(exc):
    """Outside the cell (loading, importing), only running out of memory can
    be one of the call's limits."""
    if isinstance(exc, MemoryError) and "memory" in _limits:
        raise _LimitHit("memory", exc) from None


def _format_limit(name, value):
    if name in ("memory", "max-file-size"):
        for unit, suffix in ((1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")):
            if value % unit == 0:
                return f"{value // unit}{suffix}"
    return str(value)


def answer(exit_code, flags=0, *, value=None, error=None, held=None, dropped=None,
           warnings=None, blob=None, limit=None, kept=None):
    """The worker's answer, by field name: the one place it is built.
    worker.c reads it by the names of frame.c's result table (exit_code,
    flags and the str or None fields), and blob, the new session as a list
    of bytes-like parts, which it writes back to back into the session's
    file.  The structured detail --json shows (_detail_fields()) joins it."""
    return {"exit_code": exit_code, "flags": flags, "value": value, "error": error,
            "held": held, "dropped": dropped, "warnings": warnings, "blob": blob,
            "limit": limit, "kept": kept, **_detail_fields()}


def _limit_answer(name, exc, max_output, held=None):
    """Drop the cell's state (it may hold the memory that ran out), then say
    which limit was hit (held: what the session, unchanged, holds)."""
    import gc
    error = _cap(describe(exc), max_output, "error")
    exc.__traceback__ = None
    for key in [k for k in _main.__dict__ if not (k.startswith("__") and k.endswith("__"))]:
        del _main.__dict__[key]
    gc.collect()
    error += (f"\ndolsot: the cell hit the {_LIMIT_WORDS[name]} "
              f"(--{name} {_format_limit(name, _limits[name])}); session unchanged")
    return answer(1, error=error, limit=name, held=held)


def import_toolboxes(toolboxes):
    """{alias: module}; the caller binds the aliases."""
    loaded = {}
    for module, alias in toolboxes:
        try:
            loaded[alias] = importlib.import_module(module)
        except BaseException as e:
            _check_memory(e)
            raise _Fatal(f"dolsot: toolbox '{module}' (alias {alias}) cannot be "
                         f"imported: {_reason(e)}") from None
    return loaded


def _cell_line(exc):
    if isinstance(exc, SyntaxError) and exc.filename == "<cell>":
        return exc.lineno
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<cell>":
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def exit_code_of(exc):
    try:
        code = getattr(exc, "exit_code", None)
    except BaseException:
        return 1
    if type(code) is int and 1 <= code <= 255:
        return code
    return 1


def describe(exc):
    """One line (or a few) an agent can act on: type, message, cell line."""
    name = type(exc).__name__
    if isinstance(exc, SyntaxError):
        msg = exc.msg or ""
    else:
        msg = _text(exc)
    lines = msg.splitlines()[:MAX_ERROR_LINES] or [""]
    first = f"{name}: {lines[0]}" if lines[0] else name
    line = _cell_line(exc)
    if line is not None:
        first += f" (line {line})"
    return "\n".join(_marked(text) for text in [first] + lines[1:])


def _marked(line):
    """A line the cell wrote that starts as one of dolsot's own is shown
    after a mark (output.h) in the text contract, as the cell's stderr is;
    --json keeps the cell's text as it is."""
    if _flags & REQ_JSON or not line.startswith(_dolsot.OWN_PREFIXES):
        return line
    return _dolsot.OWN_MARK + line


class _Forget:
    """What `del NAME` does in a cell for a name kept unloaded (the name is
    in the session, not in the namespace): the session forgets it."""

    NAME = "__dolsot_forget__"

    def __init__(self, kept, ended, ns):
        self.kept, self.ended, self.ns = kept, ended, ns

    def __call__(self, name):
        if name in self.kept:
            self.ended.add(name)
            self.ns.pop(name, None)
        else:
            del self.ns[name]


def _at(node, like):
    for attr in ("lineno", "col_offset", "end_lineno", "end_col_offset"):
        setattr(node, attr, getattr(like, attr))
    return node


def _forget_dels(body, names):
    """Rewrite `del NAME` of names kept unloaded, at the cell's top level
    (not inside a def or class), into calls of _Forget.  True if any."""
    hit = False
    for i in range(len(body) - 1, -1, -1):
        st = body[i]
        if isinstance(st, _ast.Delete):
            if any(isinstance(t, _ast.Name) and t.id in names for t in st.targets):
                hit = True
                body[i:i + 1] = [
                    _at(_ast.Expr(_at(_ast.Call(
                        _at(_ast.Name(_Forget.NAME, _ast.Load()), st),
                        [_at(_ast.Constant(t.id), st)], []), st)), st)
                    if isinstance(t, _ast.Name) and t.id in names
                    else _at(_ast.Delete([t]), st) for t in st.targets]
            continue
        if isinstance(st, (_ast.FunctionDef, _ast.AsyncFunctionDef, _ast.ClassDef)):
            continue
        for field in st._fields:
            value = getattr(st, field, None)
            if not isinstance(value, list):
                continue
            for item in value:
                if isinstance(item, (_ast.excepthandler, _ast.match_case)):
                    hit = _forget_dels(item.body, names) or hit
            if value and isinstance(value[0], _ast.stmt):
                hit = _forget_dels(value, names) or hit
    return hit


def _compile_cell(code, forget=None):
    """Parse the cell; returns (body code, last expression code or None).
    With forget (a _Forget), `del` of its names goes through it."""
    flags = _ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    if b"\0" in code:
        raise SyntaxError("source code cannot contain null bytes")
    tree = compile(code, "<cell>", "exec", _ast.PyCF_ONLY_AST | flags)
    if forget is not None and forget.kept and b"del" in code:
        if _forget_dels(tree.body, forget.kept):
            forget.ns[_Forget.NAME] = forget
    last = None
    if tree.body and isinstance(tree.body[-1], _ast.Expr):
        last = _ast.Expression(tree.body.pop().value)
    body = compile(tree, "<cell>", "exec", flags)
    return body, (compile(last, "<cell>", "eval", flags) if last else None)


def _reach_names(code):
    """The session names the cell can reach (reach.py), or None when that
    cannot be bounded: a cell that does not compile loads everything, and
    fails as it would have.  Its compiler warnings are the cell's own
    compile's to give."""
    try:
        if b"\0" in code:
            return None
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            obj = compile(code, "<cell>", "exec", _ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        return _dolsot.embedded("reach").code_names(obj)
    except Exception:
        return None


def _run_code(code_obj, ns):
    result = eval(code_obj, ns)
    if code_obj.co_flags & 0x80:  # CO_COROUTINE: the cell used top-level await
        import asyncio
        result = asyncio.run(result)
    return result


def _depth():
    frame, n = sys._getframe(1), 0
    while frame is not None:
        frame, n = frame.f_back, n + 1
    return n


def _head_tail(text, cap, what):
    """text within cap chars: its head and its tail (the cap's halves, as
    output.c keeps a stream's), each ending or starting at a line break
    when one is in its outer half, and a line between them saying what was
    kept and cut; with the "what\tkept\tcut\thead\ttail\tcut_bytes" line
    of --json's truncated, or None when text fits."""
    if not cap or len(text) <= cap:
        return text, None
    head, tail = text[:cap // 2], text[len(text) - (cap - cap // 2):]
    nl = head.rfind("\n")
    if nl >= 0 and nl + 1 > len(head) // 2:
        head = head[:nl + 1]
    nl = tail.find("\n")
    if 0 <= nl and nl + 1 <= len(tail) // 2:
        tail = tail[nl + 1:]
    cut = text[len(head):len(text) - len(tail)]
    cut_bytes = len(cut.encode("utf-8", "surrogatepass"))
    return (head + ("" if head.endswith("\n") or not head else "\n") +
            f"[{what} truncated: kept the first {len(head)} and the last {len(tail)} "
            f"chars; cut {cut_bytes} bytes ({len(cut)} chars) here]\n" + tail,
            f"{what}\t{len(head) + len(tail)}\t{len(cut)}\t{len(head)}\t{len(tail)}\t"
            f"{cut_bytes}")


def _cap(text, cap, what):
    text, cut = _head_tail(text, cap, what)
    if cut:
        _detail.setdefault("truncated", []).append(cut)
    return text


def _items(values):
    """A list of strs as NUL-terminated items (a NUL inside one becomes
    U+FFFD)."""
    return "".join(str(v).replace("\0", "\ufffd") + "\0" for v in values)


def _traceback(exc, code):
    """The traceback from the cell's first frame on, as lines (--json)."""
    import traceback
    try:
        frames = traceback.extract_tb(exc.__traceback__)
    except BaseException:
        frames = []
    while frames and frames[0].filename != "<cell>":
        frames.pop(0)
    lines = ["Traceback (most recent call last):"] if frames else []
    try:
        source = code.decode("utf-8", "replace").split("\n")
    except BaseException:
        source = []
    for fs in frames[:MAX_ERROR_LINES * 5]:
        lines.append(f'  File "{fs.filename}", line {fs.lineno}, in {fs.name}')
        text = (source[fs.lineno - 1] if fs.filename == "<cell>" and fs.lineno
                and fs.lineno <= len(source) else fs.line)
        if text and text.strip():
            lines.append("    " + text.strip())
    if isinstance(exc, SyntaxError) and exc.filename == "<cell>" and exc.text:
        lines.append(f'  File "<cell>", line {exc.lineno}')
        lines.append("    " + exc.text.strip())
    msg = _text(exc) if not isinstance(exc, SyntaxError) else (exc.msg or "")
    msg = (msg[:1000].splitlines() or [""])[0]
    lines.append(f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__)
    return lines


def _error_info(exc, code, cap, hints=()):
    """--json's error: ename, evalue (cut to its head and tail at the output cap), cell line (""
    when none), then the traceback lines, as items; the hints apart."""
    if not _flags & REQ_JSON:
        return
    msg = (exc.msg or "") if isinstance(exc, SyntaxError) else _text(exc)
    line = _cell_line(exc)
    _detail["error_info"] = _items([type(exc).__name__, _head_tail(msg, cap, "error")[0],
                                   "" if line is None else line] + _traceback(exc, code))
    if hints:
        _detail["hints"] = _items(hints)


def stringify(value, cap):
    return _cap(_repr(value), cap, "value")


def _session_names(ns, toolboxes, tools=None):
    return {k: v for k, v in ns.items()
            if not (k.startswith("__") and k.endswith("__"))
            and not (k in toolboxes and v is toolboxes[k])
            and not (tools and k in tools and v is tools[k])}


def _attach_tools(c, tools):
    """The host's tools (hostcall.py) into the namespace, as the
    toolboxes are: not saved, and a held value they hide kept.  A live
    process forgets the tools of its earlier calls."""
    ns = c.ns
    c.tools = _dolsot.embedded("hostcall").attach(tools) if tools is not None else {}
    for k, v in list(ns.items()):
        if (type(v) is types.FunctionType and v.__module__ == "dolsot.tools"
                and k not in c.tools):
            del ns[k]
    for name, fn in c.tools.items():
        held = ns.get(name)
        if name in ns and not (type(held) is types.FunctionType
                               and held.__module__ == "dolsot.tools"):
            c.hidden[name] = held
            c.notes.append(_hidden_note(name, "host tool"))
        ns[name] = fn


class _KeptUnloaded:
    """What the gate is shown for a name kept unloaded: a value of no known
    type, so the name is declared and typed Any."""


def _gate(code, ns, toolboxes, kept=(), tools=None):
    """The type gate (gate.py): (error text of a blocked cell, warning)."""
    try:
        import _dolsot
        # Only a call through a toolbox or a host tool can be blocked:
        # without either the checker would run for nothing.  A missing checker must cost
        # nothing too: look it up before compiling the gate.
        if not (toolboxes or tools) or _dolsot.which(_dolsot.ty_bin()) is None:
            return None, None
        gate = _dolsot.embedded("gate")
        held = _session_names(ns, toolboxes, tools)
        held.update((n, _KeptUnloaded()) for n in kept if n not in held)
        blocked, warning = gate.check(code, held, toolboxes, tools)
        if blocked is not None:
            _detail["diagnostics"] = _items(str(x if x is not None else "")
                                           for d in gate.last_blocking
                                           for x in (d[0], d[1], d[3], d[2]))
        return blocked, warning
    except BaseException as e:
        return None, f"warning: type gate skipped: {_reason(e)}"


def _hints(exc, code, ns, toolboxes, memory):
    """Hint lines for a failed cell (hints.py); never raises."""
    if not isinstance(exc, (TypeError, AttributeError, NameError, KeyError)):
        return []
    try:
        return _dolsot.embedded("hints").runtime_hints(exc, code, ns, toolboxes, memory)
    except BaseException:
        return []


def _unbound(code, ns, exc):
    """[(name, statement, error)] for the names a failed cell would have
    bound but did not (hints.py)."""
    try:
        hints = _dolsot.embedded("hints")
        names = hints.unbound_after_failure(code, ns, exc)
        where = hints.statements(code, names)
        return [(n, where.get(n, ""), type(exc).__name__) for n in names]
    except BaseException:
        return []


def _statements(code):
    """For the session's memory: the line of the cell that assigns each
    dropped name ("name = ...", "name: T = ...", "name, other = ..."), found
    by a plain scan: a call that raised nothing must not import the hints."""
    def find(names):
        try:
            lines = code.decode("utf-8", "replace").split("\n")
        except BaseException:
            return {}
        out = {}
        parts = [part for line in lines for part in line.split(";")]
        for name in names:
            for part in parts:
                text = part.strip()
                rest = text[len(name):].lstrip()
                if text.startswith(name) and rest[:1] in ("=", ":", ",") and rest[:2] != "==":
                    out[name] = text if len(text) <= 80 else text[:77] + "..."
                    break
        return out
    return find


def flush():
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass


def _apply_env(env):
    """Make os.environ the environment the request carries.

    isolate.c has already set the process's own environment; os.environ is
    a copy Python took when it started, which in a warm worker is the
    zygote's.  On the cold path the two already agree."""
    import os
    for name in [n for n in os.environ if n not in env]:
        try:
            del os.environ[name]
        except OSError:
            pass  # "" or a name with "=" (execve allows "=x"): not unsettable
    for name, value in env.items():
        if os.environ.get(name) != value:
            os.environ[name] = value


def warm_up(modules, preload=()):
    """Prepare a zygote: import dill and the toolboxes now, then the
    modules a session's blob records (preload), so each forked call starts
    with them loaded.  Returns (files, modules, -1, None): the user
    modules' files, and the modules imported, a line each; or (None, None,
    i, why) when preload[i] may not be imported ahead."""
    _session._import_dill()
    _dolsot.embedded("reach")   # every call asks it what its cell reaches
    for name in modules:
        importlib.import_module(name)
    if modules:
        _warm_gate(modules)
    return _preload(preload)


def grow(preload):
    """In a zygote forked from another (the same environment, a subset of
    preload already imported): import the rest, as warm_up does."""
    return _preload(preload)


def _preload(preload):
    """warm_up's imports of a session's modules, and its answer."""
    import warnings
    filters = list(warnings.filters)
    for i, name in enumerate(preload):
        why = _preload_one(name)
        if why:
            return None, None, i, why
    if preload:
        _state.note_preload(filters)
    _state.look_at_modules()
    # What the zygote holds now lives as long as it does: out of the
    # collector's sight, a worker's collections never write into (and so
    # copy) the pages of those objects.
    import gc
    gc.freeze()
    return ("\n".join(_module_files()), "\n".join(_session.recordable_modules()),
            -1, None)


def _preload_one(name):
    """Import name as loading a session would; why it must not be imported
    in a zygote after all, or None.  What a cold load sees would differ
    from what a process forked from us sees if the import failed, left a
    Python thread running (threads do not survive fork), or changed the
    environment or the working directory (a worker resets both to its
    call's) or sys.path (a call measures its changes against what it
    starts with)."""
    import os
    import threading
    if name in sys.modules:
        return None
    threads, env, cwd = set(threading.enumerate()), dict(os.environ), os.getcwd()
    path = list(sys.path)
    try:
        importlib.import_module(name)
    except BaseException as e:
        return f"importing it raised {type(e).__name__}: {e}"
    started = [t.name for t in threading.enumerate() if t not in threads and t.is_alive()]
    if started:
        return "importing it started a thread (" + ", ".join(started) + ")"
    if dict(os.environ) != env:
        return "importing it changed the environment"
    if os.getcwd() != cwd:
        return "importing it changed the working directory"
    if sys.path != path:
        return "importing it changed sys.path"
    return None


def _warm_gate(modules):
    """With toolboxes the type gate may run on every call: load its code
    (and hints.py, which it shares) and take one dry pass over the
    toolboxes, so a forked call does not pay that first-use cost.  No
    checker runs and nothing of a session is involved; failing is harmless,
    the gate then warms itself in the call as on the cold path."""
    try:
        import _dolsot
        gate = _dolsot.embedded("gate")
        gate.build_source("pyright", "pass\n", {},
                          {f"_dolsot_tb{i}": sys.modules[n] for i, n in enumerate(modules)})
    except Exception:
        pass


def _module_files():
    import importlib.machinery as machinery
    import os
    files_loaders = (machinery.SourceFileLoader, machinery.SourcelessFileLoader,
                     machinery.ExtensionFileLoader)
    system = tuple(p for p in sys.path if p.startswith(sys.base_prefix + "/lib/"))
    system += ("/usr/lib/python3/", "/usr/local/lib/python3.11/dist-packages")
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if not path or path.startswith(system):
            continue
        try:
            st = os.stat(path)
        except OSError:
            # A module read from a file that is gone since (not one from a
            # zip or built in): a size no file has marks the zygote stale,
            # or a call would run on a module the cold path cannot import.
            if path.startswith("/") and isinstance(getattr(module, "__loader__", None),
                                                    files_loaders):
                yield f"{path}\t-1\t-1"
            continue
        yield f"{path}\t{st.st_mtime_ns}\t{st.st_size}"


def after_fork():
    """In a call forked from a zygote: what a fresh process would not share."""
    np = sys.modules.get("numpy.random")
    if np is not None:
        np.seed()  # the legacy global RNG would repeat across calls otherwise
    _rearm_signals()


def _rearm_signals():
    """The fork put every signal back to its default (proc_child.h) while
    Python's table still names its handlers (KeyboardInterrupt on SIGINT,
    any a toolbox set when the zygote imported it): set them again, so a
    signal reaches the handler Python reports, as in a fresh process."""
    signal = sys.modules.get("signal")
    if signal is None:
        return
    for sig in signal.valid_signals():
        try:
            handler = signal.getsignal(sig)
            if callable(handler):
                signal.signal(sig, handler)
        except (OSError, ValueError):
            pass


def _lines(*groups):
    text = "\n".join(line for group in groups for line in group if line)
    return text or None


def _unloaded(dropped):
    if not dropped:
        return None
    return ("warning: dropped names that could not be loaded: "
            + ", ".join(f"{name} ({why})" for name, why in dropped))


def _tick(phase):
    """Note how long the phase that ends now took, in ns."""
    t = _detail["timings"]
    now = time.monotonic_ns()
    t[phase] = now - t.get("_last", t["start"])
    t["_last"] = now


def _rich_value(value):
    """The trailing value has forms beyond its repr (rich.py shows them)."""
    t = type(value)
    if any(getattr(t, m, None) is not None
           for m in ("_repr_html_", "_repr_markdown_", "_repr_png_")):
        return True
    pd = sys.modules.get("pandas")
    return pd is not None and isinstance(value, pd.DataFrame)


def _display(*objs):
    """display(obj, ...): show values as the cell's displays; a matplotlib
    figure becomes a PNG image and is closed (dolsot(1))."""
    _dolsot.embedded("rich").display(objs, bool(_flags & REQ_JSON))


def _shown():
    """Render the figures the cell left open, and put this call's displays
    in the answer; returns the warning lines.  Costs nothing when the cell
    used neither pyplot nor display()."""
    if "_dolsot_rich" not in sys.modules:
        if "matplotlib.pyplot" not in sys.modules:
            return []
    rich = _dolsot.embedded("rich")
    try:
        rich.open_figures()
        displays, notes = rich.collect()
    except BaseException as e:
        return [f"warning: displays not shown: {_reason(e)}"]
    items = []
    for d in displays:
        data = d["data"]
        meta = d["metadata"]
        items.append(f"{meta.get('width', 0)}\t{meta.get('height', 0)}\t{len(data)}")
        for mime, payload in data.items():
            items += [mime, payload]
    if items:
        _detail["displays"] = _items(items)
    return notes


def _describe(session, ns, loaded, mounts, flags, notes, tools=None):
    """The --describe answer: the description, no cell, nothing saved."""
    d = _dolsot.embedded("describe")
    held = _session_names(ns, loaded, tools)
    text, data = d.describe(loaded, session, held, bool(flags & REQ_SANDBOX),
                            mounts or [], tools or {})
    _detail["describe"] = text
    _detail["describe_json"] = d.dump(data)
    return answer(0, RES_OK, warnings=notes)


def _closed_note(closed):
    if not closed:
        return None
    return ("warning: names that hold a file that could not be reopened loaded "
            "with that file closed: " + ", ".join(f"{n} ({why})" for n, why in closed))


def _kept_note(unloaded):
    """One line naming each value this call could not load, and why."""
    if not unloaded:
        return None
    return ("warning: names that could not be loaded in this call are kept, "
            "unchanged, for a call that can load them (one with the right "
            "--toolbox, or outside the sandbox): "
            + ", ".join(f"{n} ({why})" for names, _, _, why in unloaded for n in names))


def _hidden_note(alias, what="toolbox alias"):
    return (f"warning: {what} '{alias}' hides the session's '{alias}' "
            "in this call; the session keeps it and it is back in a call "
            "without that alias")


def _kept_use(exc, kept_names):
    """For a NameError on a name kept unloaded: the line that says so."""
    name = getattr(exc, "name", None) if isinstance(exc, NameError) else None
    if name not in kept_names:
        return []
    return [f"dolsot: '{name}' is in the session but could not be loaded in "
            f"this call ({kept_names[name]}); it is kept for a call that can "
            "load it"]


def _lost_note(stored):
    """The live-only values the stored session's live process held: gone
    now that this call loads the store."""
    if stored is None or not stored.live_only:
        return None
    return ("warning: values that lived only in the session's live process are "
            "lost (it ended, or this call is not --live): "
            + ", ".join(f"{n} ({t})" for n, t in stored.live_only))


def _live_state(carry, count, unloaded, state, ended, saved):
    """What a live process goes on from after a completed cell: the Carry
    (its baselines are those of the process's first call, so the store
    gets the state carried since then), the counter, the units kept
    unloaded (a version 3 one copied out of the session file's mapping),
    and from saved, what dump() said of its save: the hints' memory, the
    units of the values saved by ref next time (session.py's reuse), the
    hashes the store has once the save is committed."""
    gone = set(state) | set(ended)
    kept = [(tuple(n for n in names if n not in gone), members,
             body if isinstance(body, _session.Body) else bytes(body), why)
            for names, members, body, why in unloaded]
    return {"carry": carry, "count": count, "memory": saved["memory"],
            "unloaded": [u for u in kept if u[0]],
            "reuse": saved["reuse"], "have": saved["have"]}


def _tab_lines(pairs):
    return "\n".join(f"{name}\t{why}" for name, why in pairs) or None


class _Call:
    """One run()'s state, handed from step to step: what the load brought
    back, the gate said, the cell did, for the save to store."""

    def __init__(self, code, session, max_output, flags, live, default_recursion):
        self.code, self.session, self.max_output, self.flags = code, session, max_output, flags
        self.live = live                # the live process's state, or None
        self.ns = _main.__dict__
        self.default_recursion = default_recursion
        self.notes = []
        self.tools = {}                 # the host's tools by name (hostcall.py)
        self.gate_warning = None
        self.exit_code, self.res_flags = 0, RES_OK | RES_RAN
        self.value = self.error = None


def _held_now(c):
    """What the session holds as loaded, '\n'-separated: the names in the
    namespace (not the host's tools), those a toolbox alias hides, and
    those not loaded (kept unloaded, or not reached by the cell).  The
    answer of a call that ends before its save (the session rolls back)
    says these."""
    names = (set(_session_names(c.ns, c.loaded, c.tools)) | set(c.hidden)
             | set(c.kept_names))
    if c.stored is not None:
        for unit in c.stored.skipped:
            names.update(unit[0])
    return "\n".join(sorted(names))


def _load_step(c, blob, toolboxes, tools=None):
    """Import the toolboxes and bring the session back into the namespace:
    None, or the answer when the call ends here."""
    live, ns = c.live, c.ns
    if live is not None:
        _dolsot.release_bytes()   # the mapped bytes the cells let go of
    try:
        stored = (_session.load(c.session, blob, c.units)
                  if blob is not None and live is None else None)
        # Toolboxes first, as a live interpreter and a warm zygote imported
        # them: before any cell's state is back.
        loaded = import_toolboxes(toolboxes)
    except _Fatal as e:
        return answer(1, error=str(e))
    except _LimitHit as e:
        return _limit_answer(e.name, e.exc, c.max_output)
    except MemoryError as e:
        if "memory" in _limits:
            return _limit_answer("memory", e, c.max_output)
        raise
    c.stored, c.loaded = stored, loaded
    carry = _state.Carry(bool(c.flags & REQ_CARRY)) if live is None else live["carry"]
    c.carry = carry
    carry.warnings = []
    c.unloaded = [] if live is None else live["unloaded"]
    c.notes.append(_lost_note(stored))
    try:
        # A live process restores nothing: its Carry, from its first call,
        # measures what changed against the state that call loaded.
        if live is None and stored is not None:
            carry.restore_early(stored.carry, _session.loads_piece)
            wanted = (None if c.flags & (REQ_LIVE | REQ_DESCRIBE) or not stored.worth_choosing()
                      else stored.choose(_reach_names(c.code), set(loaded)))
            c.notes.append(_unloaded(stored.load_into(ns, wanted)))
            c.notes.append(_closed_note(stored.closed))
            c.unloaded = stored.unloaded
            c.notes.append(_kept_note(c.unloaded))
        if live is None:
            carry.restore_late()
    except _Fatal as e:
        return answer(1, error=str(e), warnings=_lines(c.notes, carry.warnings))
    c.hidden = {alias: ns[alias] for alias in loaded if alias in ns}
    c.notes.extend(_hidden_note(alias) for alias, v in c.hidden.items()
                   if v is not loaded[alias])
    ns.update(loaded)
    _attach_tools(c, tools)
    c.kept_names = {n: why for names, _, _, why in c.unloaded for n in names}
    c.ended = set()
    c.count = (live["count"] if live is not None else
               stored.count if stored is not None else 0) + 1
    _detail["count"] = c.count
    c.held_before = _held_now(c)
    try:
        _dolsot.note_held(c.held_before)
    except OSError:
        pass                            # then a timeout says nothing held
    _tick("load")
    return None


def _gate_step(c):
    """The type gate, when asked for: None, or the answer of a blocked cell."""
    blocked, c.gate_warning = (_gate(c.code, c.ns, c.loaded, c.kept_names, c.tools)
                               if c.flags & REQ_TYPECHECK else (None, None))
    _tick("gate")
    if blocked is not None:
        return answer(1, RES_REJECTED, error=blocked, held=c.held_before,
                      warnings=_lines(c.notes, c.carry.warnings, [c.gate_warning]))
    return None


def _execute_step(c):
    """Run the cell: None with its outcome in c, or the answer when the
    call ends here (the cell ended the interpreter, or hit a limit).  It
    runs the cell itself (through _run_code), so the cell's frame is as
    deep below run() as it ever was: without --recursion-limit, the
    interpreter's limit leaves a cell the same depth."""
    code, ns, max_output, live, stored = c.code, c.ns, c.max_output, c.live, c.stored
    c.memory, c.failed = (live["memory"] if live is not None else
                          stored.memory if stored is not None else {}), ()
    try:
        body, last = _compile_cell(code, _Forget(c.kept_names, c.ended, ns))
        if "recursion-limit" in _limits:
            # Counted from the cell's own frame, not from the worker's.
            sys.setrecursionlimit(_depth() + _limits["recursion-limit"])
        _run_code(body, ns)
        result = _run_code(last, ns) if last is not None else None
        if result is not None:
            c.value = stringify(result, max_output)
            if _rich_value(result):
                _dolsot.embedded("rich").show_value(result, c.value, bool(c.flags & REQ_JSON))
    except SystemExit as e:
        flush()
        _tick("cell")
        if c.flags & REQ_JSON:
            text = _repr(e.code)
            _detail["error_info"] = _items(["SystemExit",
                                            _head_tail(text, max_output, "error")[0], ""])
        return answer(1, RES_RAN, held=c.held_before,
                      error=_cap(f"SystemExit: {_repr(e.code)}", max_output, "error") +
                      ": the cell ended the interpreter, so it did not complete; "
                      "session unchanged",
                      warnings=_lines(c.notes, c.carry.warnings, [c.gate_warning], _shown()))
    except BaseException as e:
        if "recursion-limit" in _limits:
            sys.setrecursionlimit(c.default_recursion)
        limit = _limit_of(e)   # before anything else raises an audit event
        if limit:
            flush()
            _error_info(e, code, max_output)
            return _limit_answer(limit, e, max_output, c.held_before)
        c.exit_code, c.res_flags = exit_code_of(e), RES_RAN
        error = _cap(describe(e), max_output, "error")
        unloaded_use = _kept_use(e, c.kept_names)
        if stored is not None and stored.skipped:
            # The hints look through every held name, as after a full load.
            c.notes.append(_unloaded(stored.load_skipped(ns)))
        hints = unloaded_use or _hints(e, code, ns, c.loaded, c.memory)
        _error_info(e, code, max_output, hints)
        c.error = "\n".join([error] + hints)
        c.failed = _unbound(code, ns, e)
    if "recursion-limit" in _limits:
        sys.setrecursionlimit(c.default_recursion)
    flush()
    c.shown = _shown()
    _tick("cell")
    return None


def _save_step(c):
    """Pickle the session for the store (and, live, keep what does not
    pickle in this process): the call's answer."""
    global _live
    live, carry, stored = c.live, c.carry, c.stored
    warnings = [c.gate_warning]
    try:
        state = _session_names(c.ns, c.loaded, c.tools)
        for alias, held_value in c.hidden.items():
            if alias not in state:      # not rebound by the cell
                state[alias] = held_value
        pieces, keep = carry.save()
        limit = min(sys.getrecursionlimit(), max(c.default_recursion, DUMP_RECURSION_MAX))
        live_index = {} if c.flags & REQ_LIVE else None
        reuse, have = ((live["reuse"], live["have"]) if live is not None else
                       (stored.reuse, stored.have) if stored is not None else (None, ()))
        # One more for this step's own frame, so that a value meets the
        # limit as deep as when run() called the dump itself; the call
        # leaves the limit itself behind (a live process's next call
        # starts from it).
        sys.setrecursionlimit(limit + 1)
        try:
            new_blob, held, dropped, lost, still = _session.dump(
                state, pieces, keep, carry.stored(), c.unloaded, c.ended, c.memory,
                c.failed, _statements(c.code), c.count, reuse, live=live_index,
                pieces_modules=_state.pieces_modules, units=c.units, have=have,
                skipped=stored.skipped if stored is not None else ())
        finally:
            sys.setrecursionlimit(limit)
        carry.lost(lost)
    except _Fatal as e:
        return answer(1, c.res_flags & RES_RAN, value=c.value, held=c.held_before,
                      error="\n".join(filter(None, [c.error, str(e)])),
                      warnings=_lines(c.notes, carry.warnings, warnings, c.shown))
    except BaseException as e:
        if isinstance(e, MemoryError) and "memory" in _limits:
            return _limit_answer("memory", e, c.max_output, c.held_before)
        warning = f"warning: session '{c.session}' not saved: {_reason(e)}"
        return answer(max(c.exit_code, 1), c.res_flags, value=c.value, error=c.error,
                      held=c.held_before,
                      warnings=_lines(c.notes, carry.warnings, warnings + [warning], c.shown))
    _tick("dump")
    if live_index is not None:
        # What cannot be saved lives on in this process: held, marked.
        _live = _live_state(carry, c.count, c.unloaded, state, c.ended, live_index)
        held = sorted(held + [f"{name} (live only)" for name, _ in dropped])
        dropped = []
    return answer(c.exit_code, c.res_flags | RES_SAVE, value=c.value, error=c.error,
                  held="\n".join(held), dropped=_tab_lines(dropped),
                  warnings=_lines(c.notes, carry.warnings, warnings, c.shown), blob=new_blob,
                  kept=_tab_lines(still))


def run(code, session, blob, toolboxes, max_output, flags, env=None, limits=None,
        describe_mounts=None, units=None, tools=None):
    """Run one cell: load, gate, execute and save, each step able to end
    the call with its answer.  Returns its answer(): held is names one per
    line, dropped and kept "name<TAB>reason" lines, limit the name of the
    limit the cell hit (limits holds those of the call by option name, 0
    for unset).  blob, the session read, is a memoryview of the session's
    file mapped read-only, or None.  With REQ_DESCRIBE, describe_mounts
    lists the --mount paths as (path, mode), and no cell runs.  (A limited
    recursion depth counts from the cell's frame: see _execute_step.)
    tools, the host's tools (hostcall.py): (fd, declarations' JSON) or
    None."""
    global _limits, _flags
    t0 = time.monotonic_ns()
    _detail.clear()
    _detail["timings"] = {"start": t0}
    _flags = flags
    _limits = {name: value for name, value in (limits or {}).items() if value}
    if "max-procs" in _limits:
        sys.addaudithook(_audit)
    default_recursion = sys.getrecursionlimit()
    # A live process that completed a cell holds the session: it loads
    # nothing, and keeps its own environment (the cells' changes in it).
    live = _live if flags & REQ_LIVE else None
    if env is not None and live is None:
        _apply_env(env)
    c = _Call(code, session, max_output, flags, live, default_recursion)
    c.units = units
    ended = _load_step(c, blob, toolboxes, tools)
    if ended is None and flags & REQ_DESCRIBE:
        return _describe(session or None, c.ns, c.loaded,
                         describe_mounts, flags, _lines(c.notes, c.carry.warnings), c.tools)
    return ended or _gate_step(c) or _execute_step(c) or _save_step(c)


def _detail_fields():
    """The structured detail of the answer (issue 12), by the names of
    frame.c's result table: str values, but "count", an int.  timings are
    "phase<TAB>ns" lines, "start" being the CLOCK_MONOTONIC time run()
    began."""
    out = {k: v for k, v in _detail.items() if k not in ("timings", "truncated")}
    timings = _detail.get("timings", {})
    out["timings"] = "\n".join(f"{k}\t{v}" for k, v in timings.items() if k != "_last")
    if _detail.get("truncated"):
        out["truncated"] = "\n".join(_detail["truncated"])
    return out


if not hasattr(sys.modules["builtins"], "display"):
    sys.modules["builtins"].display = _display
