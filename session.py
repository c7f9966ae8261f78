"""dolsot session blob: the namespace and the carried state, value by value.

A blob (version 2) is

    MAGIC     b"DLSS\\x02"
    u64 LE    length of the index
    index     a pickle of plain data only:
              {"units": [(names, length), ...], "carry": [(piece, length), ...]}
    bodies    back to back, in index order: every unit, then every piece

A unit holds one name (a pickle of its value) or a group of names whose
values share objects (a pickle of {name: value}), so that after `b = a` the
two names still load as one object.  Each unit and each carried piece is
unpickled on its own: one that fails is dropped with its reason and the rest
loads.  Only damage to the frame itself (magic, index, lengths) makes the
whole session unloadable.

The C pickler does the work.  dill is handed only what the C pickler cannot
carry (see _Pickler.reducer_override), so a session of plain data never pays
for importing dill; and whatever dill pickled is loaded back once at save
time, so a value that would not load again is reported by the call that made
it instead of by every later call.  A short denylist catches values that
pickle but cannot load where trying would have side effects (_deny_table).
"""

# The C module rather than pickle: pickle imports re, enum and functools,
# several milliseconds of every cold call.
import _pickle
import importlib
import io
import sys
import types

MAGIC = b"DLSS\x02"
MAGIC_V1 = b"DLSS\x01"
_HEAD = 8   # bytes of the index length, little-endian

# Immutable values shared by two names are pickled twice (and load as two
# equal objects) unless they are at least this long: then they are grouped,
# so that a large string or bytes value is not stored twice.
_BIG = 256

_dill = None


class Fatal(Exception):
    """A failure of the call itself, not of one value: the session is not saved."""


class _Refused(Exception):
    """A value that pickles but would not load again; the message says why."""


def _import_dill():
    global _dill
    if _dill is None:
        try:
            import dill
        except ImportError as e:
            raise Fatal("dolsot: the Python module 'dill' cannot be imported "
                        f"({e}); install it with: apt-get install python3-dill") from None
        _dill = dill
    return _dill


def _dill_loads(data):
    return _import_dill().loads(data)


def reason(exc):
    """An exception as one short line: 'Type: first line of the message'."""
    try:
        text = str(exc)
    except BaseException as e:   # a cell's exception class can make str() fail
        text = f"<str() failed: {type(e).__name__}>"
    text = text.splitlines()[0] if text else ""
    if len(text) > 200:   # a message can be megabytes; the reason is one line
        text = text[:200] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _locatable(obj):
    """True when pickle can find obj again by module and qualified name."""
    module = sys.modules.get(getattr(obj, "__module__", None) or "")
    if module is None or module is sys.modules["__main__"]:
        return False
    target = module
    for part in getattr(obj, "__qualname__", "").split("."):
        target = getattr(target, part, None)
        if target is None:
            return False
    return target is obj


def _needs_dill(obj):
    if isinstance(obj, (types.FunctionType, type)):
        return not _locatable(obj)
    return False


# ---- the denylist: values that pickle but cannot be loaded again ----

_FILE_TYPES = (io.TextIOWrapper, io.BufferedReader, io.BufferedWriter,
               io.BufferedRandom, io.FileIO)
_EXCEL = ("a pandas ExcelWriter cannot be restored (its workbook is not "
          "saved with it): write and close it within one cell")


def _check_file(f):
    """dill reopens a file by name and mode when it loads it."""
    mode = getattr(f, "mode", "")
    name = getattr(f, "name", None)
    if isinstance(mode, str) and "x" in mode:
        return ("a file opened with mode 'x' cannot be reopened: the file "
                "exists now")
    if not isinstance(name, str):
        return "a file opened from a descriptor cannot be reopened by name"
    return None


def _truncates(f):
    mode = getattr(f, "mode", "")
    return isinstance(mode, str) and "w" in mode


def _subclasses(cls):
    seen, todo = [], [cls]
    while todo:
        c = todo.pop()
        if c not in seen:
            seen.append(c)
            todo.extend(type.__subclasses__(c))
    return seen


def _deny_table():
    """{type: check(obj) -> reason or None}, for the types loaded now."""
    deny = dict.fromkeys(_FILE_TYPES, _check_file)
    pandas = sys.modules.get("pandas")
    writer = getattr(pandas, "ExcelWriter", None) if pandas else None
    if isinstance(writer, type):
        for cls in _subclasses(writer):
            deny[cls] = lambda obj: _EXCEL
    return deny


# ---- pickling ----

def _identity_matters(obj):
    """Whether two names holding obj must load it as one object."""
    t = type(obj)
    if t in (str, bytes, tuple, frozenset):
        return len(obj) >= _BIG
    if isinstance(obj, (types.FunctionType, type)):
        return not _locatable(obj)
    if isinstance(obj, (list, dict, set, bytearray)):
        return True
    try:
        object.__getattribute__(obj, "__dict__")
        return not isinstance(obj, (types.ModuleType, types.BuiltinFunctionType))
    except AttributeError:
        pass
    try:
        with memoryview(obj) as view:
            return not view.readonly
    except Exception:  # no buffer: an opaque, most likely immutable value
        return False


