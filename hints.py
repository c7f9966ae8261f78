"""dolsot hints: lines that tell an agent how to fix a failed call.

Compiled into the binary and imported (as _dolsot_hints) only when a cell
failed or the type gate blocked one.  Every function here returns text or
None and never raises: a hint that cannot be made is simply left out.

A toolbox's public names are its __all__ when it defines one, else every
attribute not starting with an underscore; private names are never shown.
"""

import ast
import re

MAX_LISTED = 12

_BINDING = re.compile(r"^(?P<qual>[\w.<>]+)\(\) (?:takes |missing |got an unexpected "
                      r"keyword argument|got multiple values for argument|got some "
                      r"positional-only arguments passed as keyword)")


def public_names(module):
    names = getattr(module, "__all__", None)
    if isinstance(names, (list, tuple)) and all(isinstance(n, str) for n in names):
        found = list(names)
    else:
        found = [n for n in vars(module) if isinstance(n, str)]
    return sorted({n for n in found if n and not n.startswith("_")})


def closest(word, candidates):
    import difflib
    found = difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
    return found[0] if found else None


def signature_of(obj):
    """The signature text of a callable, annotations included, or None."""
    try:
        import inspect
        return str(inspect.signature(obj))
    except BaseException:
        return None


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
    helper = getattr(module, "help", None)
    if callable(helper) and name in public_names(module):
        parts.append(f'see {alias}.help("{name}")')
    return "hint: " + "; ".join(parts) if parts else None


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
        shown = ", ".join(public[:MAX_LISTED]) + (", ..." if len(public) > MAX_LISTED else "")
        return f"hint: {alias} has: {shown}"
    return None


def toolbox_hint(alias, module, name):
    """The hint for a use of alias.name: its signature, or a near miss."""
    try:
        has = hasattr(module, name)
    except BaseException:
        return None
    return call_hint(alias, module, name) if has else attribute_hint(alias, module, name)


def _alias_of(module, toolboxes):
    for alias, mod in toolboxes.items():
        if mod is module:
            return alias
    return None


def _innermost_frame(exc):
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb


def _covers(node, line):
    end = getattr(node, "end_lineno", None) or node.lineno
    return node.lineno <= line <= end


def _callees(code, line):
    """The callee expressions of the calls in the cell that span line."""
    try:
        tree = ast.parse(code, "<cell>")
    except BaseException:
        return []
    return [n.func for n in ast.walk(tree) if isinstance(n, ast.Call) and _covers(n, line)]


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


def _type_error_hint(exc, code, ns, toolboxes):
    match = _BINDING.match(str(exc))
    frame = _innermost_frame(exc)
    # Arguments are bound before the callee's frame exists, so a wrong call
    # of a toolbox function fails in the cell's own frame.
    if match is None or frame is None or frame.tb_frame.f_code.co_filename != "<cell>":
        return None
    for func in _callees(code, frame.tb_lineno):
        found = _toolbox_callee(func, ns, toolboxes)
        if found is None:
            continue
        alias, module, name = found
        obj = getattr(module, name, None)
        qual, said = _qualname_of_callable(obj) or "", match.group("qual")
        # Python functions say "Class.name()", C functions "module.name()".
        if qual and (qual == said or qual.endswith("." + said) or said.endswith("." + qual)):
            return call_hint(alias, module, name)
    return None


def _attribute_error_hint(exc, toolboxes):
    alias = _alias_of(getattr(exc, "obj", None), toolboxes)
    name = getattr(exc, "name", None)
    if alias is None or not isinstance(name, str):
        return None
    return attribute_hint(alias, toolboxes[alias], name)


def _name_error_hint(exc, ns, toolboxes):
    name = getattr(exc, "name", None)
    if not isinstance(name, str):
        return None
    candidates = [k for k in ns if isinstance(k, str)
                  and not (k.startswith("__") and k.endswith("__"))]
    candidates += [a for a in toolboxes if a not in candidates]
    match = closest(name, candidates)
    if match is None:
        import builtins
        match = closest(name, [b for b in vars(builtins) if not b.startswith("_")])
    return f"hint: did you mean {match}?" if match is not None else None


def runtime_hints(exc, code, ns, toolboxes):
    """Hint lines for an exception the cell raised; [] when there is none."""
    try:
        if isinstance(exc, NameError):
            hint = _name_error_hint(exc, ns, toolboxes)
        elif isinstance(exc, AttributeError):
            hint = _attribute_error_hint(exc, toolboxes)
        elif isinstance(exc, TypeError):
            hint = _type_error_hint(exc, code, ns, toolboxes)
        else:
            hint = None
    except BaseException:
        hint = None
    return [hint] if hint else []
