"""dolsot type gate: check a cell against the toolboxes' signatures first.

Compiled into the binary and imported (as _dolsot_gate) only when the gate
is on.  check() writes one file to a private temporary directory:

    prelude   imports of each toolbox under its alias, then one declaration
              per name the session holds (its exact type when that is a
              plain builtin or a toolbox's own class the cell does not
              rebind, else Any)
    cell      the cell's lines unchanged, or indented into an async function
              when the cell awaits at top level

runs the checker on it (typegate.c, through _dolsot) within half of the
time the call has left, and keeps only error diagnostics that fall inside
the cell's lines, renumbered to the cell's own numbering.  Of those, only
the ones about a toolbox block the cell (blocking_ref): a call through a
toolbox alias whose arguments do not fit its signature, or an attribute of
the alias that does not exist.  Everything else the checker says about the
cell's own code is dropped: the cell runs, and Python is the judge of it.

Nothing here may block a cell the gate does not understand: every failure
of the gate itself, of the checker, or of reading its output lets the cell
run (fail open), with at most one warning line.
"""

import ast
import keyword
import os
import sys

import _dolsot

CELL_FILE = "_dolsot_cell.py"
OUTPUT_CAP = 1 << 20
MAX_SHOWN = 20
MIN_SECONDS = 0.05
INDENT = "    "

_EXACT = (int, float, complex, str, bytes, bytearray, bool, list, dict, set,
          frozenset, tuple)

# mypy is run in its most forgiving mode: these codes flag code that runs.
_MYPY_OFF = ("no-redef", "var-annotated", "has-type", "func-returns-value",
             "empty-body", "valid-type", "annotation-unchecked", "import",
             "truthy-function", "misc")
_MYPY_FLAGS = ("--show-column-numbers", "--show-error-codes", "--no-error-summary",
               "--no-pretty", "--no-color-output", "--hide-error-context",
               "--config-file=", "--follow-imports=silent", "--ignore-missing-imports",
               "--allow-redefinition", "--no-strict-optional", "--allow-untyped-globals",
               "--python-version", "3.11")

# pyright's rules that report code which runs, in a REPL at least.
_PYRIGHT_OFF = ("reportRedeclaration", "reportMissingImports", "reportMissingModuleSource",
                "reportOptionalMemberAccess", "reportOptionalSubscript",
                "reportOptionalIterable", "reportOptionalCall", "reportOptionalOperand",
                "reportOptionalContextManager", "reportPossiblyUnbound",
                "reportUnusedCoroutine", "reportUnusedExpression",
                "reportSelfClsParameterName", "reportPrivateImportUsage",
                "reportUntypedBaseClass", "reportTypedDictNotRequiredAccess",
                "reportInvalidTypeForm", "reportWildcardImportFromLibrary")

# ty's rules with long-standing names only: an unknown name is an error
# in some releases.  Its "possibly ..." rules are warnings by default.
_TY_OFF = ("unresolved-import", "invalid-type-form")


# The diagnostics that blocked the last cell: (line, column, message, code).
last_blocking = []


class _Skip(Exception):
    """The gate cannot check this cell; run it.  args[0] is a warning or None."""


