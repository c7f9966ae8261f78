"""dolsot hints: lines that tell an agent how to fix a failed call.

Compiled into the binary and imported (as _dolsot_hints) only when a cell
raised or the type gate blocked one: a call that raises nothing never pays
for it.  Every function here returns text or None and never raises: a hint
that cannot be made is simply left out.  A hint is one line, at most
MAX_HINT characters, naming what to write next.

A toolbox's public names are its __all__ when it defines one, else every
attribute not starting with an underscore; an object's public attributes
are those dir() lists that do not start with one.  Private names are never
shown.  memory is the session's record of earlier calls (session.remember).
"""

import ast
import re

MAX_LISTED = 12
MAX_HINT = 300
MAX_REPR = 40
MAX_STATEMENT = 80

_BINDING = re.compile(r"^(?P<qual>[\w.<>]+)\(\) (?:takes |missing |got an unexpected "
                      r"keyword argument|got multiple values for argument|got some "
                      r"positional-only arguments passed as keyword)")
_NOT_CALLABLE = re.compile(r"^'(?P<type>[\w.]+)' object is not callable$")

# Names agents use without importing them, and the line that imports each.
_IMPORTS = {m: f"import {m}" for m in (
    "json", "re", "os", "sys", "math", "time", "random", "datetime", "collections",
    "itertools", "functools", "pathlib", "subprocess", "shutil", "csv", "statistics",
    "string", "textwrap", "typing", "dataclasses", "decimal", "fractions", "uuid",
    "hashlib", "base64", "glob", "tempfile", "io", "copy", "operator", "pprint",
    "asyncio", "sqlite3", "logging", "urllib", "zipfile", "gzip", "pickle", "heapq",
    "bisect", "calendar", "inspect", "traceback", "struct", "enum", "contextlib")}
_IMPORTS.update({
    "np": "import numpy as np", "numpy": "import numpy as np",
    "pd": "import pandas as pd", "pandas": "import pandas as pd",
    "plt": "import matplotlib.pyplot as plt", "scipy": "import scipy",
    "Path": "from pathlib import Path", "defaultdict": "from collections import defaultdict",
    "Counter": "from collections import Counter", "OrderedDict": "from collections import OrderedDict",
    "deque": "from collections import deque", "namedtuple": "from collections import namedtuple",
    "dataclass": "from dataclasses import dataclass", "field": "from dataclasses import field",
    "timedelta": "from datetime import timedelta", "date": "from datetime import date",
    "Any": "from typing import Any", "Optional": "from typing import Optional",
    "partial": "from functools import partial", "reduce": "from functools import reduce",
    "pprint": "from pprint import pprint", "Enum": "from enum import Enum",
})
_THIRD_PARTY = {"numpy", "pandas", "matplotlib", "scipy"}


def _line(text):
    """A hint as one bounded line."""
    text = " ".join(str(text).split())
    return text if len(text) <= MAX_HINT else text[:MAX_HINT - 3] + "..."


def _a(noun):
    return ("an " if noun[:1].lower() in "aeiou" else "a ") + noun


def _short(value):
    try:
        text = repr(value)
    except BaseException:
        text = f"<{type(value).__name__}>"
    return text if len(text) <= MAX_REPR else text[:MAX_REPR - 3] + "..."


def _listed(items, quote=False):
    shown = [_short(i) if quote else str(i) for i in items[:MAX_LISTED]]
    more = f", ... ({len(items)} in all)" if len(items) > MAX_LISTED else ""
    return ", ".join(shown) + more


def public_names(module):
    names = getattr(module, "__all__", None)
    if isinstance(names, (list, tuple)) and all(isinstance(n, str) for n in names):
        found = list(names)
    else:
        found = [n for n in vars(module) if isinstance(n, str)]
    return sorted({n for n in found if n and not n.startswith("_")})


def _distance(a, b, limit):
    """Edit distance from a to b, a change of case costing 1 and any other
    edit 2, or limit + 1 once it is sure to exceed limit (CPython 3.12's
    rule for "did you mean", without importing difflib)."""
    if abs(len(a) - len(b)) * 2 > limit:
        return limit + 1
    row = list(range(0, 2 * len(b) + 1, 2))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i * 2
        best = row[0]
        for j, cb in enumerate(b, 1):
            cost = 0 if ca == cb else 1 if ca.lower() == cb.lower() else 2
            prev, row[j] = row[j], min(row[j] + 2, row[j - 1] + 2, prev + cost)
            best = min(best, row[j])
        if best > limit:
            return limit + 1
    return row[-1]