class _Dumper:
    """One save: the denylist, and what dill pickled for which object."""

    def __init__(self):
        self.deny = _deny_table()
        self.force = set()      # ids of values the C pickler must hand to dill
        self.dilled = {}        # id -> (obj, bytes): dill's pickle, checked
        self._dill_pickler = None

    def refuse(self, obj):
        check = self.deny.get(type(obj))
        if check is not None:
            why = check(obj)
            if why:
                raise _Refused(why)

    def dumps(self, value):
        """value's pickle (as chunks) and the pickler's memo ({id: (index, obj)})."""
        chunks = _Chunks()
        p = _Pickler(chunks, self)
        p.dump(value)
        return chunks, p.memo.copy()

    def dill_bytes(self, obj):
        """dill's pickle of obj, loaded back once unless that has side effects."""
        hit = self.dilled.get(id(obj))
        if hit is not None:
            return hit[1]
        dill = _import_dill()
        buf = io.BytesIO()
        p = self._dill_class()(buf, self)
        p.dump(obj)
        data = buf.getvalue()
        if not p.truncates:
            # Reopening a file opened for writing would truncate it now.
            try:
                dill.loads(data)
            except Fatal:
                raise
            except BaseException as e:
                raise _Refused(f"would not load again: {reason(e)}") from None
        self.dilled[id(obj)] = (obj, data)
        return data

    def _dill_class(self):
        if self._dill_pickler is None:
            self._dill_pickler = _make_dill_pickler(_import_dill())
        return self._dill_pickler


class _Chunks(list):
    """A pickler's file that keeps what it is written, uncopied.

    The C pickler hands a large bytes value to write() as the object itself,
    so a 50 MB value costs no second 50 MB until it reaches the session file.
    """

    def write(self, data):
        self.append(data if type(data) is bytes else bytes(data))


def _size(chunks):
    return sum(map(len, chunks))


class _Pickler(_pickle.Pickler):
    def __init__(self, file, dumper):
        super().__init__(file, protocol=5)
        self._d = dumper

    def reducer_override(self, obj):
        self._d.refuse(obj)
        if isinstance(obj, types.ModuleType):
            return importlib.import_module, (obj.__name__,)
        if id(obj) in self._d.force or _needs_dill(obj):
            return _dill_loads, (self._d.dill_bytes(obj),)
        return NotImplemented


def _make_dill_pickler(dill):
    class _DillPickler(dill.Pickler):
        """dill's pickler, with the denylist applied at every depth."""

        def __init__(self, file, dumper):
            super().__init__(file, dill.settings["protocol"])
            self._d = dumper
            self.truncates = False

        def reducer_override(self, obj):
            if type(obj) in self._d.deny:
                self._d.refuse(obj)
                if isinstance(obj, _FILE_TYPES) and _truncates(obj):
                    self.truncates = True
            return NotImplemented

    return _DillPickler


def _dump_one(d, value):
    """(pickle, memo) of one value, with dill for what the C pickler cannot do."""
    try:
        return d.dumps(value)
    except (Fatal, _Refused):
        raise
    except BaseException:  # any failure means: hand the whole value to dill
        pass
    d.dill_bytes(value)
    d.force.add(id(value))
    return d.dumps(value)


def _groups(names, memos):
    """Partition names (by index) into groups whose values share objects."""
    parent = list(range(len(names)))

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner = {}
    for i, memo in enumerate(memos):
        for oid in owner.keys() & memo.keys():
            if _identity_matters(memo[oid][1]):
                a, b = root(i), root(owner[oid])
                if a != b:
                    parent[max(a, b)] = min(a, b)
        owner.update(dict.fromkeys(memo.keys() - owner.keys(), i))
    groups = {}
    for i in range(len(names)):
        groups.setdefault(root(i), []).append(i)
    return [groups[k] for k in sorted(groups)]


def _units(d, state, kept):
    """[(names, pickle)]: one unit per name, or per group sharing objects."""
    names = sorted(kept)
    units = []
    for group in _groups(names, [kept[n][1] for n in names]):
        members = tuple(names[i] for i in group)
        if len(members) == 1:
            units.append((members, kept[members[0]][0]))
            continue
        try:
            units.append((members, d.dumps({n: state[n] for n in members})[0]))
        except BaseException:  # keep the names, if not their sharing
            units.extend(((n,), kept[n][0]) for n in members)
    return units


def dump(state, pieces, raw_pieces, previous=None, count=0):
    """Pickle the namespace and the carried state into one blob, as parts.

    state is {name: value}; pieces is {piece: value} to pickle, raw_pieces
    {piece: bytes} already pickled (kept from the loaded blob), previous
    {piece: bytes} what to keep for a piece that cannot be pickled; count
    the session's cell counter.  Returns
    (parts, held names, [(name, reason)] dropped, [(piece, reason)] pieces
    that could not be pickled).
    """
    d = _Dumper()
    carry, lost = [], []
    # Pieces first: loading dill's pickles back may run code (a class's
    # __init_subclass__) that a module's carried state could see.
    for piece in sorted(pieces):
        try:
            carry.append((piece, _dump_one(d, pieces[piece])[0]))
        except Fatal:
            raise
        except BaseException as e:
            lost.append((piece, str(e) if isinstance(e, _Refused) else reason(e)))
            if previous and piece in previous:
                carry.append((piece, [previous[piece]]))
    carry.extend((p, [b]) for p, b in sorted(raw_pieces.items()) if p not in pieces)
    kept, dropped = {}, []
    for name in sorted(state):
        try:
            kept[name] = _dump_one(d, state[name])
        except Fatal:
            raise
        except _Refused as e:
            dropped.append((name, str(e)))
        except BaseException as e:
            dropped.append((name, reason(e)))
    units = _units(d, state, kept)
    return _assemble(units, carry, count), sorted(kept), dropped, lost


