"""Which session names a piece of code can reach (issue 36: lazy loading).

A call loads only the units whose names the cell can reach, and what the
code held in those units reaches in turn; whenever that cannot be bounded,
it loads everything, so that no cell can see a difference from a full
load.  Loading too much is always safe; too little never is.  The rule:

1. The names a code object reaches are its co_names (every global or
   module-level name it loads, stores or deletes, and every attribute
   name: an over-approximation) and those of every code object in its
   co_consts (nested functions, lambdas, comprehensions, class bodies),
   plus every identifier-like word inside its str and bytes constants
   (and those inside tuple and frozenset constants).  The words catch a
   name handed over as text to something that looks it up in the
   caller's namespace: eval('a+1'), getattr(m, 'a'), df.query('x > @t'),
   a statsmodels/patsy formula 'y ~ np.log(x)', cProfile.run('f()').

2. The code is dynamic (None: load everything) when
   - a name of _DYNAMIC is among those co_names (as a global, a builtin
     or an attribute alike: `re.compile` counts as `compile`), or a
     dotted import names one as a part ('__main__' in `import __main__`);
   - a word of its constants is one of _DYNAMIC_WORDS (the spellings no
     English text uses: getattr(builtins, 'globals'),
     importlib.import_module('__main__'), 'from __main__ import f'), or
     a constant holds '__main__' anywhere (a pickle's b'c__main__');
   - it loads getattr, setattr, delattr or hasattr other than as the
     callee of f(OBJ, 'name') or f(OBJ, 'name', OBJ), each OBJ a plain
     name with attribute lookups after it, 'name' a constant str not in
     _DYNAMIC, and the call's argument count matching (so
     `getattr(self.x, 'a', None)` is bounded; `getattr(obj, name)`,
     `getattr(f(), 'a')`, `getattr(sys, 'modules')`, `g = getattr` and
     `map(getattr, objs, names)` are not).  A computed attribute name
     could be '__globals__' of a held function, 'f_globals' of a frame,
     'modules' of sys;
   - it holds the IMPORT_STAR opcode (`from m import *` binds names no
     constant spells);
   - a str or bytes constant is longer than _TEXT_MAX (1 MiB): scanning
     it could cost more than loading everything.

3. A function's code reaches names of the session only when its
   __globals__ is the session's namespace (__main__'s dict, where the
   worker runs cells): a library's function reads its own module.
   value_code_names takes a function's code, its default values, closure
   cells, __wrapped__ and string annotations (typing.get_type_hints
   evaluates them in __globals__); a function of another module or a
   builtin held as a value (functools.partial(eval, 'a+1'), a bound
   DataFrame.query) is dynamic when its __name__ is in _DYNAMIC, since it
   runs against its caller's frame, a cell's; so are getattr and its
   kin held as values, and operator's attrgetter and methodcaller.  For a class of the
   session: every function, staticmethod, classmethod, property,
   functools descriptor and nested class of its __dict__, its string
   annotations, its bases and its metaclass (a class of another module
   reaches nothing: its methods read that module).  The __main__
   module itself, held as a value, is dynamic.  Every other object
   reaches nothing by itself: the pickler meets what it holds and is
   asked again.

The functions: code_names(code) for a cell, value_code_names(obj) for
what the pickler meets while saving a unit (the union over a unit is its
reads, kept in the index), closure(start, units) for the units a call
loads, and runs_on_load(obj) for the units whose loading runs code that
could show (a metaclass, __setstate__...): a full load runs it in every
call, so a lazy one must load those units always.

What this cannot see (and the worker must accept or guard against): a
library that reads its caller's frame (pandas' query/eval, numexpr,
patsy) given a name that is not written in the cell (a formula held in
a variable, text read from a file) is bounded only for the entry points
in _DYNAMIC; a name built at run time and handed to such a library, or
to getattr on an object reached through C code, is not seen.
"""

import sys
import types   # already imported by session.py: free here