def closest(word, candidates):
    """The candidate nearest to word, when it is near enough to be a typo."""
    if not isinstance(word, str) or len(word) > 100:
        return None
    found, found_d = None, None
    for c in candidates:
        if not isinstance(c, str) or c == word or len(c) > 100:
            continue
        limit = (len(word) + len(c) + 3) * 2 // 6
        d = _distance(word, c, limit)
        if d <= limit and (found_d is None or d < found_d):
            found, found_d = c, d
    return found


def signature_of(obj):
    """The signature text of a callable, annotations included, or None."""
    try:
        import inspect
        return str(inspect.signature(obj))
    except BaseException:
        return None


def _see_help(alias, module, name):
    helper = getattr(module, "help", None)
    return callable(helper) and name in public_names(module)


def call_hint(alias, module, name):
    """'hint: mt.add(a: int, b: int) -> int; see mt.help("add")' for a toolbox callable."""
    try:
        obj = getattr(module, name)
    except BaseException:
        return None
    if not callable(obj):
        return None
    parts = []
    sig = signature_of(obj)
    if sig is not None:
        parts.append(f"{alias}.{name}{sig}")
    if _see_help(alias, module, name):
        parts.append(f'see {alias}.help("{name}")')
    return _line("hint: " + "; ".join(parts)) if parts else None


def attribute_hint(alias, module, name):
    """'hint: did you mean mt.add?' for a name the toolbox lacks."""
    try:
        public = public_names(module)
    except BaseException:
        return None
    if name in public:
        return None
    match = closest(name, public)
    if match is not None:
        return f"hint: did you mean {alias}.{match}?"
    if public:
        return _line(f"hint: {alias} has: {_listed(public)}")
    return None


def toolbox_hint(alias, module, name):
    """The hint for a use of alias.name: its signature, or a near miss."""
    try:
        has = hasattr(module, name)
    except BaseException:
        return None
    return call_hint(alias, module, name) if has else attribute_hint(alias, module, name)


def bound_names(tree):
    """Names a cell binds in the module namespace, and those it assigns.

    Returns (all bound, bound by assignment-like statements), the second
    excluding def, class and import bindings.
    """
    bound, assigned = set(), set()
    scopes = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)

    def visit(node, top):
        if isinstance(node, ast.Global):
            bound.update(node.names)
            assigned.update(node.names)
        if top:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bound.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for a in node.names:
                    if a.name != "*":
                        bound.add(a.asname or a.name.split(".")[0])
            elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                bound.add(node.id)
                assigned.add(node.id)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                bound.add(node.name)
                assigned.add(node.name)
            elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
                bound.add(node.name)
                assigned.add(node.name)
            elif isinstance(node, ast.MatchMapping) and node.rest:
                bound.add(node.rest)
                assigned.add(node.rest)
        if isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name) and top:
            bound.add(node.target.id)
            assigned.add(node.target.id)
        inner = top and not isinstance(node, scopes) and not isinstance(
            node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp))
        for child in ast.iter_child_nodes(node):
            # A walrus inside a comprehension still binds in the module.
            visit(child, inner or (top and isinstance(child, ast.NamedExpr)))

    visit(tree, True)
    return bound, assigned


