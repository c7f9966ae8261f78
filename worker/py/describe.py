"""dolsot --describe: what a cell can use, in a form sized for a prompt.

Compiled into the binary and imported (as _dolsot_describe) only by a
--describe call, which runs no cell and saves nothing: worker.py loads the
session and imports the toolboxes as a call would, then hands them here.

describe() returns (text, data): the text a prompt takes, and the same as
plain data for --json.  The bounds are dolsot(1)'s (DESCRIBE).
"""

import sys

MAX_TOTAL = 16000          # chars of the whole text
MAX_MEMBERS = 60           # functions, classes and constants per toolbox
MAX_HELD = 100             # held names listed
MAX_LISTED = 20            # names listed per mount
MAX_NAME = 40              # chars of one listed name
MAX_MOUNT = 2000           # chars of one mount's text
MAX_LINE = 160             # chars of one signature line
MAX_CONST = 60             # chars of a constant's repr


def _cut(text, n):
    return text if len(text) <= n else text[:n - 3] + "..."


def _first_doc_line(obj):
    doc = getattr(obj, "__doc__", None)
    if not isinstance(doc, str):
        return ""
    for line in doc.strip().splitlines():
        if line.strip():
            return line.strip()
    return ""


def _signature(obj):
    import inspect
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "(...)"


def _public_names(mod):
    names = getattr(mod, "__all__", None)
    if isinstance(names, (list, tuple)):
        return [n for n in names if isinstance(n, str) and hasattr(mod, n)]
    return sorted(n for n in vars(mod) if not n.startswith("_"))


def _own(mod, obj):
    """Defined by the toolbox (or its package), not imported into it."""
    owner = getattr(obj, "__module__", None)
    name = mod.__name__
    return owner is None or owner == name or owner.startswith(name + ".")


_CONST_TYPES = (int, float, complex, str, bytes, bool, tuple, frozenset, type(None))


def _toolbox(alias, mod):
    import inspect
    listed = getattr(mod, "__all__", None) is not None
    funcs, classes, consts = [], [], []
    for name in _public_names(mod):
        obj = getattr(mod, name, None)
        if inspect.ismodule(obj):
            continue
        if inspect.isclass(obj):
            if listed or _own(mod, obj):
                classes.append({"name": name, "signature": _signature(obj),
                                "doc": _first_doc_line(obj)})
        elif callable(obj):
            if listed or _own(mod, obj):
                funcs.append({"name": name, "signature": _signature(obj),
                              "doc": _first_doc_line(obj)})
        elif isinstance(obj, _CONST_TYPES):
            consts.append({"name": name, "type": type(obj).__name__,
                           "value": _cut(repr(obj), MAX_CONST)})
    n = len(funcs) + len(classes) + len(consts)
    cut = max(0, n - MAX_MEMBERS)
    keep = MAX_MEMBERS
    funcs, keep = funcs[:keep], keep - min(len(funcs), keep)
    classes, keep = classes[:keep], keep - min(len(classes), keep)
    consts = consts[:keep]
    return {"alias": alias, "module": mod.__name__, "doc": _first_doc_line(mod),
            "functions": funcs, "classes": classes, "constants": consts,
            "omitted": cut}


def _shape(value):
    shape = getattr(type(value), "shape", None)
    if shape is None:
        return None
    try:
        shape = value.shape
        if isinstance(shape, tuple) and all(isinstance(d, int) for d in shape):
            return list(shape)
    except BaseException:
        pass
    return None


def _held(ns):
    out = []
    for name in sorted(ns)[:MAX_HELD]:
        value = ns[name]
        t = type(value)
        kind = t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"
        item = {"name": name, "type": kind}
        shape = _shape(value)
        if shape is not None:
            item["shape"] = shape
        elif isinstance(value, (list, dict, set, tuple, str, bytes, frozenset)):
            item["len"] = len(value)
        out.append(item)
    return out, max(0, len(ns) - MAX_HELD)


def _extension(name):
    dot = name.rfind(".")
    return name[dot:] if dot > 0 else "(none)"


def _mount(path, mode):
    import os
    item = {"path": path, "mode": mode}
    try:
        names = sorted(os.listdir(path))
    except OSError as e:
        item["error"] = os.strerror(e.errno) if e.errno else str(e)
        return item
    item["count"] = len(names)
    item["entries"] = [_cut(n, MAX_NAME) + ("/" if os.path.isdir(os.path.join(path, n)) else "")
                       for n in names[:MAX_LISTED]]
    rest = {}
    for n in names[MAX_LISTED:]:
        ext = _extension(n)
        rest[ext] = rest.get(ext, 0) + 1
    if rest:
        item["more"] = dict(sorted(rest.items(), key=lambda kv: (-kv[1], kv[0])))
    return item


