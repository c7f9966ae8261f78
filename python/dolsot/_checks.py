"""Caller input checked in Python, with the binary's own rules, so that a
mistake raises before a process is started."""

import keyword
import re
import types

from .errors import InvalidSession, InvalidToolbox

_SESSION_ID = re.compile(r"[A-Za-z0-9._-]{1,128}")
_CALL_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_TOOLBOXES = 256  # the binary's limit on --toolbox


def session_id(sid, *, allow_all=False):
    """Return sid if the engine accepts it as a session id, else raise."""
    if not isinstance(sid, str):
        raise InvalidSession(f"session id must be a str, not {type(sid).__name__}")
    if not _SESSION_ID.fullmatch(sid) or sid.startswith("."):
        raise InvalidSession(
            f"invalid session id {sid!r}: use 1-128 characters from "
            "[A-Za-z0-9._-], not starting with '.'")
    if sid == "all" and not allow_all:
        raise InvalidSession(
            "session id 'all' is reserved (reset('all') forgets every session); "
            "choose another id")
    return sid


def namespace(ns):
    """Return ns (None: the environment's, else the default) if the engine
    accepts it as a namespace (1-32 characters from [A-Za-z0-9._-], not
    starting with '.'), else raise InvalidSession."""
    if ns is None:
        return None
    if not isinstance(ns, str):
        raise InvalidSession(f"namespace must be a str, not {type(ns).__name__}")
    if not _SESSION_ID.fullmatch(ns) or len(ns) > 32 or ns.startswith("."):
        raise InvalidSession(
            f"invalid namespace {ns!r}: use 1-32 characters from "
            "[A-Za-z0-9._-], not starting with '.'")
    return ns


def fork(session, src, replace):
    """Check run(fork=src, replace=...) as the binary checks --fork and
    --replace; raise InvalidSession (replace that is not a bool: TypeError)."""
    if not isinstance(replace, bool):
        raise TypeError(f"replace must be a bool, not {type(replace).__name__}")
    if src is None:
        if replace:
            raise InvalidSession("replace=True goes with fork=SRC")
        return
    if src == "all":
        raise InvalidSession("fork='all': 'all' is not a session; name the session "
                             "to copy")
    session_id(src)
    if src == session:
        raise InvalidSession(f"fork={src!r}: a session cannot be forked into itself")


def call_id(cid):
    """Check run(call_id=...) as the binary checks --call-id: None, or 1-128
    characters from [A-Za-z0-9._:-]; raise InvalidSession."""
    if cid is None:
        return None
    if not isinstance(cid, str):
        raise InvalidSession(f"call_id must be a str, not {type(cid).__name__}")
    if not _CALL_ID.fullmatch(cid):
        raise InvalidSession(f"invalid call_id {cid!r}: use 1-128 characters "
                             "from [A-Za-z0-9._:-]")
    return cid


def state_number(n):
    """Return n if it can be a kept state's number (an int from 1, as
    --checkout ID@N takes it), else raise TypeError or ValueError."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"state must be an int, not {type(n).__name__}")
    if n < 1:
        raise ValueError(f"state must be 1 or more (a number history lists), not {n}")
    return n


def code_text(code):
    """Return code if it is a non-blank str, else raise InvalidSession."""
    if not isinstance(code, str):
        raise InvalidSession(f"code must be a str, not {type(code).__name__}")
    if not code.strip(" \t\r\n\f\v"):
        raise InvalidSession("empty code: a cell needs at least one statement")
    return code


def identifier(word):
    """True for an ASCII Python identifier that is not a keyword."""
    return (isinstance(word, str) and _IDENT.fullmatch(word) is not None
            and not keyword.iskeyword(word))


def module_name(name):
    """True for a dotted name of identifiers, none a keyword."""
    return isinstance(name, str) and all(identifier(p) for p in name.split("."))


def alias(a):
    """Return a if it can be a toolbox alias, else raise InvalidToolbox."""
    if not identifier(a):
        raise InvalidToolbox(f"inject alias {a!r} is not a Python identifier "
                             "(or is a keyword)")
    return a


def inject_modules(inject):
    """Turn inject into [(alias, module name, module or None)].

    A module object becomes its __name__ (the worker imports it by name);
    a str must be a dotted module name. Anything else is InvalidToolbox.
    """
    if inject is None:
        return []
    if not hasattr(inject, "items"):
        raise InvalidToolbox("inject must be a mapping of alias to module, "
                             f"not {type(inject).__name__}")
    out = []
    for a, v in inject.items():
        alias(a)
        if isinstance(v, types.ModuleType):
            name = getattr(v, "__name__", None)
            if not module_name(name):
                raise InvalidToolbox(f"inject[{a!r}]: module has no usable __name__ "
                                     f"({name!r})")
            out.append((a, name, v))
        elif isinstance(v, str):
            if not module_name(v):
                raise InvalidToolbox(f"inject[{a!r}]: {v!r} is not a dotted Python "
                                     "module name")
            out.append((a, v, None))
        else:
            raise InvalidToolbox(
                f"inject[{a!r}] is a {type(v).__name__}: the subprocess backend "
                "takes a module or an importable module name (only a name can "
                "reach the worker); InProcessSession takes live objects")
    if len(out) > MAX_TOOLBOXES:
        raise InvalidToolbox(f"inject has {len(out)} entries; at most "
                             f"{MAX_TOOLBOXES} are allowed")
    return out
