"""dolsot carried state: what a live interpreter keeps outside the namespace.

Every call runs in a fresh worker, which would silently reset whatever a cell
changed outside its namespace.  This module saves that state after each cell
as named pieces, stored in the session blob next to the namespace, and
restores them before the next cell:

  environ               variables set or removed by cells, re-applied on top
                        of the caller's environment
  cwd                   the working directory
  sys.path              entries added (or removed) by cells
  random                the random module's generator
  warnings              the warnings filters
  numpy.printoptions    np.set_printoptions
  numpy.errstate        np.seterr and np.seterrcall
  numpy.random          the legacy global RandomState (np.random.seed)
  pandas.options        every option changed from its default
  matplotlib.rcParams   every rcParam changed from its value at import,
                        except the backend
  module NAME           any module defining __dolsot_save__() and
                        __dolsot_restore__(state)

Module pieces (random, numpy, pandas, matplotlib, module NAME) exist only when
the session had imported the module; restoring one imports it again.

The toolboxes are imported before anything is restored: a live interpreter
imported them once, before any cell changed state, and a warm zygote forked
with them (and the libraries they use) already imported.  Then environ, cwd
and sys.path are restored, before the namespace loads, because values may
need them to load (a file reopened by a relative name, a class from a
directory a cell put on sys.path); the rest after the namespace, just before
the cell.  Library state is set through public APIs only and never assumes
a freshly imported module.

A piece that cannot be loaded or applied is skipped with a warning naming it;
the rest is restored and the cell runs.  With carrying off, nothing is
restored or saved, and the stored pieces are kept as they are.
"""

import importlib
import posix   # not os: a cold worker has no other use for it (about 0.5 ms)
import sys
import types
import warnings

import _dolsot

_EARLY = ("environ", "cwd", "sys.path")
_OWN = ("__main__", "_dolsot_worker", "_dolsot_session", "_dolsot_state")
_reason = _dolsot.embedded("session").reason


def _getcwd():
    try:
        return posix.getcwd()
    except OSError:
        return None


def _os():
    return importlib.import_module("os")


def _decode_environ(env):
    """posix.environ's bytes as os.environ would show them."""
    enc = sys.getfilesystemencoding()
    return {k.decode(enc, "surrogateescape"): v.decode(enc, "surrogateescape")
            for k, v in env.items()}


def _same(a, b):
    if a is b:
        return True
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # arrays and odd types: treat as changed
        return False


# ---- libraries: (piece, module, save(module) -> state or None, restore(module, state)) ----

def _np_print_save(np):
    return np.get_printoptions()


def _np_print_restore(np, state):
    np.set_printoptions(**state)


def _np_err_save(np):
    return {"err": np.geterr(), "call": np.geterrcall()}


def _np_err_restore(np, state):
    np.seterr(**state["err"])
    np.seterrcall(state["call"])


def _np_random_save(np):
    return np.random.get_state()


def _np_random_restore(np, state):
    np.random.set_state(state)


def _pandas_save(pd):
    config = sys.modules.get("pandas._config.config")
    registered = getattr(config, "_registered_options", None)
    if not isinstance(registered, dict):
        raise RuntimeError("pandas has no option registry to compare with")
    deprecated = getattr(config, "_deprecated_options", {})
    changed = {}
    for key, opt in registered.items():
        if key in deprecated:
            continue
        try:
            value = pd.get_option(key)
        except Exception:
            continue
        if not _same(value, opt.defval):
            changed[key] = value
    return changed or None


def _pandas_restore(pd, state, warn):
    for key, value in state.items():
        try:
            pd.set_option(key, value)
        except Exception as e:
            warn(f"pandas option {key}", "not restored", _reason(e))


def _mpl_save(mpl):
    now, orig = mpl.rcParams, mpl.rcParamsOrig
    changed = {k: v for k, v in dict.items(now)
               if k != "backend" and not (k in orig and _same(v, dict.__getitem__(orig, k)))}
    return changed or None


