"""reach.py (issue 36): the names a cell, and the code held in a session's
units, can reach; None wherever that cannot be bounded; and closure(), the
units a call must load.  Real code compiled as the worker compiles a cell
(module-level, top-level await allowed), and real functions and classes
made by running such code in a namespace of their own."""

import _ast
import importlib.util
import os
import sys
import types
import unittest

import support

sys.dont_write_bytecode = True      # no __pycache__ in the source tree
_spec = importlib.util.spec_from_file_location(
    "dolsot_reach", os.path.join(support.ROOT, "worker", "py", "reach.py"))
reach = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(reach)


def cell(source):
    return compile(source, "<cell>", "exec", _ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


def names(source):
    return reach.code_names(cell(source))


def run(source):
    """A fresh namespace with source run in it (its functions' globals),
    named as the worker's is."""
    ns = {"__name__": "__main__"}
    exec(cell(source), ns)
    return ns


class Names(unittest.TestCase):
    def reaches(self, source, *want):
        got = names(source)
        self.assertIsNotNone(got, source)
        for name in want:
            self.assertIn(name, got, source)
        return got

    def test_loads_stores_and_deletes(self):
        got = self.reaches("x = a + b\ndel c\nd.e = 1", "x", "a", "b", "c", "d", "e")
        self.assertIsInstance(got, frozenset)

    def test_nested_functions_and_lambdas(self):
        got = self.reaches("def f(p):\n    def g():\n        return inner_global + p\n"
                           "    return g\nk = lambda q: lam_global(q)", "inner_global",
                           "lam_global", "f", "k")
        for local in ("p", "q", "g"):
            self.assertNotIn(local, got)

    def test_comprehensions(self):
        got = self.reaches("[h(x) for x in xs if x > lim]\n{k: v for k, v in pairs}\n"
                           "{s for s in sets}\n(t for t in gens)", "h", "xs", "lim",
                           "pairs", "sets", "gens")
        self.assertNotIn("x", got)

    def test_class_bodies_and_methods(self):
        self.reaches("class K(Base, metaclass=Meta):\n    attr = body_global\n"
                     "    def m(self):\n        return method_global\n",
                     "K", "Base", "Meta", "body_global", "method_global")

    def test_decorators(self):
        self.reaches("@deco\n@wrap(arg)\ndef f():\n    pass\n@cls_deco\nclass K: pass",
                     "deco", "wrap", "arg", "cls_deco")

    def test_async_defs_and_top_level_await(self):
        self.reaches("async def co():\n    async with lock_global:\n"
                     "        await aw_global()\n    async for i in it_global: pass\n"
                     "await co()", "co", "lock_global", "aw_global", "it_global")

    def test_f_strings(self):
        self.reaches("f'{val!r:>{width}} {obj.attr}'", "val", "width", "obj", "attr")

    def test_words_of_constant_strings(self):
        self.reaches("frame.where('col > @threshold')", "threshold")
        self.reaches("fit('y ~ np.log(x) + C(grp)', data=df)", "np", "log", "grp")
        self.reaches("run(b'bytes_name + 1')", "bytes_name")
        self.reaches("t = ('in_tuple', frozenset({'in_set'}))", "in_tuple")
        self.reaches("s = 'x in (tuple_const, other)'", "tuple_const", "other")

    def test_words_outside_ascii(self):
        got = self.reaches("s = 'été—naïve 3rd… ok'", "été", "naïve", "rd", "ok")
        self.assertNotIn("3rd", got)

    def test_latin1_bytes_split_like_text(self):
        self.reaches("x = b'caf\\xe9\\xd7m\\xfcller'", "café", "müller")

    def test_a_text_too_long_to_scan_is_dynamic(self):
        limit = reach._TEXT_MAX
        self.assertIsNotNone(reach.code_names(cell(f"x = {'w ' * (limit // 2)!r}")))
        self.assertIsNone(reach.code_names(cell(f"x = {'w ' * (limit // 2 + 1)!r}")))
        self.assertIsNone(reach.code_names(cell(f"x = ({b'w' * (limit + 1)!r}, 1)")))

    def test_plain_text_words_are_not_dynamic(self):
        self.reaches("print('compile the dir of modules, then eval')", "compile", "dir")

    def test_constant_getattr_family_is_bounded(self):
        for source in ("getattr(obj, 'a')", "getattr(obj.x.y, 'a', None)",
                       "setattr(obj, 'a', value)", "delattr(obj, 'a')",
                       "hasattr(obj, 'a')", "builtins.getattr(obj, 'a')",
                       "def f(self):\n    return getattr(self, 'a', dflt)",
                       "setattr(obj, 'a', x.y)",
                       "getattr(o, 'a') + getattr(p.q, 'b', None)"):
            self.reaches(source, "a")


class Dynamic(unittest.TestCase):
    FORMS = (
        "globals()['a']", "vars()['b']", "locals()['a']",
        "sorted(k for k in dir() if not k.startswith('_'))",
        "eval(chr(97))", "exec('print(' + chr(98) + ')')",
        "compile(src, 's', 'exec')", "re.compile('x')",
        "__import__(name)", "breakpoint()", "import __main__",
        "from __main__ import a", "import __main__ as m", "import sys\nsys.modules[n]",
        "sys._getframe()", "import inspect\ninspect.currentframe()",
        "fr.f_globals", "fr.f_locals", "fr.f_back", "obj.__dict__", "__builtins__",
        "e.__traceback__.tb_frame.f_builtins['eval'](n)", "ctypes.pythonapi",
        "f.__globals__", "f.__code__", "object.__getattribute__(o, n)",
        "operator.attrgetter(n)(o)", "importlib.import_module(n)",
        "inspect.getmembers(m)", "gc.get_referrers(o)", "gc.get_objects()",
        "pdb.set_trace()", "code.interact()", "doctest.testmod()",
        "unittest.main(exit=False)", "df.query(cond)", "pd.eval(expr)",
        "numexpr.evaluate(expr)", "patsy.dmatrices(formula, df)", "smf.ols(formula, df)",
        # a computed attribute name
        "getattr(o, n)", "setattr(o, n, 1)", "delattr(o, n)", "hasattr(o, n)",
        "getattr(o, 'a' + n)", "getattr(o(), 'a')", "getattr(o, *args)",
        "g = getattr", "map(getattr, objs, names)", "getattr(o, 'a', f(x))",
        "f(getattr, o, 'a')", "o.f(getattr, o, 'a')", "getattr(f('x', 'y'), n)",
        "getattr(f('x', b), n)", "getattr(f('x', b, c), n)", "getattr(getattr(o, 'a'), n)",
        "getattr(sys, 'modules')[n]", "getattr(o, 'eval')(n)",
        "obj.__subclasses__()", "operator.methodcaller(n)(o)", "inspect.getattr_static(o, n)",
        # words of constants spelling a way to the namespace
        "getattr(builtins, 'globals')()", "load('from __main__ import f')",
        "pickle.loads(b'c__main__\\nx\\n.')", "pickle.loads(b'\\x8c\\x08__main__')",
        "attr = 'f_globals'",
        # rebinding any name
        "from m import *",
    )

    def test_every_form(self):
        for source in self.FORMS:
            self.assertIsNone(names(source), source)

    def test_every_form_nested(self):
        wraps = ("def f():\n    {}\n", "lambda: [{}]", "[({}) for _ in ()]",
                 "class K:\n    def m(self):\n        {}\n", "async def co():\n    {}\n")
        for source in self.FORMS:
            if "\n" in source or source.startswith(("import", "from", "g =", "attr =")):
                continue
            for wrap in wraps:
                nested = wrap.format(source)
                self.assertIsNone(names(nested), nested)

    def test_class_body_form(self):
        self.assertIsNone(names("class K:\n    x = vars()\n"))

    def test_import_star_fromlist_without_the_opcode_is_bounded(self):
        self.assertIsNotNone(names("x = ('*',)"))

    def test_long_code_with_extended_args(self):
        body = "".join(f"v{i} = {i}\n" for i in range(300))
        self.assertIsNotNone(names(body + "getattr(o, 'v299')"))
        self.assertIsNone(names(body + "getattr(o, v299)"))


class Values(unittest.TestCase):
    def test_a_function_reads_its_globals(self):
        ns = run("def f():\n    return g + 1\n")
        self.assertEqual(reach.value_code_names(ns["f"], ns) & {"g", "f"}, {"g"})

    def test_a_function_of_another_namespace_reaches_nothing(self):
        ns = run("def f():\n    return globals()\n")
        self.assertEqual(reach.value_code_names(ns["f"], {}), frozenset())
        self.assertIsNone(reach.value_code_names(ns["f"], ns))

    def test_library_functions_and_other_objects_reach_nothing(self):
        import json
        for obj in (json.dumps, len, 1, "text", [lambda: 0], json):
            self.assertEqual(reach.value_code_names(obj, {}), frozenset(), obj)

    def test_a_class_and_everything_in_it(self):
        ns = run("import functools\n"
                 "class Base:\n    def b(self): return base_global\n"
                 "class Meta(type):\n    def __call__(cls): return meta_global\n"
                 "class C(Base, metaclass=Meta):\n"
                 "    field: 'Annotated'\n"
                 "    def m(self): return h * 2\n"
                 "    @property\n    def p(self): return prop_get\n"
                 "    @p.setter\n    def p(self, v): prop_set(v)\n"
                 "    @staticmethod\n    def s(): return static_global\n"
                 "    @classmethod\n    def c(cls): return class_global\n"
                 "    @functools.cached_property\n    def cp(self): return cached_global\n"
                 "    class Inner:\n        def i(self): return inner_global\n")
        got = reach.value_code_names(ns["C"], ns)
        for name in ("h", "base_global", "meta_global", "Annotated", "prop_get",
                     "prop_set", "static_global", "class_global", "cached_global",
                     "inner_global"):
            self.assertIn(name, got)

    def test_a_dynamic_method_makes_the_class_dynamic(self):
        ns = run("class C:\n    def m(self):\n        return vars()\n")
        self.assertIsNone(reach.value_code_names(ns["C"], ns))
        ns = run("class C:\n    def m(self, n):\n        return getattr(self, n)\n")
        self.assertIsNone(reach.value_code_names(ns["C"], ns))

    def test_defaults_closures_and_wrapped_functions(self):
        ns = run("import functools\n"
                 "def helper(): return default_global\n"
                 "def kwhelper(): return kw_global\n"
                 "def f(x=helper, *, y=kwhelper): return x\n"
                 "def outer():\n"
                 "    def inner(): return closure_global\n"
                 "    def g(): return inner()\n"
                 "    return g\n"
                 "def deco(fn):\n"
                 "    @functools.wraps(fn)\n"
                 "    def wrapper(*a): return fn(*a)\n"
                 "    return wrapper\n"
                 "@deco\ndef decorated(): return wrapped_global\n"
                 "def annotated(x: 'AnnType') -> 'RetType': pass\n")
        self.assertLessEqual({"default_global", "kw_global"},
                             reach.value_code_names(ns["f"], ns))
        self.assertIn("closure_global", reach.value_code_names(ns["outer"](), ns))
        self.assertIn("wrapped_global", reach.value_code_names(ns["decorated"], ns))
        self.assertLessEqual({"AnnType", "RetType"}, reach.value_code_names(ns["annotated"], ns))

    def test_builtins_and_library_functions_that_read_the_callers_frame(self):
        import functools
        ns = run("import functools\np = functools.partial(eval, 'a + 1')\n")
        self.assertIsNone(reach.value_code_names(eval, ns))
        self.assertIsNone(reach.value_code_names(sys._getframe, ns))
        self.assertIsNone(reach.value_code_names(ns["p"], ns))
        lib = run("def query(expr):\n    return expr\n")      # another module's query
        self.assertIsNone(reach.value_code_names(lib["query"], ns))
        self.assertEqual(reach.value_code_names(functools.partial(len, ()), ns), frozenset())
        import operator
        for held in (getattr, functools.partial(setattr, ns), operator.attrgetter("x"),
                     operator.methodcaller("x")):
            self.assertIsNone(reach.value_code_names(held, ns), held)
        self.assertEqual(reach.value_code_names(operator.itemgetter(1), ns), frozenset())

    def test_classes_of_other_modules_reach_nothing(self):
        import json
        ns = run("class Mine:\n    def m(self): return mine_global\n")
        self.assertEqual(reach.value_code_names(json.JSONEncoder, ns), frozenset())
        sub = run("import json\nclass Enc(json.JSONEncoder):\n"
                  "    def default(self, o): return enc_global\n")
        self.assertIn("enc_global", reach.value_code_names(sub["Enc"], sub))

    def test_lambdas_in_a_dict(self):
        ns = run("d = {'k': lambda: a + g, 'j': lambda: sorted(vars())}\n")
        self.assertLessEqual({"a", "g"}, reach.value_code_names(ns["d"]["k"], ns))
        self.assertIsNone(reach.value_code_names(ns["d"]["j"], ns))

    def test_methods_and_code_objects(self):
        ns = run("class C:\n    def m(self): return h\n")
        self.assertIn("h", reach.value_code_names(ns["C"]().m, ns))
        self.assertIn("h", reach.value_code_names(ns["C"].m.__code__, ns))

    def test_the_namespaces_module_is_dynamic(self):
        main = sys.modules["__main__"]
        self.assertIsNone(reach.value_code_names(main))
        self.assertEqual(reach.value_code_names(os), frozenset())

    def test_default_namespace_is_mains(self):
        main = vars(sys.modules["__main__"])
        exec(cell("def _reach_probe():\n    return _reach_global\n"), main)
        try:
            self.assertIn("_reach_global", reach.value_code_names(main["_reach_probe"]))
        finally:
            del main["_reach_probe"]

    def test_recursive_structures_end(self):
        ns = run("def f(n): return f(n - 1) if n else rec_global\n"
                 "class A:\n    pass\nA.me = A\n")
        self.assertIn("rec_global", reach.value_code_names(ns["f"], ns))
        self.assertEqual(reach.value_code_names(ns["A"], ns), frozenset())


class RunsOnLoad(unittest.TestCase):
    NS = run("import abc, dataclasses, enum, functools, typing\n"
             "class Meta(type):\n"
             "    def __init__(cls, *a):\n        super().__init__(*a)\n"
             "class Made(metaclass=Meta): pass\n"
             "class Base:\n    def __init_subclass__(cls): pass\n"
             "class Sub(Base): pass\n"
             "class Desc:\n    def __set_name__(self, owner, name): pass\n"
             "class HasDesc:\n    d = Desc()\n"
             "class Restored:\n    def __setstate__(self, state): pass\n"
             "class Reduced:\n    def __reduce__(self): return (Reduced, ())\n"
             "class New:\n    def __new__(cls): return super().__new__(cls)\n"
             "class Plain: pass\n"
             "class Abstract(abc.ABC):\n"
             "    @abc.abstractmethod\n    def m(self): pass\n"
             "class Colour(enum.Enum):\n    RED = 1\n"
             "@dataclasses.dataclass\nclass Point:\n    x: int = 0\n"
             "class Pair(typing.NamedTuple):\n    a: int\n"
             "class Cached:\n"
             "    @functools.cached_property\n    def c(self): return 1\n")

    def test_classes_whose_making_runs_code(self):
        for name in ("Made", "Sub", "HasDesc"):
            self.assertTrue(reach.runs_on_load(self.NS[name], self.NS), name)

    def test_instances_whose_loading_runs_code(self):
        for name in ("Restored", "Reduced", "New"):
            self.assertTrue(reach.runs_on_load(self.NS[name](), self.NS), name)

    def test_quiet_ones(self):
        ns = self.NS
        quiet = [ns[n] for n in ("Meta", "Base", "Restored", "Plain", "Abstract", "Colour",
                                 "Point", "Pair", "Cached")]
        quiet += [ns["Plain"](), ns["Colour"].RED, ns["Point"](), ns["Pair"](1), ns["Cached"](),
                  1, "text", [1], len, ns["Sub"]()]
        for obj in quiet:
            self.assertFalse(reach.runs_on_load(obj, ns), obj)

    def test_classes_of_other_modules_are_not_made(self):
        import collections
        import json
        for obj in (json.JSONEncoder, json.JSONEncoder(), collections.OrderedDict()):
            self.assertFalse(reach.runs_on_load(obj, self.NS), obj)


class Closure(unittest.TestCase):
    UNITS = [
        (("a",), frozenset()),                  # 0
        (("f",), frozenset({"g"})),             # 1
        (("g",), frozenset({"h"})),             # 2
        (("h", "h2"), frozenset({"f"})),        # 3: a cycle back to f
        (("dyn",), None),                       # 4
        (("lone",), frozenset({"a"})),          # 5
    ]

    def test_start_everything(self):
        self.assertIsNone(reach.closure(None, self.UNITS))

    def test_direct_names(self):
        self.assertEqual(reach.closure({"a"}, self.UNITS), {0})
        self.assertEqual(reach.closure(set(), self.UNITS), set())
        self.assertEqual(reach.closure({"nothing", "held"}, self.UNITS), set())

    def test_fixed_point_through_a_cycle(self):
        self.assertEqual(reach.closure(frozenset({"f"}), self.UNITS), {1, 2, 3})
        self.assertEqual(reach.closure({"h2"}, self.UNITS), {1, 2, 3})
        self.assertEqual(reach.closure({"lone", "g"}, self.UNITS), {0, 1, 2, 3, 5})

    def test_a_chosen_dynamic_unit_means_everything(self):
        self.assertIsNone(reach.closure({"dyn"}, self.UNITS))
        units = self.UNITS + [(("to_dyn",), frozenset({"x", "dyn"}))]
        self.assertIsNone(reach.closure({"to_dyn"}, units))

    def test_an_unchosen_dynamic_unit_does_not_matter(self):
        self.assertEqual(reach.closure({"a", "f"}, self.UNITS), {0, 1, 2, 3})

    def test_with_real_analysis(self):
        ns = run("def f():\n    return g + 1\ng = 10\nh = 20\n"
                 "class C:\n    def m(self): return h * 2\n")
        units = [((n,), reach.value_code_names(ns[n], ns)) for n in ("f", "g", "h", "C")]
        self.assertEqual(reach.closure(names("f()"), units), {0, 1})
        self.assertEqual(reach.closure(names("C().m()"), units), {2, 3})
        self.assertIsNone(reach.closure(names("globals()"), units))


class Cheap(unittest.TestCase):
    def test_imports_nothing_heavy(self):
        path = os.path.join(support.ROOT, "worker", "py", "reach.py")
        code = ("import sys, types\n"
                "before = set(sys.modules)\n"
                f"exec(compile(open({path!r}).read(), 'reach', 'exec'), {{}})\n"
                "print(sorted(set(sys.modules) - before))\n")
        out = support.subprocess.run([sys.executable, "-I", "-S", "-c", code],
                                     capture_output=True, text=True, check=True).stdout
        self.assertEqual(out, "[]\n")


if __name__ == "__main__":
    unittest.main()


# ---- tests/cli/check_lazy.c's cells, lazily and fully loaded ----

def _c_strings(text):
    """The C string literals at the start of text, joined (with their escapes)."""
    import ast
    import re
    out, pos = [], 0
    literal = re.compile(r'\s*("(?:[^"\\]|\\.)*")')
    while True:
        m = literal.match(text, pos)
        if not m:
            return "".join(out)
        out.append(ast.literal_eval(m.group(1)))
        pos = m.end()


def _check_lazy_cells():
    """(seed, [cell]): the seed of tests/cli/check_lazy.c and the first
    cell each of its cases runs after it."""
    with open(os.path.join(support.ROOT, "tests", "cli", "check_lazy.c")) as f:
        src = f.read()
    seed = _c_strings(src.split("static const char seed_code[] =", 1)[1])
    cells = []
    for case in src.split("START_TEST(")[1:]:
        body = case.split("END_TEST", 1)[0]
        for opener in ("cell_then_all(", "call("):
            if opener in body:
                cells.append(_c_strings(body.split(opener, 1)[1]))
                break
    everything = _c_strings(src.split("static const char everything_code[] =", 1)[1])
    return seed, cells + [everything]


def _meets(value, seen=None):
    """What a pickler meets saving value (enough of it for these seeds)."""
    import functools
    seen = set() if seen is None else seen
    if id(value) in seen:
        return
    seen.add(id(value))
    yield value
    if isinstance(value, dict):
        parts = list(value.values())
    elif isinstance(value, (list, tuple, set)):
        parts = list(value)
    elif isinstance(value, functools.partial):
        parts = [value.func, *value.args, *value.keywords.values()]
    elif type(value).__module__ == "__main__":
        parts = [type(value), *getattr(value, "__dict__", {}).values()]
    else:
        parts = []
    for part in parts:
        yield from _meets(part, seen)


class LazyAgainstFull(unittest.TestCase):
    """Each cell of check_lazy.c run after its seed in a namespace holding
    only the units closure() chose (the seed's names one unit each, an
    instance with its class) prints and gives what it gives in the full
    namespace."""

    def setUp(self):
        self.main = sys.modules["__main__"]
        self.hook = sys.breakpointhook

    def tearDown(self):
        sys.modules["__main__"] = self.main
        sys.breakpointhook = self.hook

    def seeded(self, seed):
        module = types.ModuleType("__main__")
        sys.modules["__main__"] = module
        exec(cell(seed), module.__dict__)
        return module

    def units(self, ns):
        held = [n for n in ns if not n.startswith("__")]
        groups = []
        for name in held:
            for group in groups:    # an instance with its class
                if any(type(ns[name]) is ns[other] or type(ns[other]) is ns[name]
                       for other in group):
                    group.append(name)
                    break
            else:
                groups.append([name])
        units = []
        for group in groups:
            reads = set()
            for name in group:
                for obj in _meets(ns[name]):
                    got = reach.value_code_names(obj, ns)
                    if got is None:
                        reads = None
                        break
                    reads |= got
                if reads is None:
                    break
            units.append((tuple(group), None if reads is None else frozenset(reads)))
        return units

    def outcome(self, module, source):
        import contextlib
        import io
        tree = compile(source, "<cell>", "exec", _ast.PyCF_ONLY_AST)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], _ast.Expr) else None
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            try:
                exec(compile(tree, "<cell>", "exec"), module.__dict__)
                value = (eval(compile(_ast.Expression(last.value), "<cell>", "eval"),
                              module.__dict__) if last else None)
                result = repr(value)
            except Exception as e:
                result = f"{type(e).__name__}: {e}"
        return out.getvalue(), result

    def test_every_cell(self):
        seed, cells = _check_lazy_cells()
        self.assertGreater(len(cells), 25)
        lazy_ones = 0
        for source in cells:
            full = self.outcome(self.seeded(seed), source)
            module = self.seeded(seed)
            units = self.units(module.__dict__)
            chosen = reach.closure(reach.code_names(cell(source)), units)
            if chosen is not None:
                lazy_ones += 1
                keep = {n for i in chosen for n in units[i][0]}
                for names, _ in units:
                    for name in names:
                        if name not in keep:
                            del module.__dict__[name]
            self.assertEqual(self.outcome(module, source), full, source)
        self.assertGreater(lazy_ones, 5)    # not everything loads everything