def _assemble(units, carry, count=0):
    """The blob as a list of bytes-like parts, to be written back to back
    (the worker writes them straight into the session file: no join)."""
    index = _pickle.dumps({"units": [(n, _size(b)) for n, b in units],
                          "carry": [(p, _size(b)) for p, b in carry],
                          "count": count}, protocol=5)
    return _coalesce([MAGIC, len(index).to_bytes(_HEAD, "little"), index]
                     + [c for _, b in units for c in b] + [c for _, b in carry for c in b])


_SMALL = 1 << 16


def _coalesce(parts):
    """Join runs of small parts, so that many small values cost few writes."""
    out, run = [], []
    for part in parts:
        if len(part) >= _SMALL:
            if run:
                out.append(b"".join(run))
                run = []
            out.append(part)
        else:
            run.append(part)
    if run:
        out.append(b"".join(run))
    return out


# ---- loading ----

class _PlainUnpickler(_pickle.Unpickler):
    """The index is plain data: refuse to import anything while reading it."""

    def find_class(self, module, name):
        raise _pickle.UnpicklingError(f"unexpected global {module}.{name}")


def load_error(session, why):
    return Fatal(f"dolsot: session '{session}' cannot be loaded: {why}; "
                 f"run 'dolsot --reset {session}' to start it afresh")


class Stored:
    """A parsed blob: units to load into a namespace, carried pieces as bytes."""

    def __init__(self, units, carry, whole=None, count=0):
        self.count = count      # cells the session has run (execution_count)
        self.units = units      # [(names, memoryview)]
        self.carry = carry      # {piece: memoryview}
        self._whole = whole     # a version 1 session, already unpickled

    def load_into(self, ns):
        """Load every unit into ns; returns [(name, reason)] for those dropped."""
        if self._whole is not None:
            ns.update(self._whole)
            return []
        dropped = []
        for names, body in self.units:
            try:
                value = _pickle.loads(body)
                if len(names) == 1:
                    ns[names[0]] = value
                else:
                    ns.update((n, value[n]) for n in names)
            except Fatal:
                raise
            except BaseException as e:  # one value never sinks the session
                dropped.extend((n, reason(e)) for n in names)
        return dropped


def loads_piece(body):
    """Unpickle one carried piece (raises what the unpickler raises)."""
    return _pickle.loads(body)


def _index(session, blob):
    if len(blob) < len(MAGIC) + _HEAD:
        raise load_error(session, "truncated")
    n = int.from_bytes(blob[len(MAGIC):len(MAGIC) + _HEAD], "little")
    start = len(MAGIC) + _HEAD
    if n > len(blob) - start:
        raise load_error(session, "truncated")
    try:
        index = _PlainUnpickler(io.BytesIO(blob[start:start + n])).load()
        units = [(tuple(str(x) for x in names), int(size))
                 for names, size in index["units"]]
        carry = [(str(p), int(size)) for p, size in index["carry"]]
        count = int(index.get("count", 0))
    except BaseException as e:
        raise load_error(session, f"bad index ({reason(e)})") from None
    return start + n, units, carry, count


def load(session, blob):
    """Parse a blob (bytes or memoryview).  Raises Fatal when it is damaged
    as a whole; single values are only unpickled by Stored.load_into."""
    view = memoryview(blob)
    magic = bytes(view[:len(MAGIC)])
    if magic == MAGIC_V1:
        return _load_v1(session, view)
    if magic != MAGIC:
        raise load_error(session, "not a dolsot session (bad magic)")
    pos, units, carry, count = _index(session, view)
    if any(size < 0 for _, size in units + carry) or \
            pos + sum(size for _, size in units + carry) != len(view):
        raise load_error(session, "truncated or has trailing bytes")
    out_units, out_carry = [], {}
    for names, size in units:
        out_units.append((names, view[pos:pos + size]))
        pos += size
    for piece, size in carry:
        out_carry[piece] = view[pos:pos + size]
        pos += size
    return Stored(out_units, out_carry, count=count)


def _load_v1(session, view):
    """Version 1: one pickle of {name: value}; it loads whole or not at all."""
    try:
        state = _pickle.loads(view[len(MAGIC_V1):])
    except Fatal:
        raise
    except BaseException as e:
        raise load_error(session, reason(e)) from None
    if not isinstance(state, dict):
        raise load_error(session, "not a dolsot session")
    return Stored([], {}, whole=state)