def _mpl_restore(mpl, state, warn):
    for key, value in state.items():
        if key == "backend":
            continue
        try:
            mpl.rcParams[key] = value
        except Exception as e:
            warn(f"matplotlib rcParam {key}", "not restored", _reason(e))


def _random_save(random):
    return random.getstate()


def _random_restore(random, state):
    random.setstate(state)


# Restored in this order; the piece name is what warnings show.
_LIBRARIES = (
    ("random", "random", _random_save, _random_restore),
    ("numpy.printoptions", "numpy", _np_print_save, _np_print_restore),
    ("numpy.errstate", "numpy", _np_err_save, _np_err_restore),
    ("numpy.random", "numpy", _np_random_save, _np_random_restore),
    ("pandas.options", "pandas", _pandas_save, _pandas_restore),
    ("matplotlib.rcParams", "matplotlib", _mpl_save, _mpl_restore),
)
_PER_KEY = (_pandas_restore, _mpl_restore)   # these report their own failures

# These pieces are carried once the session has used them: they were carried
# before, or the cell imported their module, or the cell changed them.  A
# module only preloaded (dill imports random, a toolbox numpy) and left alone
# is not: a generator is seeded afresh in every process, so saving it would
# change the session file on every call, and cold and warm calls would
# differ.  (pandas and matplotlib pieces hold only changes from the defaults.)
_BASELINED = {"random": _random_save, "numpy.random": _np_random_save,
              "numpy.printoptions": _np_print_save, "numpy.errstate": _np_err_save}


_PIECE_MODULE = {piece: module for piece, module, _, _ in _LIBRARIES}


def pieces_modules(pieces):
    """The modules restoring these carried pieces imports, for the session's
    module record (session.py); None when one of them is restored before
    the namespace loads (the environment, cwd, sys.path), as imports
    would then see the session's settings rather than the caller's."""
    if any(p in _EARLY for p in pieces):
        return None
    return {_PIECE_MODULE[p] if p in _PIECE_MODULE else p[len(_MODULE):]
            for p in pieces if p in _PIECE_MODULE or p.startswith(_MODULE)}


def _same_state(a, b):
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b) == 5 \
            and not isinstance(a[1], tuple):           # numpy: the key is an array
        return a[0] == b[0] and a[2:] == b[2:] and bool((a[1] == b[1]).all())
    return _same(a, b)
_MODULE = "module "


def _module_dict(mod):
    return object.__getattribute__(mod, "__dict__")


# Which modules carry state is found by looking at each module once: a
# forked warm worker that walked all of sys.modules on every call would touch
# (and so copy) thousands of the zygote's pages, about 10 ms.  After the first
# look, a meta path finder notes every name imported, so a later look (a
# call forked from the zygote that looked) sees only the modules it imported.
_imported = []          # names the import system was asked for, in order
_looked = None          # how many of them were looked at; None: none yet
_carrying = set()       # names of modules found to carry state