def _tree(code):
    try:
        if isinstance(code, bytes):
            code = code.decode("utf-8", "replace")
        return compile(code, "<cell>", "exec",
                       ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    except BaseException:
        return None


def unbound_after_failure(code, ns, exc):
    """The names a failed cell binds at top level, in the statement that
    raised or after it, that ns does not hold: the lines that would have
    bound them never ran.  (A name bound only before that statement was
    skipped by the cell's own logic, or deleted: no record.)"""
    tree = _tree(code)
    frames = [f for f in _frames(exc) if f.tb_frame.f_code.co_filename == "<cell>"]
    if tree is None or not frames:
        return []
    failed_at = frames[0].tb_lineno
    names = set()
    for node in tree.body:
        if (getattr(node, "end_lineno", None) or node.lineno) >= failed_at:
            names |= bound_names(ast.Module(body=[node], type_ignores=[]))[0]
    return sorted(n for n in names
                  if n not in ns and not n.startswith("_") and n.isidentifier())


def statements(code, names):
    """{name: the first line of the cell's top-level statement that binds
    it}, cut to MAX_STATEMENT characters, for the names the cell binds."""
    tree = _tree(code)
    if tree is None:
        return {}
    if isinstance(code, bytes):
        code = code.decode("utf-8", "replace")
    lines, out = code.split("\n"), {}
    for node in tree.body:
        bound = bound_names(ast.Module(body=[node], type_ignores=[]))[0]
        for name in names:
            if name in bound and name not in out:
                text = lines[node.lineno - 1].strip() if node.lineno <= len(lines) else ""
                out[name] = text if len(text) <= MAX_STATEMENT else (
                    text[:MAX_STATEMENT - 3] + "...")
    return out


def _alias_of(module, toolboxes):
    for alias, mod in toolboxes.items():
        if mod is module:
            return alias
    return None


def _frames(exc):
    """The traceback's entries, outermost first."""
    out, tb = [], exc.__traceback__
    while tb is not None:
        out.append(tb)
        tb = tb.tb_next
    return out


def _last_cell_frame(exc):
    """(index, entry) of the innermost traceback entry in the cell's code."""
    frames = _frames(exc)
    for i in range(len(frames) - 1, -1, -1):
        if frames[i].tb_frame.f_code.co_filename == "<cell>":
            return i, frames[i], frames
    return None, None, frames


def _covers(node, line):
    end = getattr(node, "end_lineno", None) or node.lineno
    return node.lineno <= line <= end


def _calls_at(code, line):
    """The calls in the cell that span line, innermost first."""
    tree = _tree(code)
    if tree is None:
        return []
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _covers(n, line)]
    return sorted(calls, key=lambda n: (n.end_lineno - n.lineno, n.end_col_offset - n.col_offset))


def _qualname_of_callable(obj):
    if isinstance(obj, type):
        init = getattr(obj, "__init__", None)
        return getattr(init, "__qualname__", None)
    return getattr(obj, "__qualname__", None)


def _toolbox_callee(func, ns, toolboxes):
    """(alias, module, name) when func names a toolbox callable, else None."""
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        module = toolboxes.get(func.value.id)
        if module is not None and ns.get(func.value.id) is module:
            return func.value.id, module, func.attr
        return None
    if isinstance(func, ast.Name):
        obj = ns.get(func.id)
        for alias, module in toolboxes.items():
            for name in public_names(module):
                if getattr(module, name, None) is obj and obj is not None:
                    return alias, module, name
    return None


def _toolbox_calls(code, line, ns, toolboxes):
    """(alias, module, name, callable) of each toolbox call spanning line."""
    for call in _calls_at(code, line):
        found = _toolbox_callee(call.func, ns, toolboxes)
        if found is not None:
            yield found + (getattr(found[1], found[2], None),)


def _code_of(obj):
    if isinstance(obj, type):
        obj = getattr(obj, "__init__", None)
    return getattr(obj, "__code__", None)


def _fits(value, annotation):
    """True/False when value does or does not fit a plain annotation; None
    when the annotation is not one we can judge without guessing.  Read
    from the annotation's own attributes: importing typing costs more than
    the rest of a hint."""
    if annotation is None or annotation is type(None):
        return value is None
    kind = type(annotation).__name__
    args = getattr(annotation, "__args__", None)
    if kind in ("UnionType", "_UnionGenericAlias") and isinstance(args, tuple):
        verdicts = [_fits(value, a) for a in args]
        if any(v is True for v in verdicts):
            return True
        return False if all(v is False for v in verdicts) else None
    origin = getattr(annotation, "__origin__", None)
    target = origin if isinstance(origin, type) else annotation
    if not isinstance(target, type):
        return None
    if target is float and isinstance(value, int) and not isinstance(value, bool):
        return True     # the numeric tower: an int is a float's fine
    if target is complex and isinstance(value, (int, float)):
        return True
    try:
        return isinstance(value, target)
    except BaseException:
        return None


def _annotation_text(annotation):
    if isinstance(annotation, type) and not getattr(annotation, "__args__", None):
        return annotation.__qualname__
    return str(annotation).replace("typing.", "")


def _parameters(obj):
    """(names of the parameters, {name: annotation}) of a Python function
    or class, from its code object: without inspect or typing."""
    target = getattr(obj, "__init__", None) if isinstance(obj, type) else obj
    code = getattr(target, "__code__", None)
    notes = getattr(target, "__annotations__", None)
    if code is None or not isinstance(notes, dict):
        return (), {}
    n = code.co_argcount + code.co_kwonlyargcount
    names = code.co_varnames[:n]
    if isinstance(obj, type):
        names = names[1:]   # self
    return names, {k: v for k, v in notes.items() if not isinstance(v, str)}