def _text_toolbox(t):
    lines = [f"toolbox {t['alias']} (module {t['module']})"
             + (f": {t['doc']}" if t["doc"] else "")]
    for f in t["functions"]:
        doc = f"  # {f['doc']}" if f["doc"] else ""
        lines.append(_cut(f"  {t['alias']}.{f['name']}{f['signature']}{doc}", MAX_LINE))
    for c in t["classes"]:
        doc = f"  # {c['doc']}" if c["doc"] else ""
        lines.append(_cut(f"  class {t['alias']}.{c['name']}{c['signature']}{doc}", MAX_LINE))
    for c in t["constants"]:
        lines.append(_cut(f"  {t['alias']}.{c['name']}: {c['type']} = {c['value']}", MAX_LINE))
    if t["omitted"]:
        lines.append(f"  ... and {t['omitted']} more")
    if len(lines) == 1:
        lines.append("  (no public names)")
    return lines


def _text_held(session, held, omitted):
    if session is None:
        return []
    if not held:
        return [f"session {session} holds nothing yet"]
    lines = [f"session {session} holds:"]
    for h in held:
        extra = ""
        if "shape" in h:
            extra = f" shape {tuple(h['shape'])}"
        elif "len" in h:
            extra = f" len {h['len']}"
        lines.append(f"  {h['name']}: {h['type']}{extra}")
    if omitted:
        lines.append(f"  ... and {omitted} more")
    return lines


def _text_mount(m):
    head = f"mount {m['path']} ({m['mode']})"
    if "error" in m:
        return [f"{head}: cannot list: {m['error']}"]
    lines = [f"{head}: {m['count']} entr{'y' if m['count'] == 1 else 'ies'}"]
    if m["entries"]:
        lines.append("  " + ", ".join(m["entries"]))
    if "more" in m:
        n = sum(m["more"].values())
        lines.append(f"  ... and {n} more: " + ", ".join(f"{c} {ext}" for ext, c in
                                                       m["more"].items()))
    text, out = 0, []
    for line in lines:
        if text + len(line) > MAX_MOUNT:
            out.append("  ... (cut)")
            break
        out.append(line)
        text += len(line) + 1
    return out


def _host_tools(tools):
    """The host's tools (hostcall.py), {name: function}, as data."""
    return [{"name": name, "signature": _signature(fn), "doc": _first_doc_line(fn)}
            for name, fn in list(tools.items())[:MAX_MEMBERS]]


def _text_tools(tools):
    if not tools:
        return []
    lines = ["host tools (plain functions; a failure raises RuntimeError, no answer "
             "in time TimeoutError):"]
    for t in tools:
        doc = f"  # {t['doc']}" if t["doc"] else ""
        lines.append(_cut(f"  {t['name']}{t['signature']}{doc}", MAX_LINE))
    return lines


def describe(toolboxes, session, ns, sandbox, mounts, tools=None):
    """toolboxes {alias: module}; session the id or None; ns the held names;
    mounts [(virtual path, mode)]; tools the host's tools {name: function}.
    Returns (text, data)."""
    data = {"toolboxes": [_toolbox(a, m) for a, m in toolboxes.items()]}
    data["tools"] = _host_tools(tools or {})
    if session is not None:
        held, omitted = _held(ns)
        data["session"] = {"id": session, "held": held, "omitted": omitted}
    else:
        data["session"] = None
    data["sandbox"] = bool(sandbox)
    data["mounts"] = [_mount(p, m) for p, m in mounts]
    lines = []
    for t in data["toolboxes"]:
        lines += _text_toolbox(t)
    if not data["toolboxes"]:
        lines.append("no toolboxes")
    lines += _text_tools(data["tools"])
    if data["session"] is not None:
        lines += _text_held(session, data["session"]["held"], data["session"]["omitted"])
    for m in data["mounts"]:
        lines += _text_mount(m)
    if sandbox and not mounts:
        lines.append("no host filesystem: the sandbox shows none of the host's files "
                     "(--mount HOST:PATH adds a directory)")
    text = "\n".join(lines)
    if len(text) > MAX_TOTAL:
        text = text[:MAX_TOTAL - 40].rsplit("\n", 1)[0] + "\n[description cut at " \
               f"{MAX_TOTAL} chars]"
        data["cut"] = True
    return text, data


def dump(data):
    import json
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return text