def _parse(text):
    return compile(text, "<cell>", "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


def _awaits_at_top(code):
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    return bool(compile(code, "<cell>", "exec", flags).co_flags & 0x80)


def _toolbox_class(value, toolboxes):
    """'alias.Name' when value's class is a toolbox's own, at its top level
    (a dataclass a toolbox function returned, say), so the checker knows
    its fields; else None."""
    t = type(value)
    for alias, module in toolboxes.items():
        if getattr(module, t.__name__, None) is t and t.__module__ == module.__name__:
            return f"{alias}.{t.__name__}"
    return None


def _declaration(name, value, rebound, toolboxes):
    if isinstance(value, type) and not rebound:
        # A class from an earlier cell may be used in annotations.
        return f"class {name}(_dolsot_Any): pass"
    t = type(value)
    if not rebound and t in _EXACT:
        return f"{name}: _dolsot_b.{t.__name__} = _dolsot_v()"
    if not rebound and value is None:
        return f"{name}: None = None"
    own = None if rebound else _toolbox_class(value, toolboxes)
    if own is not None:
        return f"{name}: {own} = _dolsot_v()"
    return f"{name}: _dolsot_Any = _dolsot_v()"


def _prelude(kind, held, toolboxes, bound, assigned, wrapped, tools=None):
    lines = ["import builtins as _dolsot_b",
             "from typing import Any as _dolsot_Any",
             "def _dolsot_v() -> _dolsot_Any: return None"]
    for alias, module in toolboxes.items():
        lines.append(f"import {module.__name__} as {alias}")
    if tools:
        # The host's tools (hostcall.py), declared by their signatures.
        lines.append("import typing")
        hostcall = _dolsot.embedded("hostcall")
        lines += [hostcall.stub(fn.__dolsot_tool__) for fn in tools.values()]
    if "display" not in held:
        # The built-in display() of a call (rich.py).
        lines.append("def display(*objs: _dolsot_Any) -> None: ...")
    declared = set()
    for name in sorted(held):
        if name in toolboxes or not name.isidentifier() or keyword.iskeyword(name):
            continue
        declared.add(name)
        lines.append(_declaration(name, held[name], name in bound, toolboxes))
    # mypy fixes a variable's type at its first assignment, and would reject
    # a valid rebinding to another type: assigned names are Any.  A wrapped
    # cell's names are declared global, so they must exist at module level.
    extra = bound if wrapped else assigned if kind == "mypy" else set()
    if extra:
        for name in sorted(extra - declared - set(toolboxes)):
            if name.isidentifier() and not keyword.iskeyword(name):
                lines.append(f"{name}: _dolsot_Any = _dolsot_v()")
    return lines


def build_source(kind, text, held, toolboxes, tools=None):
    """(file text, line offset, column offset) for a cell; raises _Skip."""
    try:
        wrapped = _awaits_at_top(text)
        tree = _parse(text)
    except (SyntaxError, ValueError):
        raise _Skip(None) from None     # the run reports it, with the line
    bound, assigned = _dolsot.embedded("hints").bound_names(tree)
    lines = _prelude(kind, held, toolboxes, bound, assigned, wrapped, tools)
    cell_lines = text.split("\n")
    col = 0
    if wrapped:
        lines.append("async def _dolsot_cell() -> None:")
        names = sorted(n for n in bound if n.isidentifier())
        if names:
            lines.append(INDENT + "global " + ", ".join(names))
        cell_lines = [INDENT + ln for ln in cell_lines]
        col = len(INDENT)
    offset = len(lines)
    source = "\n".join(lines + cell_lines) + "\n"
    try:
        compile(source, CELL_FILE, "exec", ast.PyCF_ONLY_AST)
    except (SyntaxError, ValueError):
        raise _Skip(None) from None     # e.g. a star import inside the wrapper
    return source, offset, col


def _cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or ""
    if not base.startswith("/"):
        home = os.environ.get("HOME") or ""
        if not home.startswith("/"):
            return os.devnull
        base = os.path.join(home, ".cache")
    path = os.path.join(base, "dolsot", "mypy")
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.stat(path)
        if st.st_uid != os.getuid():
            return os.devnull
    except OSError:
        return os.devnull
    return path


def _search_paths():
    """Where the worker finds toolboxes besides the interpreter's own dirs."""
    paths = [os.getcwd()]
    for p in (os.environ.get("PYTHONPATH") or "").split(os.pathsep):
        if p and p not in paths:
            paths.append(os.path.abspath(p))
    return paths


def _json(value):
    """JSON for str, bool, list and dict: importing json costs milliseconds."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + "".join(c if c >= " " and c not in '"\\' else f"\\u{ord(c):04x}"
                             for c in value) + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_json(v) for v in value) + "]"
    return "{" + ", ".join(f"{_json(k)}: {_json(v)}" for k, v in value.items()) + "}"


def _pyright_config_text():
    conf = {"typeCheckingMode": "basic", "pythonVersion": "3.11",
            "extraPaths": _search_paths(), "enableTypeIgnoreComments": True}
    conf.update({rule: "none" for rule in _PYRIGHT_OFF})
    return _json(conf)


def _pyright_config(tmp):
    path = os.path.join(tmp, "pyrightconfig.json")
    with open(path, "w", encoding="utf-8") as f:
        f.write(_pyright_config_text())
    return path


def command(kind, binary, path, tmp):
    """(argv, extra environment) to check the file at path."""
    if kind == "mypy":
        argv = [binary, *_MYPY_FLAGS, "--cache-dir", _cache_dir()]
        for code in _MYPY_OFF:
            argv += ["--disable-error-code", code]
        if os.environ.get("VIRTUAL_ENV"):
            argv += ["--python-executable", sys.executable]
        # MYPYPATH must not name a site-packages directory, or mypy stops.
        paths = [p for p in _search_paths()
                 if "site-packages" not in p and "dist-packages" not in p]
        return argv + [path], {"MYPYPATH": os.pathsep.join(paths)}
    if kind == "pyright":
        return [binary, "--outputjson", "-p", _pyright_config(tmp),
                "--pythonpath", sys.executable, path], {}
    if kind == "ty":
        argv = [binary, "check", "--output-format", "concise", "--color", "never",
                "--python-version", "3.11", "--python", sys.executable]
        for p in _search_paths():
            argv += ["--extra-search-path", p]
        for rule in _TY_OFF:
            argv += ["--ignore", rule]
        return argv + [path], {}
    return [binary, path], {}


def _check_warm(kind, binary, source, seconds):
    """What run_checker returns, from the warm checker beside the warm
    server (checkd.c), or None when there is none for this call or it
    could not check: then the checker runs cold.  pyright as its language
    server, with the cold run's configuration; mypy in an interpreter that
    keeps it imported (checkd_mypy.py), with the cold run's flags (less
    the file) and environment (MYPYPATH, and the caller's MYPY* and
    PYTHON* variables, which the cold run inherits).  Either answer is in
    the cold run's output format."""
    path = _dolsot.warm_checker()
    if path is None or kind not in ("pyright", "mypy"):
        return None
    config, args, env = "", [], []
    if kind == "mypy":
        argv, extra = command(kind, binary, CELL_FILE, None)
        args = argv[1:-1]
        inherited = {k: v for k, v in os.environ.items()
                     if k.startswith(("MYPY", "PYTHON"))}
        inherited.update(extra)
        env = [f"{k}={v}" for k, v in sorted(inherited.items())]
    else:
        config = _pyright_config_text()
    return _dolsot.check_warm(path, kind, binary, sys.executable, config,
                              args, env, source.encode("utf-8"), seconds)