def _argument_text(code, line, alias, name, params, pname):
    """The cell's expression for parameter pname in its call of alias.name
    on line ("p", "items[0]"), or None."""
    for call in _calls_at(code, line):
        func = call.func
        if not (isinstance(func, ast.Attribute) and func.attr == name and
                isinstance(func.value, ast.Name) and func.value.id == alias):
            continue
        arg = next((k.value for k in call.keywords if k.arg == pname), None)
        i = params.index(pname)
        if arg is None and i < len(call.args) and not any(
                isinstance(a, ast.Starred) for a in call.args[:i + 1]):
            arg = call.args[i]
        text = ast.unparse(arg) if arg is not None else None
        return text if text and len(text) <= MAX_REPR else None
    return None


def field_fix(value, target, pname, expr):
    """'pass its field instead: EXPR.FIELD (TYPE)' when value, the argument
    expr of parameter pname, is a record with a field that fits the
    annotation target; else None.  The runtime hint and the type gate's."""
    field = _fitting_field(value, target, pname)
    if field is None:
        return None
    return f"pass its field instead: {expr}.{field} ({_annotation_text(target)})"


def parameters(obj):
    """(names of obj's parameters, {name: annotation}): see _parameters."""
    return _parameters(obj)


def _fitting_field(value, target, pname):
    """The field of value (a dataclass's, or an object's own public
    attribute) that fits the annotation target: the one named pname when it
    fits, else the only one that does; None when there is none or no one."""
    import dataclasses
    try:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            names = [f.name for f in dataclasses.fields(value)]
        else:
            names = [n for n in vars(value) if not n.startswith("_")]
    except BaseException:
        return None
    fits = [n for n in names if _fits(getattr(value, n, None), target) is True]
    if pname in fits:
        return pname
    return fits[0] if len(fits) == 1 else None


def _inside_toolbox_hint(exc, code, ns, toolboxes):
    """A TypeError raised inside a toolbox function: the parameter whose
    value does not fit its annotation."""
    i, cell, frames = _last_cell_frame(exc)
    if cell is None or i + 1 >= len(frames):
        return None
    inner = frames[i + 1].tb_frame
    for alias, module, name, obj in _toolbox_calls(code, cell.tb_lineno, ns, toolboxes):
        if _code_of(obj) is not inner.f_code:
            continue
        params, hints = _parameters(obj)
        for pname in params:
            if pname not in hints or pname not in inner.f_locals:
                continue
            value = inner.f_locals[pname]
            if _fits(value, hints[pname]) is False:
                see = f'; see {alias}.help("{name}")' if _see_help(alias, module, name) else ""
                arg = _argument_text(code, cell.tb_lineno, alias, name, params, pname)
                fix = field_fix(value, hints[pname], pname, arg or "the argument")
                fix = f"; {fix}" if fix else ""
                return _line(f"hint: {alias}.{name}() parameter {pname} is annotated "
                             f"{_annotation_text(hints[pname])}, but the call passed "
                             f"{type(value).__name__} {_short(value)}{fix}{see}")
        return None
    return None


def _type_error_hint(exc, code, ns, toolboxes):
    text = str(exc)
    match = _BINDING.match(text)
    frames = _frames(exc)
    frame = frames[-1] if frames else None
    if _NOT_CALLABLE.match(text):
        return _not_callable_hint(exc, code, ns, toolboxes)
    # Arguments are bound before the callee's frame exists, so a wrong call
    # of a toolbox function fails in the cell's own frame.
    if match is None or frame is None or frame.tb_frame.f_code.co_filename != "<cell>":
        return _inside_toolbox_hint(exc, code, ns, toolboxes)
    for alias, module, name, obj in _toolbox_calls(code, frame.tb_lineno, ns, toolboxes):
        qual, said = _qualname_of_callable(obj) or "", match.group("qual")
        # Python functions say "Class.name()", C functions "module.name()".
        if qual and (qual == said or qual.endswith("." + said) or said.endswith("." + qual)):
            return call_hint(alias, module, name)
    return None


def _shadowed(name, toolboxes):
    """What a name held by the session hides: 'mt.lookup', 'the builtin list'."""
    for alias, module in toolboxes.items():
        if name in public_names(module) and callable(getattr(module, name, None)):
            return f"{alias}.{name}"
    import builtins
    if callable(getattr(builtins, name, None)) and not name.startswith("_"):
        return f"the builtin {name}()"
    return None