_FunctionType = types.FunctionType
_CodeType = types.CodeType
_MethodType = types.MethodType
_ModuleType = types.ModuleType
_BuiltinType = types.BuiltinFunctionType

# Names that reach the namespace (or a frame, which holds it) by
# themselves: builtins, attributes of sys, inspect, gc and functions, and
# entry points of libraries that run code in __main__ or look names up in
# their caller's frame.  Matched in co_names, so an attribute of the same
# name counts too.
_DYNAMIC = frozenset((
    # builtins that see or run code against the namespace
    "globals", "vars", "locals", "dir", "eval", "exec", "compile",
    "__import__", "breakpoint", "__builtins__",
    # the namespace's own module, and the ways to it
    "__main__", "modules", "import_module", "__dict__", "__globals__", "__code__",
    "__getattribute__", "attrgetter", "methodcaller", "getattr_static", "getmembers",
    # the classes defined in the session that are loaded now
    "__subclasses__",
    # frames (f_builtins holds eval, which reads its caller's globals)
    "_getframe", "currentframe", "f_globals", "f_locals", "f_back", "f_builtins",
    # the garbage collector, and ctypes' door to the C API, hand out the
    # namespace's dict
    "get_referrers", "get_referents", "get_objects", "pythonapi",
    # tools that run against __main__ (pdb, code.interact, doctest.testmod,
    # unittest.main)
    "set_trace", "interact", "testmod", "main",
    # libraries that resolve names in their caller's frame: pandas
    # (DataFrame.query; eval is above), numexpr, patsy and statsmodels'
    # formula API
    "query", "evaluate", "re_evaluate", "dmatrix", "dmatrices", "EvalEnvironment",
    "from_formula", "ols", "wls", "gls", "glsar", "glm", "logit", "probit",
    "mnlogit", "poisson", "negativebinomial", "quantreg", "mixedlm", "rlm",
    "phreg", "gee", "ordinal_gee", "nominal_gee",
))

# Words inside constant strings that make the code dynamic: those of
# _DYNAMIC that plain text does not use.
_DYNAMIC_WORDS = frozenset((
    "globals", "locals", "__import__", "__builtins__", "__main__", "__dict__",
    "__globals__", "__code__", "__getattribute__", "_getframe", "currentframe",
    "f_globals", "f_locals", "f_back", "f_builtins", "get_referrers", "get_referents",
    "get_objects", "pythonapi",
))

_ATTR_FUNCS = frozenset(("getattr", "setattr", "delattr", "hasattr"))

# Latin-1 characters that cannot be part of an identifier, to split text
# on (so that a bytes constant, read as Latin-1, never takes the slow path).
_NOT_IDENT = {c: " " for c in range(256) if not ("_" + chr(c)).isidentifier()}

# A constant text longer than this makes its code dynamic rather than cost
# a scan of its words longer than loading everything would.
_TEXT_MAX = 1 << 20


def _words_of(text, out):
    """Add every identifier-like word of text to out."""
    for word in text.translate(_NOT_IDENT).split():
        if word.isidentifier():
            out.add(word)
        else:
            _split_word(word, out)


def _split_word(word, out):
    """A run of text beyond Latin-1: its identifier parts, leading digits cut."""
    run = []
    for ch in word + " ":
        if ("_" + ch).isidentifier():
            run.append(ch)
            continue
        part = "".join(run).lstrip("0123456789")
        if part.isidentifier():
            out.add(part)
        run = []


def _const_words(value, out):
    """Add the words of value's str and bytes to out; False when one is
    longer than _TEXT_MAX."""
    t = type(value)
    if t is str or t is bytes:
        if len(value) > _TEXT_MAX:
            return False
        text = value if t is str else value.decode("latin-1")
        _words_of(text, out)
        if "__main__" in text:    # glued to a word, as in a pickle's b'c__main__'
            out.add("__main__")
    elif t is tuple or t is frozenset:
        return all(_const_words(item, out) for item in value)
    return True