def _environment(extra):
    if not extra:
        return None
    env = dict(os.environ)
    env.update(extra)
    return [f"{k}={v}" for k, v in env.items()]


def _first_line(data):
    for line in data.decode("utf-8", "replace").splitlines():
        if line.strip():
            return line.strip()[:200]
    return ""


def _unreadable(name, code, out, err):
    why = _first_line(err) or _first_line(out)
    return (f"warning: type gate skipped: cannot read {name}'s output "
            f"(exit status {code}){': ' + why if why else ''}")


def _diagnostics(kind, name, status, code, out, err):
    """The checker's diagnostics; raises _Skip when it failed."""
    if status == "not-found":
        raise _Skip(None)
    if status == "cannot-start":
        raise _Skip(f"warning: type gate skipped: cannot start {name}: {os.strerror(code)}")
    if status == "signaled":
        raise _Skip(f"warning: type gate skipped: {name} crashed (signal {code})")
    expected = {"mypy": (0, 1), "ty": (0, 1), "pyright": (0, 1)}.get(kind)
    if expected is not None and code not in expected:
        raise _Skip(_unreadable(name, code, out, err))
    found = _dolsot.parse(kind, out)
    if found is None:
        raise _Skip(_unreadable(name, code, out, err))
    errors = [d for d in found if d[3] == "error"]
    # A line format that announces errors (exit 1) must show some.
    if kind != "pyright" and code != 0 and not errors:
        raise _Skip(_unreadable(name, code, out, err))
    return found


def _in_cell(diag, offset, n_lines, col_shift):
    path, line, col, severity, code, message = diag
    if severity != "error" or os.path.basename(path) != CELL_FILE:
        return None
    if not offset < line <= offset + n_lines:
        return None
    return line - offset, max(col - col_shift, 0) if col else 0, message, code


# The diagnostics that may block a cell, by checker: a call of a toolbox
# function or class with arguments that do not fit, and a toolbox attribute
# that does not exist.  Every other diagnostic lets the cell run: the gate
# checks cells against the toolboxes' signatures, not the cell's own code.
_CALL_CODES = {"call-arg", "arg-type", "call-overload",                  # mypy
               "reportCallIssue", "reportArgumentType",                  # pyright
               "missing-argument", "unknown-argument", "invalid-argument-type",
               "too-many-positional-arguments", "parameter-already-assigned",
               "no-matching-overload"}                                   # ty
_ARG_CODES = {"arg-type", "reportArgumentType", "invalid-argument-type"}
_ATTRIBUTE_CODES = {"attr-defined", "reportAttributeAccessIssue", "unresolved-attribute"}