def _constant_attribute_hint(func, scope):
    """'hint: mt.VERSION is a str ('1.2'), not a function: ...' for a call
    of an attribute (of a name the cell sees) that holds a value."""
    if not isinstance(func.value, ast.Name) or func.value.id not in scope:
        return None
    owner = scope[func.value.id]
    if func.attr.startswith("_") or not hasattr(type(owner), "__getattribute__"):
        return None
    try:
        value = inspect_static_attr(owner, func.attr)
    except BaseException:
        return None
    if value is _MISSING or callable(value):
        return None
    what = f"{func.value.id}.{func.attr}"
    return _line(f"hint: {what} is {_a(type(value).__name__)} ({_short(value)}), not a "
                 f"function, so it cannot be called: use {what} without ()")


_MISSING = object()


def inspect_static_attr(owner, name):
    """owner's attribute name without running a property or __getattr__
    (a module's or an instance's own value); _MISSING when there is none."""
    import inspect
    try:
        return inspect.getattr_static(owner, name)
    except AttributeError:
        return _MISSING


def _not_callable_hint(exc, code, ns, toolboxes):
    i, cell, _ = _last_cell_frame(exc)
    if cell is None:
        return None
    scope = dict(cell.tb_frame.f_globals)
    scope.update(cell.tb_frame.f_locals)
    for call in _calls_at(code, cell.tb_lineno):
        if isinstance(call.func, ast.Attribute):
            hint = _constant_attribute_hint(call.func, scope)
            if hint is not None:
                return hint
            continue
        if not isinstance(call.func, ast.Name):
            continue
        name = call.func.id
        if name not in scope or callable(scope[name]) or name.startswith("_"):
            continue
        kind = type(scope[name]).__name__
        hides = _shadowed(name, toolboxes)
        if hides is not None:
            fix = (f"call {hides} instead" if "." in hides
                   else f"del {name} to get the builtin back")
            return _line(f"hint: {name} is {_a(kind)} ({_short(scope[name])}), not a function: "
                         f"it shadows {hides}; {fix}, and keep the value under another name")
        return _line(f"hint: {name} is {_a(kind)} ({_short(scope[name])}), not a function")
    return None


def _public_attributes(obj):
    try:
        return sorted({a for a in dir(obj) if isinstance(a, str) and not a.startswith("_")})
    except BaseException:
        return []


def _attribute_error_hint(exc, toolboxes):
    obj, name = getattr(exc, "obj", None), getattr(exc, "name", None)
    if not isinstance(name, str) or name.startswith("_"):
        return None
    alias = _alias_of(obj, toolboxes)
    if alias is not None:
        return attribute_hint(alias, toolboxes[alias], name)
    if obj is None and "'NoneType'" not in str(exc):
        return None
    if isinstance(obj, dict) and name in obj:
        return f"hint: it is a dict: use [{_short(name)}], not .{name}"
    public = _public_attributes(obj)
    match = closest(name, public)
    if match is not None:
        return f"hint: did you mean .{match}?"
    own = sorted(a for a in getattr(obj, "__dict__", {}) if isinstance(a, str)
                 and not a.startswith("_")) if not isinstance(obj, type(ast)) else []
    if own and len(own) <= MAX_LISTED:
        return _line(f"hint: {type(obj).__name__} has: {_listed(own)}")
    return None


def _memory_hint(name, memory):
    for n, kind, why, where in reversed((memory or {}).get("dropped", ())):
        if n == name:
            call = f"the call that ran `{where}`" if where else "an earlier call"
            return _line(f"hint: {name} was dropped at the end of {call}: its value, "
                         f"{_a(kind)}, could not be pickled ({why}); re-create it in the "
                         f"cell that uses it")
    for n, where, error in reversed((memory or {}).get("failed", ())):
        if n == name:
            line = f"`{where}`" if where else "the line that binds it"
            return _line(f"hint: {name} was never assigned: an earlier cell raised {error} "
                         f"before {line} completed; run that line again")
    return None


def _importable(line):
    top = line.split()[1].split(".")[0]
    if top not in _THIRD_PARTY:
        return True
    try:
        import importlib.util
        return importlib.util.find_spec(top) is not None
    except BaseException:
        return False