def _words(values):
    """The words of the constants values (rule 1), or None when they make
    the code dynamic (rule 2)."""
    words = set()
    if not all(_const_words(value, words) for value in values):
        return None
    return words if _DYNAMIC_WORDS.isdisjoint(words) else None


_ops = None


def _opcodes():
    """The opcode numbers the getattr check reads (the opcode module, once)."""
    global _ops
    if _ops is None:
        import opcode
        m = opcode.opmap
        _ops = {
            "cache": m.get("CACHE", -1), "ext": opcode.EXTENDED_ARG,
            "star": m.get("IMPORT_STAR", -1), "precall": m.get("PRECALL", -1),
            "const": m["LOAD_CONST"],
            "global": m["LOAD_GLOBAL"], "name": m["LOAD_NAME"],
            "attr": m["LOAD_ATTR"], "method": m.get("LOAD_METHOD", -1),
            "simple": frozenset(m[n] for n in (
                "LOAD_NAME", "LOAD_GLOBAL", "LOAD_FAST", "LOAD_DEREF",
                "LOAD_CLASSDEREF", "LOAD_CONST") if n in m),
        }
    return _ops


def _instructions(code):
    """[(opcode, arg)] of code, caches skipped, EXTENDED_ARG folded in."""
    ops = _opcodes()
    raw = code.co_code
    out, ext = [], 0
    for i in range(0, len(raw), 2):
        op, arg = raw[i], raw[i + 1] | ext
        if op == ops["cache"]:
            continue
        if op == ops["ext"]:
            ext = arg << 8
            continue
        ext = 0
        out.append((op, arg))
    return out


def _name_of(code, op, arg, ops):
    """The name a load of a name or attribute names, else None."""
    if op == ops["global"]:
        arg >>= 1     # 3.11: the low bit says "push NULL too"
    elif op not in (ops["name"], ops["attr"], ops["method"]):
        return None
    names = code.co_names
    return names[arg] if arg < len(names) else None


def _skip_operand(ins, i, ops):
    """The index after a plain load and the attribute loads after it at
    ins[i], or -1 when ins[i] is no plain load."""
    if i >= len(ins) or ins[i][0] not in ops["simple"]:
        return -1
    if ins[i][0] == ops["global"] and ins[i][1] & 1:
        return -1     # a callee's load (it pushes NULL too)
    i += 1
    while i < len(ins) and ins[i][0] == ops["attr"]:
        i += 1
    return i


def _bounded_attr_call(code, ins, at, ops):
    """Whether the getattr-like load at ins[at] is the callee of a call
    f(OBJ, 'name') or f(OBJ, 'name', OBJ), each OBJ a plain load with
    attribute loads after it, 'name' a constant str not in _DYNAMIC.  The
    call's argument count must match, so that getattr handed to another
    call (map(getattr, ...)) is not taken for one."""
    i = _skip_operand(ins, at + 1, ops)
    if i < 0 or i >= len(ins) or ins[i][0] != ops["const"]:
        return False
    consts = code.co_consts
    name = consts[ins[i][1]] if ins[i][1] < len(consts) else None
    if type(name) is not str or name in _DYNAMIC:
        return False
    i += 1
    argc = 2
    after = _skip_operand(ins, i, ops)
    if after >= 0:
        i, argc = after, 3     # getattr's default, or setattr's value
    return i < len(ins) and ins[i] == (ops["precall"], argc)


def _attr_calls_bounded(code):
    """Whether every load of getattr, setattr, delattr or hasattr in code
    is a call with a constant attribute name (see the module's rule)."""
    if sys.version_info[:2] != (3, 11):
        return False     # the bytecode this reads is 3.11's
    ops = _opcodes()
    ins = _instructions(code)
    for at, (op, arg) in enumerate(ins):
        if _name_of(code, op, arg, ops) in _ATTR_FUNCS:
            if not _bounded_attr_call(code, ins, at, ops):
                return False
    return True