class _NoteImports:
    """Notes the names being imported; finds nothing itself."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        _imported.append(name)
        return None


def _is_carrier(name, mod):
    if not isinstance(mod, types.ModuleType) or name in _OWN:
        return False
    d = _module_dict(mod)
    return callable(d.get("__dolsot_save__")) and d.get("__name__") == name


def look_at_modules():
    """Find the carriers among the modules imported since the last look (the
    first look takes them all).  The warm path's zygote calls this after its
    imports, so that its calls start from the answer."""
    global _looked
    if _looked is None:           # from now on, note what gets imported
        names = list(sys.modules)
        sys.meta_path.insert(0, _NoteImports)
    else:
        names = _imported[_looked:]
    _looked = len(_imported)
    for name in names:
        if _is_carrier(name, sys.modules.get(name)):
            _carrying.add(name)


def _carriers():
    """{name: module} for imported modules that carry their own state."""
    look_at_modules()
    found = {}
    for name in sorted(_carrying):
        mod = sys.modules.get(name)
        if _is_carrier(name, mod):
            found[name] = mod
    return found


# ---- sys.path: cells' additions keep their place next to a baseline entry ----

def _path_diff(base, now):
    base_set, now_set = set(base), set(now)
    added, anchor = [], None
    for p in now:
        if p in base_set:
            anchor = p
        elif (p, anchor) not in added:
            added.append((p, anchor))
    removed = [p for p in base if p not in now_set]
    return (added, removed) if added or removed else None


def _path_apply(state):
    added, removed = state
    gone = set(removed)
    cur = [p for p in sys.path if p not in gone]
    have = set(cur)
    after = {}
    for p, anchor in added:
        if p not in have:
            have.add(p)
            after.setdefault(anchor, []).append(p)
    out = after.pop(None, [])
    for p in cur:
        out.append(p)
        out.extend(after.pop(p, ()))
    for rest in after.values():
        out.extend(rest)
    sys.path[:] = out


# ---- warnings filters ----

# The filters before and after a zygote imported a session's modules ahead
# of its load (worker.py's warm_up), or None.
_filters_preloaded = None


def note_preload(filters_before):
    """The zygote imported a session's modules: the warnings filters those
    imports added count as the load's, as on the cold path, where a call's
    baseline is taken before its load imports the same modules."""
    global _filters_preloaded
    if _filters_preloaded:   # a zygote grown from one that preloaded too
        filters_before = _filters_preloaded[0]
    _filters_preloaded = (filters_before, list(warnings.filters))


def _filters_baseline():
    filters = list(warnings.filters)
    if _filters_preloaded and filters == _filters_preloaded[1]:
        return list(_filters_preloaded[0])
    return filters


def _filters_restore(state):
    # Not filterwarnings(): it would recompile module names given as plain
    # strings (the default filters' '__main__') with re, a 3 ms import.
    warnings.resetwarnings()
    warnings.filters[:] = state


class Carry:
    """The carried state of one call: restore it, then save it after the cell."""

    def __init__(self, enabled):
        self.enabled = enabled
        self.warnings = []       # lines for stderr
        self._raw = {}           # piece -> pickled state, as stored
        self._loads = None
        if not enabled:
            return
        # The caller's state, before anything is restored: what "changed by
        # cells" is measured against.  Without os loaded, the environment is
        # kept as posix.environ's bytes, decoded only if a cell imports os.
        os = sys.modules.get("os")
        self._cwd0 = _getcwd()
        self._env1 = dict(os.environ) if os else None   # after restoring
        self._benv0 = None if os else dict(posix.environ)
        self._env_prev = {}
        self._path0 = list(sys.path)
        self._filters0 = _filters_baseline()
        self._at_cell = {}       # _BASELINED pieces as the cell began

    def _warn(self, piece, what, why):
        self.warnings.append(f"warning: carried state '{piece}' {what}: {why}")

    def _state(self, piece):
        """(True, state) of a stored piece, or (False, None) with a warning."""
        try:
            return True, self._loads(self._raw[piece])
        except BaseException as e:
            self._warn(piece, "not restored", _reason(e))
            return False, None

    def _apply(self, piece, fn, *args):
        try:
            fn(*args)
            return True
        except BaseException as e:
            self._warn(piece, "not restored", _reason(e))
            return False

    def restore_early(self, raw, loads):
        """Take the stored pieces; apply environ, cwd and sys.path."""
        self._raw, self._loads = dict(raw), loads
        if not self.enabled:
            return
        for piece in _EARLY:
            if piece not in self._raw:
                continue
            ok, state = self._state(piece)
            if not ok:
                continue
            if piece == "environ":
                if self._apply(piece, _env_apply, state):
                    self._env_prev = state
            elif piece == "cwd":
                self._apply(piece, posix.chdir, state)
            else:
                self._apply(piece, _path_apply, state)
        if "environ" in self._raw:
            self._env1 = dict(_os().environ)

    def restore_late(self):
        """Apply the module pieces, then the warnings filters; note the state
        of the _BASELINED pieces as the cell begins."""
        if not self.enabled:
            return
        if self._raw:
            self._restore_late()
        for piece, save in _BASELINED.items():
            mod = sys.modules.get(piece.split(".")[0])
            if mod is not None and piece not in self._raw:
                try:
                    self._at_cell[piece] = save(mod)
                except BaseException:
                    pass

    def _restore_late(self):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # our restoring is not the cell's
            for piece, module, _, restore in _LIBRARIES:
                if piece in self._raw:
                    self._restore_module(piece, module, restore)
            for piece in sorted(p for p in self._raw if p.startswith(_MODULE)):
                self._restore_module(piece, piece[len(_MODULE):], _carrier_restore)
        if "warnings" in self._raw:
            ok, state = self._state("warnings")
            if ok:
                self._apply("warnings", _filters_restore, state)

    def _restore_module(self, piece, module, restore):
        ok, state = self._state(piece)
        if not ok:
            return
        try:
            mod = importlib.import_module(module)
        except BaseException as e:
            self._warn(piece, "not restored", f"cannot import {module}: {_reason(e)}")
            return
        if restore in _PER_KEY:
            self._apply(piece, restore, mod, state, self._warn)
        else:
            self._apply(piece, restore, mod, state)

    def save(self):
        """({piece: state} to pickle, {piece: bytes} to keep as stored)."""
        if not self.enabled:
            return {}, {p: bytes(b) for p, b in self._raw.items()}
        pieces, keep = {}, {}
        filters = list(warnings.filters)
        for piece, value in (("environ", self._env_diff()), ("cwd", self._cwd_diff()),
                             ("sys.path", _path_diff(self._path0, sys.path))):
            if value is not None:
                pieces[piece] = value
        if filters != self._filters0:
            pieces["warnings"] = filters
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for piece, module, save, _ in _LIBRARIES:
                self._save_module(piece, sys.modules.get(module), save, pieces, keep)
            carriers = _carriers()
            for name, mod in sorted(carriers.items()):
                self._save_module(_MODULE + name, mod, _carrier_save, pieces, keep)
        for piece, body in self._raw.items():
            if piece.startswith(_MODULE) and piece[len(_MODULE):] not in carriers \
                    and piece[len(_MODULE):] not in sys.modules:
                keep[piece] = bytes(body)
        return pieces, keep

    def _save_module(self, piece, mod, save, pieces, keep):
        if mod is None:                  # not imported in this call: keep as is
            if piece in self._raw:
                keep[piece] = bytes(self._raw[piece])
            return
        try:
            value = save(mod)
        except BaseException as e:
            self._warn(piece, "not saved", _reason(e))
            if piece in self._raw:
                keep[piece] = bytes(self._raw[piece])
            return
        if value is None or (piece in self._at_cell
                             and _same_state(value, self._at_cell[piece])):
            return
        pieces[piece] = value

    def _env_diff(self):
        os = sys.modules.get("os")
        diff = dict(self._env_prev)
        if os is None:            # nothing could change os.environ
            return diff or None
        now = dict(os.environ)
        before = self._env1 if self._env1 is not None else _decode_environ(self._benv0)
        if now != before:
            for key in now.keys() | before.keys():
                if now.get(key) != before.get(key):
                    diff[key] = now.get(key)
        return diff or None

    def _cwd_diff(self):
        now = _getcwd()
        return now if now is not None and now != self._cwd0 else None

    def stored(self):
        """{piece: bytes} as loaded: kept for a piece that cannot be pickled now."""
        return self._raw

    def lost(self, pieces):
        """Report pieces the session pickler could not carry."""
        for piece, why in pieces:
            self._warn(piece, "not saved", why)


def _env_apply(state):
    environ = _os().environ
    for key, value in state.items():
        if value is None:
            environ.pop(key, None)
        else:
            environ[key] = value


def _carrier_save(mod):
    return _module_dict(mod)["__dolsot_save__"]()


def _carrier_restore(mod, state):
    restore = _module_dict(mod).get("__dolsot_restore__")
    if not callable(restore):
        raise RuntimeError(f"{mod.__name__} defines __dolsot_save__ but no "
                           "__dolsot_restore__")
    restore(state)