def _name_error_hint(exc, code, ns, toolboxes, memory):
    name = getattr(exc, "name", None)
    if not isinstance(name, str):
        return None
    tree = _tree(code)
    # The cell binds it itself, later: any suggestion would mislead.
    if tree is not None and name in bound_names(tree)[0]:
        return None
    hint = _memory_hint(name, memory)
    if hint is not None:
        return hint
    for alias, module in toolboxes.items():
        if name in public_names(module):
            return f"hint: did you mean {alias}.{name}?"
    line = _IMPORTS.get(name)
    if line is not None and _importable(line):
        return f"hint: {name} is not imported in this session: add `{line}` to the cell"
    candidates = [k for k in ns if isinstance(k, str)
                  and not (k.startswith("__") and k.endswith("__"))]
    candidates += [a for a in toolboxes if a not in candidates]
    match = closest(name, candidates)
    if match is None:
        import builtins
        match = closest(name, [b for b in vars(builtins) if not b.startswith("_")])
    return f"hint: did you mean {match}?" if match is not None else None


def _safe_value(node, scope):
    """The value of a name, or of constant subscripts of a plain dict or
    list chain (cfg['db']['hosts']), without running any of the cell's code."""
    if isinstance(node, ast.Name):
        if node.id not in scope:
            raise LookupError
        return scope[node.id]
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        base = _safe_value(node.value, scope)
        if type(base) in (dict, list, tuple):
            return base[node.slice.value]
    raise LookupError


def _frame_kind(obj):
    for cls in type(obj).__mro__:
        if cls.__module__.startswith("pandas"):
            if cls.__name__ == "DataFrame":
                return "DataFrame"
            if cls.__name__ == "Series":
                return "Series"
    return None


def _key_error_hint(exc, code):
    if len(exc.args) != 1:
        return None
    key = exc.args[0]
    i, cell, _ = _last_cell_frame(exc)
    tree = _tree(code)
    if cell is None or tree is None:
        return None
    scope = dict(cell.tb_frame.f_globals)
    scope.update(cell.tb_frame.f_locals)
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Subscript) and _covers(node, cell.tb_lineno)
                and isinstance(node.ctx, ast.Load)):
            continue
        try:
            obj = _safe_value(node.value, scope)
        except BaseException:
            continue
        kind = _frame_kind(obj)
        if isinstance(obj, dict) and type(obj) is not dict and hasattr(type(obj), "__missing__"):
            continue
        try:
            if kind == "DataFrame":
                keys = list(obj.columns)
            elif kind == "Series":
                keys = list(obj.index)
            elif isinstance(obj, dict):
                keys = list(obj)
            else:
                continue
            if key in keys:
                continue
        except BaseException:
            continue
        what = ast.unparse(node.value)
        if len(what) > MAX_REPR:
            what = "it"
        if kind == "DataFrame" and isinstance(key, int) and not isinstance(key, bool):
            return _line(f"hint: {what}[{key}] looks up a column named {key}; for the row at "
                         f"position {key} use {what}.iloc[{key}], for a column by position "
                         f"{what}.iloc[:, {key}] ({what} has columns: "
                         f"{_listed(keys, quote=True)})")
        noun = {"DataFrame": "columns", "Series": "index labels"}.get(kind, "keys")
        strings = [k for k in keys if isinstance(k, str)]
        match = closest(key, strings) if isinstance(key, str) else None
        if match is None and isinstance(key, str):
            folded = [k for k in strings if k.lower() == key.lower()]
            match = folded[0] if folded else None
        has = f"{what} has {noun}: {_listed(keys, quote=True)}" if keys else f"{what} is empty"
        if match is not None:
            return _line(f"hint: did you mean {_short(match)}? ({has})")
        return _line(f"hint: {has}")
    return None


def runtime_hints(exc, code, ns, toolboxes, memory=None):
    """Hint lines for an exception the cell raised; [] when there is none."""
    try:
        if isinstance(exc, NameError):
            hint = _name_error_hint(exc, code, ns, toolboxes, memory)
        elif isinstance(exc, AttributeError):
            # Raised inside a toolbox function: the argument is the fault.
            hint = (_inside_toolbox_hint(exc, code, ns, toolboxes)
                    or _attribute_error_hint(exc, toolboxes))
        elif isinstance(exc, KeyError):
            hint = _key_error_hint(exc, code)
        elif isinstance(exc, TypeError):
            hint = _type_error_hint(exc, code, ns, toolboxes)
        else:
            hint = None
    except BaseException:
        hint = None
    return [hint] if hint else []