# `from m import *` loads this constant as IMPORT_NAME's fromlist.
_STAR_FROMLIST = ("*",)


def _has_import_star(code):
    ops = _opcodes()
    if ops["star"] < 0:
        return True     # not 3.11's bytecode: the fromlist is enough
    return any(op == ops["star"] for op, _ in _instructions(code))


def _dynamic_names(names):
    if not _DYNAMIC.isdisjoint(names):
        return True
    return any(not _DYNAMIC.isdisjoint(n.split(".")) for n in names if "." in n)


def _unseen(todo, seen):
    """Pop todo (which the caller extends meanwhile) until it is empty,
    yielding each object whose id is not in seen yet."""
    while todo:
        item = todo.pop()
        if id(item) not in seen:
            seen.add(id(item))
            yield item


def _code_into(code, out, seen):
    """Add what code reaches to out; False when it is dynamic."""
    todo = [code]
    for c in _unseen(todo, seen):
        names = c.co_names
        if _dynamic_names(names):
            return False
        if not _ATTR_FUNCS.isdisjoint(names) and not _attr_calls_bounded(c):
            return False
        if _STAR_FROMLIST in c.co_consts and _has_import_star(c):
            return False
        out.update(names)
        consts = c.co_consts
        todo.extend(const for const in consts if type(const) is _CodeType)
        words = _words(const for const in consts if type(const) is not _CodeType)
        if words is None:
            return False
        out.update(words)
    return True


def code_names(code):
    """Every name code (and the code nested in it) can reach, as a
    frozenset, or None when it can reach the namespace dynamically."""
    out = set()
    return frozenset(out) if _code_into(code, out, set()) else None


def _session_ns():
    main = sys.modules.get("__main__")
    return getattr(main, "__dict__", None)


def _annotation_words(obj):
    """The words of obj's string annotations, or None when dynamic."""
    ann = obj.__dict__.get("__annotations__") if isinstance(obj, type) else \
        getattr(obj, "__annotations__", None)
    return _words(ann.values()) if type(ann) is dict else set()


def _foreign(cls, ns):
    """Whether cls belongs to a module other than the session's: its
    methods read that module (a class pickled by value is the session's)."""
    name = getattr(cls, "__module__", None)
    if type(name) is not str or name == "__main__":
        return False
    module = sys.modules.get(name)
    return module is not None and getattr(module, "__dict__", None) is not ns


def _value_into(obj, out, seen, ns):
    """Add what obj's code reaches to out; False when it is dynamic."""
    todo, code_seen = [obj], set()
    for o in _unseen(todo, seen):
        t = type(o)
        if t is _FunctionType:
            if o.__globals__ is not ns:
                if o.__name__ in _DYNAMIC:   # a library's eval, query, _getframe...
                    return False
                continue
            words = _annotation_words(o)
            if words is None or not _code_into(o.__code__, out, code_seen):
                return False
            out.update(words)
            todo.extend(o.__defaults__ or ())
            todo.extend((o.__kwdefaults__ or {}).values())
            for cell in o.__closure__ or ():
                try:
                    todo.append(cell.cell_contents)
                except ValueError:   # an empty cell
                    pass
            wrapped = o.__dict__.get("__wrapped__")
            if wrapped is not None:
                todo.append(wrapped)
        elif isinstance(o, type):
            if _foreign(o, ns):
                continue
            words = _annotation_words(o)
            if words is None:
                return False
            out.update(words)
            todo.extend(o.__dict__.values())
            todo.extend(o.__bases__)
            if type(o) is not type:
                todo.append(type(o))
        elif t is _BuiltinType:
            # eval held, or handed to partial(); getattr with any name
            if o.__name__ in _DYNAMIC or o.__name__ in _ATTR_FUNCS:
                return False
        elif t.__module__ == "operator" and t.__name__ in _DYNAMIC:
            return False     # attrgetter(name), methodcaller(name)
        elif t is staticmethod or t is classmethod or t is _MethodType:
            todo.append(o.__func__)
        elif t is property:
            todo.extend((o.fget, o.fset, o.fdel))
        elif t is _ModuleType:
            if o.__dict__ is ns:
                return False
        elif t is _CodeType:
            if not _code_into(o, out, code_seen):
                return False
        elif t.__module__ == "functools":   # cached_property, partialmethod, partial
            todo.append(getattr(o, "func", None))
    return True