def _start(node):
    return node.lineno, node.col_offset


def _contains(node, pos):
    return _start(node) <= pos < (node.end_lineno, node.end_col_offset)


def _size(node):
    return (node.end_lineno - node.lineno, node.end_col_offset - node.col_offset)


def _toolbox_attr(node, toolboxes):
    """The name of alias.NAME when node reads a toolbox attribute, else None;
    ("", NAME) when it names a host tool."""
    if (isinstance(node, ast.Name) and node.id in _host_tools
            and isinstance(node.ctx, ast.Load)):
        return "", node.id
    if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id in toolboxes and isinstance(node.ctx, ast.Load)):
        return node.value.id, node.attr
    return None


def _call_subject(tree, pos, argument):
    """The call a call diagnostic at pos is about: the innermost call that
    spans pos, or for an argument's type the call pos starts an argument of."""
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _contains(n, pos)]
    if argument:
        parents = [c for c in calls
                   if any(_start(a) == pos for a in c.args)
                   or any(_start(k) == pos or _start(k.value) == pos for k in c.keywords)]
        if parents:
            return min(parents, key=_size)
    return min(calls, key=_size) if calls else None


def field_hint(tree, held, toolboxes, line, col, code):
    """'hint: pass its field instead: p.sku (str)' when an argument's type
    diagnostic (line, 1-based col) is about a held record with a field
    that fits the toolbox parameter; else None."""
    if code not in _ARG_CODES or not col:
        return None
    pos = (line, col - 1)
    call = _call_subject(tree, pos, True)
    ref = _toolbox_attr(call.func, toolboxes) if call is not None else None
    if ref is None or not ref[0]:   # no toolbox: a host tool's call
        return None
    hints = _dolsot.embedded("hints")
    params, notes = hints.parameters(getattr(toolboxes[ref[0]], ref[1], None))
    arg = pname = None
    for i, a in enumerate(call.args):
        if _start(a) == pos and i < len(params) and not isinstance(a, ast.Starred):
            arg, pname = a, params[i]
    for k in call.keywords:
        if k.arg and (_start(k) == pos or _start(k.value) == pos):
            arg, pname = k.value, k.arg
    if not isinstance(arg, ast.Name) or arg.id not in held or pname not in notes:
        return None
    fix = hints.field_fix(held[arg.id], notes[pname], pname, arg.id)
    return f"hint: {fix}" if fix else None


def blocking_ref(tree, toolboxes, line, col, code, message):
    """(alias, name) of the toolbox use a diagnostic at line:col (1-based
    column, 0 when not given) blames, when it is one that blocks; else None."""
    pos = (line, max(col - 1, 0))
    if code in _ATTRIBUTE_CODES or code is None:
        for node in ast.walk(tree):
            ref = _toolbox_attr(node, toolboxes)
            if (ref is not None and (_contains(node, pos) or not col and node.lineno == line)
                    and (code is None or f'"{ref[1]}"' in message)):
                return ref
    if code in _CALL_CODES or code is None:
        if not col:
            return None
        call = _call_subject(tree, pos, code in _ARG_CODES)
        if call is not None:
            return _toolbox_attr(call.func, toolboxes)
    return None


def format_block(name, errors, toolboxes):
    """The error text of a blocked cell: one 'line N: message  [code]' per
    error, each (line, message, code, (alias, name), field hint or None),
    and its hints."""
    hints = _dolsot.embedded("hints")
    n = len(errors)
    out = [f"TypeCheckError: {name} found {n} error{'s' if n != 1 else ''} in the cell, "
           "so it did not run; session unchanged"]
    for line, message, code, ref, field in errors[:MAX_SHOWN]:
        first, *rest = message.splitlines() or [""]
        out.append(f"line {line}: {first}" + (f"  [{code}]" if code else ""))
        out.extend("  " + r.strip() for r in rest[:4] if r.strip())
        hint = (hints.toolbox_hint(ref[0], toolboxes[ref[0]], ref[1]) if ref[0]
                else _tool_hint(ref[1]))
        out.extend("  " + h for h in (hint, field) if h)
    if n > MAX_SHOWN:
        out.append(f"... and {n - MAX_SHOWN} more")
    return "\n".join(out)


def _remove(tmp, names):
    for n in names:
        try:
            os.unlink(os.path.join(tmp, n))
        except OSError:
            pass
    try:
        os.rmdir(tmp)
    except OSError:
        pass