def value_code_names(obj, ns=None):
    """What the code of obj (a function, method, class, module or code
    object, as the pickler meets it while saving a unit) reaches among
    the names of ns (the session's namespace: __main__'s dict when None),
    as a frozenset, or None when it is dynamic.  Any other object: an
    empty frozenset."""
    out = set()
    if ns is None:
        ns = _session_ns()
    return frozenset(out) if _value_into(obj, out, set(), ns) else None


# Modules whose class-making hooks (a metaclass's __new__, __init_subclass__)
# only set up the class itself: making a class with them shows nothing.
_QUIET_HOOKS = frozenset(("abc", "_py_abc", "enum", "typing", "dataclasses", "functools",
                          "collections"))


def _hook_runs(hook, ns):
    """Whether hook (a class attribute found by lookup) is Python code that
    may do something visible: the session's own, or a library's not in
    _QUIET_HOOKS."""
    func = getattr(hook, "__func__", hook)
    if type(func) is not _FunctionType:
        return False     # C code: type.__new__, object.__init_subclass__...
    module = func.__module__
    if type(module) is str and module.startswith("namedtuple_"):
        return False     # the __new__ collections.namedtuple writes
    return func.__globals__ is ns or module not in _QUIET_HOOKS


def runs_on_load(obj, ns=None):
    """Whether unpickling obj (as the pickler meets it) runs Python code
    that could print or change state: for a class pickled by value, its
    metaclass's __new__ or __init__, a base's __init_subclass__ or an
    attribute's __set_name__; for an instance of a class of the session,
    that class's __new__, __setstate__, __reduce__ or __reduce_ex__ (what
    they return runs at load).  A full load runs that code in every call,
    whether or not the cell reaches the value; a lazy load must load such
    units always to show the same.  ns as for value_code_names."""
    if ns is None:
        ns = _session_ns()
    if isinstance(obj, type):
        if _foreign(obj, ns):
            return False     # pickled by reference: nothing is made
        meta = type(obj)
        if meta is not type and any(_hook_runs(meta.__dict__.get(name), ns)
                                    for name in ("__new__", "__init__")):
            return True
        for base in obj.__mro__[1:]:
            if _hook_runs(base.__dict__.get("__init_subclass__"), ns):
                return True
        return any(_hook_runs(getattr(type(v), "__set_name__", None), ns)
                   for v in obj.__dict__.values())
    cls = type(obj)
    if _foreign(cls, ns):
        return False
    return any(_hook_runs(getattr(cls, name, None), ns)
               for name in ("__new__", "__setstate__", "__reduce__", "__reduce_ex__"))


def closure(start, units):
    """The indexes of the units to load, as a set, or None for all of them.

    start: the names the cell reaches (None: everything).  units: a list of
    (names, reads), names the tuple of names a unit holds, reads the names
    its code reaches (None: dynamic).  The units whose names meet start are
    chosen, then those whose names meet the reads of a chosen unit, until
    none is added; a chosen unit whose reads is None means all."""
    if start is None:
        return None
    owners = {}
    for index, (names, _) in enumerate(units):
        for name in names:
            owners.setdefault(name, []).append(index)
    chosen = set()
    todo = list(start)
    while todo:
        for index in owners.pop(todo.pop(), ()):
            if index in chosen:
                continue
            chosen.add(index)
            reads = units[index][1]
            if reads is None:
                return None
            todo.extend(reads)
    return chosen