_GATE_DIR = "dolsot-gate-"
_GATE_FILES = (CELL_FILE, "pyrightconfig.json")


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        pass   # another user's: alive
    return True


def _pid_namespace():
    """Which pids a name's pid is one of: a sandboxed worker has its own."""
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return "0"


def _sweep(base, ns):
    """Remove the directories of workers killed while their checker ran
    (the deadline, a host that gave up): their pid, in our pid namespace,
    is gone."""
    try:
        names = os.listdir(base)
    except OSError:
        return
    for name in names:
        parts = name[len(_GATE_DIR):].split("-")
        if (not name.startswith(_GATE_DIR) or len(parts) != 3 or parts[0] != ns
                or not parts[1].isdigit() or _alive(int(parts[1]))):
            continue
        path = os.path.join(base, name)
        try:
            if os.lstat(path).st_uid != os.getuid():
                continue
        except OSError:
            continue
        _remove(path, _GATE_FILES)


def _private_dir():
    base = os.environ.get("TMPDIR") or "/tmp"
    ns = _pid_namespace()
    _sweep(base, ns)
    for _ in range(16):
        path = os.path.join(base, f"{_GATE_DIR}{ns}-{os.getpid()}-{os.urandom(6).hex()}")
        try:
            os.mkdir(path, 0o700)
            return path
        except FileExistsError:
            continue
    raise OSError("cannot make a private temporary directory")


# The host tools of the cell being checked (hostcall.py), {name: function}.
_host_tools = {}


def _tool_hint(name):
    """'hint: search(query: str, limit: int = 3) -> list[str]' for a host tool."""
    fn = _host_tools.get(name)
    sig = _dolsot.embedded("hints").signature_of(fn) if fn is not None else None
    return f"hint: {name}{sig}" if sig is not None else None


def _run(code, held, toolboxes):
    binary = _dolsot.ty_bin()
    path = _dolsot.which(binary)
    if path is None:
        raise _Skip(None)               # not installed: silent
    kind = _dolsot.checker_kind(path)
    name = os.path.basename(binary)
    try:
        text = code.decode("utf-8")
    except UnicodeDecodeError:
        raise _Skip(None) from None
    source, offset, col_shift = build_source(kind, text, held, toolboxes, _host_tools)
    seconds = _dolsot.seconds_left() / 2
    if seconds < MIN_SECONDS:
        raise _Skip(f"warning: type gate skipped: no time left to run {name}")
    warm = _check_warm(kind, path, source, seconds)
    if warm is not None:
        status, rc, out, err, took = warm
    else:
        tmp = _private_dir()
        try:
            cell = os.path.join(tmp, CELL_FILE)
            with open(cell, "w", encoding="utf-8") as f:
                f.write(source)
            argv, extra = command(kind, path, cell, tmp)
            status, rc, out, err, took = _dolsot.run_checker(
                argv, _environment(extra), tmp, seconds, OUTPUT_CAP)
        finally:
            _remove(tmp, _GATE_FILES)
    if status == "timeout":
        raise _Skip(f"warning: type gate skipped: {name} did not finish within "
                    f"{took:.1f}s (half the time the call had left)")
    found = _diagnostics(kind, name, status, rc, out, err)
    n_lines = len(text.split("\n"))
    errors = [e for e in (_in_cell(d, offset, n_lines, col_shift) for d in found) if e]
    tree = _parse(text)
    blocking = []
    for line, col, message, code in errors:
        ref = blocking_ref(tree, toolboxes, line, col, code, message)
        if ref is not None:
            blocking.append((line, message, code, ref,
                             field_hint(tree, held, toolboxes, line, col, code)))
    if not blocking:
        return None
    global last_blocking
    last_blocking = [e for e in errors
                     if blocking_ref(tree, toolboxes, e[0], e[1], e[3], e[2]) is not None]
    return format_block(name, blocking, toolboxes)


def check(code, held, toolboxes, tools=None):
    """Type-check a cell.  Returns (error, warning): error is the text of a
    blocked cell (None: run it), warning one line for stderr or None.
    tools: the host's tools, {name: function} (hostcall.py)."""
    global _host_tools
    _host_tools = tools or {}
    try:
        return _run(code, held, toolboxes), None
    except _Skip as e:
        return None, e.args[0]
    except BaseException as e:
        text = str(e).splitlines()[0] if str(e) else ""
        return None, (f"warning: type gate skipped: {type(e).__name__}"
                      f"{': ' + text if text else ''}")
