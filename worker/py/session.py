"""dolsot session blob: the namespace and the carried state, value by value.

A session (version 4) is a small head naming units: immutable byte strings
(one pickle each) named by their SHA-256, which a store that keeps units
holds once for all its sessions (HACKING.md, "Session format"):

    MAGIC     b"DLSS\\x04"
    u64 LE    length of the index
    index     a pickle of plain data only, a dict of sections:
              {"units": [(names, ref), ...],
               "carry": [(piece, ref), ...],
               "kept":  [(names, ref, members), ...]      (when not empty)
               "memory": {...}                            (when not empty)
               "parts": [(ref, (ref, ...)), ...]}         (when not empty)
    u32 LE    length of the module record
    record    the modules loading the session imports, each name followed
              by a newline, sorted (see below); plain text, so that the
              client reads it without unpickling (modrec.c)
    u32 LE    the number of refs
    refs      each 32 bytes of SHA-256 and a u64 LE size, sorted by hash;
              an index entry's ref is a position in this table
    pack      what follows the head: entries of 32 bytes of hash, u64 LE
              size and the unit's bytes, for refs the reader cannot get
              elsewhere

Where the units are is the call's `units` (the request's field): None, the
store keeps whole sessions, so the pack holds every ref (the client checked
the whole blob's signature); "-", the store keeps units and the client
packed every ref into the blob it handed over; else the store's objects
directory, PATH/HH/REST by the hash's hex digits.  A unit read from a pack
the client made, or from the directory, is checked against its hash before
it is unpickled; one whose bytes are missing or do not match is dropped
with the reason, and the rest loads.  A save writes every ref into the pack
in whole mode, and otherwise the refs the loaded head did not name (the
store has the others) and every unit under _INLINE_MAX bytes, which the
store keeps in the pack after the head instead of as a unit of its own.

Version 3 is the same but with every body inline, in index order, and
sizes instead of refs in the index; version 2 has no module record either.
Both load, and are saved as version 4.

The module record names what loading imports: the modules whose classes
and functions the units' pickles name and the modules held by name, as
the picklers meet them (_Dumper.note), and the modules of the carried
pieces that restoring imports again (the pieces_modules argument of
dump).  The warm server reads it (modrec.c) to have a zygote import them
before a call loads the session.  The record is left empty when the
session carries an environment, working directory or sys.path of its own
(that restoring applies before the namespace loads), so that no module
is imported under other settings than the cold path's.

A unit holds one name (a pickle of its value) or a group of names whose
values share objects (a pickle of {name: value}), so that after `b = a` the
two names still load as one object.  Each unit and each carried piece is
unpickled on its own: one that fails is dropped with its reason and the rest
loads.  Only damage to the frame itself (magic, index, lengths) makes the
whole session unloadable.  A reader ignores index keys it does not know;
a new section goes at the end of the index.

A value that cannot change without being rebound (_frozen: str, bytes,
numbers, None, and small tuples and frozensets of these) and that a name
still holds as it was loaded is not pickled again: its unit is named by
the same ref (Stored.reuse).  In a live process, nor is a list, dict or
set of such plain values that the name still holds with the very same
items in the same order as its last save (_reusable, worker/flat.h).
Any other value is pickled, and a pickle that hashes as a ref the loaded
head named is not written again.

A numpy array of _PART_MIN bytes or more is pickled as a call of
_array naming its buffer's parts, units of their own cut by _chunk_sizes,
by (hash, size); "parts" lists, for each unit whose pickle names parts,
their refs, so that a unit saved by ref without being loaded keeps its
parts named.  A FileStore's call maps the parts (_buffer); a save hashes
again only the parts of a mapped region the cell wrote (_Dumper._cut).

A name's bytes value of _PART_MIN bytes or more is stored the same way,
as a call of _bytes_of naming its parts; a FileStore's call maps them into
a bytes object of their own (_dolsot.map_bytes), so that a 1 GiB value is
ready at once and a cell reads only the pages it touches.  Saved again
unchanged, it names the parts it was mapped from without hashing them.  A
large bytes value that a second name's value also holds is pickled inline
with it, as before, so that the two still share it.

A unit that fails to load in one call for a reason of that call (_THIS_CALL:
its module is not importable there, a toolbox's object in a call without
that --toolbox or in a sandbox that hides the toolbox's directory) is not
dropped but kept unloaded: its ref is saved again unchanged in "kept", with
members, the names its pickle holds, and names, those of them the session
still holds.  A later call that can load it gets its values back.  A cell
that assigns or deletes one of its names ends that name (a group's other
names stay); --reset ends all.  At most KEPT_MAX bytes are kept so: past
that, the largest such units are dropped with their reason.  Held files
that cannot come back are dropped, never kept (files.py).

The index's "memory" is what the hints need to know about earlier calls;
it is left out while it is empty (so are older blobs); see remember():

    {"dropped": [(name, type, why, statement)],  names dropped because
                                                 they could not be pickled
     "failed": [(name, statement, error)]}       names a failed cell's code
                                                 binds that never got bound

statement is the first line of the cell's statement that binds the name
("" when the cell has none), error the failed cell's exception type.  Each
list keeps the newest MEMORY_MAX entries, and forgets a name as soon as the
session holds it again.

A live session's process (--live, live.h) saves with "live" first in the
index, {"token": random hex, "only": [(name, type)]}: the token makes each
of its saves unlike any other session's head (the zygote checks by it that
the store still has what the process holds), and "only" names the values
it holds that could not be saved, which a call that loads this blob
instead reports lost.

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

MAGIC = b"DLSS\x04"
MAGIC_V3 = b"DLSS\x03"
MAGIC_V2 = b"DLSS\x02"
MAGIC_V1 = b"DLSS\x01"
_HEAD = 8   # bytes of the index length, little-endian
_RECORD_HEAD = 4   # bytes of the module record's length, little-endian
# The record's bounds (modrec.h says the same): past them it is left empty.
RECORD_MAX_BYTES = 16384
RECORD_MAX_MODULES = 256

# Immutable values shared by two names are pickled twice (and load as two
# equal objects) unless they are at least this long: then they are grouped,
# so that a large string or bytes value is not stored twice.
_BIG = 256

_HASH = 32   # bytes of a unit's SHA-256
# A unit smaller than this is kept with the head (store/units.h's
# UNITS_INLINE_MAX): every save packs it, as whole mode does every unit.
_INLINE_MAX = 4096
_REF = _HASH + 8   # a ref: the hash and a u64 LE size
_REF_COUNT = 4   # bytes of the number of refs, little-endian
_REFS_MAX = 1 << 20
# The longest tuple or frozenset _frozen looks through: past it, checking
# costs more than pickling it again would.
_FROZEN_MAX = 4096
# A numpy array whose buffer holds at least this many bytes is stored
# with its buffer as units of their own, its parts: chunks of _CHUNK
# bytes (the last one up to twice that), which a FileStore's call maps
# back instead of reading (_buffer, worker/unitmap.h), and which a save
# writes again only where the cell wrote to them (_Dumper.array_parts).
_PART_MIN = 1 << 20
_CHUNK = 4 << 20

# The most bytes of units kept unloaded (see above) one session carries.
KEPT_MAX = 64 << 20
# Sections of the index that have bodies, in the order the bodies come.
_SECTIONS = ("units", "carry", "kept")

_dill = None

MEMORY_MAX = 32


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


# ---- held files: files.py's rule, not dill's ----

_FILE_TYPES = (io.TextIOWrapper, io.BufferedReader, io.BufferedWriter,
               io.BufferedRandom, io.FileIO)


def _files():
    import _dolsot
    return _dolsot.embedded("files")


def _held_file(saved):
    """A held file, reopened by files.py's rule (a session refers to this)."""
    return _files().reopen(saved)


def _file_reduce(f):
    try:
        return _held_file, (_files().state(f),)
    except _files().Refused as e:
        raise _Refused(str(e)) from None


# ---- the denylist: values that pickle but cannot be loaded again ----

_EXCEL = ("a pandas ExcelWriter cannot be restored (its workbook is not "
          "saved with it): write and close it within one cell")


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
    deny = {}
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


_NAMED_TYPES = (type, types.FunctionType, types.BuiltinFunctionType)
_NOTED = (types.ModuleType,) + _NAMED_TYPES


class _Dumper:
    """One save: the denylist, and what dill pickled for which object."""

    def __init__(self):
        self.deny = _deny_table()
        self.force = set()      # ids of values the C pickler must hand to dill
        self.dilled = {}        # id -> (obj, bytes): dill's pickle, checked
        self.modules = set()    # what the pickles name, for the module record
        self.unit = _Notes()    # what the unit being pickled names
        self.runs = {}          # (id(class), of the class itself) -> (class,
                                # whether loading runs code: _runs)
        self._dill_pickler = None
        numpy = sys.modules.get("numpy")
        self.ndarray = getattr(numpy, "ndarray", None)
        self.parting = False    # whether arrays go to parts (not in carried pieces)
        self.arrays = {}        # id(array) -> (array, reduce args, its parts)
        self.dirty = {}         # id(region) -> (region, Region.dirty())
        self.shared = set()     # ids of arrays whose memory two names' arrays share
        self.classes = {}       # id(class) -> class, of every instance pickled
        self.constants = None   # class_constants(), once asked for

    def note(self, obj):
        """Remember the module a pickle of obj names: a module held by
        name, a class's or a function's own module (picklers meet every
        class and function a pickle names, a reduce's callable included);
        and a function or class of the cells, whose code the unit holds."""
        self.unit.code.append(obj)
        if isinstance(obj, types.ModuleType):
            self.modules.add(obj.__name__)
            self.unit.modules.add(obj.__name__)
        elif isinstance(obj, _NAMED_TYPES):
            module = getattr(obj, "__module__", None)
            if type(module) is str:
                self.modules.add(module)
                self.unit.modules.add(module)
                if module == "__main__" and isinstance(obj, type):
                    self.unit.runs = self.unit.runs or self._runs(obj, obj)

    def note_instance(self, obj):
        """An instance of a class of the cells may run that class's code
        when it loads (reach.runs_on_load)."""
        cls = type(obj)
        self.classes[id(cls)] = cls
        if getattr(cls, "__module__", None) == "__main__":
            self.unit.runs = self.unit.runs or self._runs(cls, obj)

    def class_constants(self):
        """The ids of the lists, dicts and sets that the classes of the
        instances pickled hold as class attributes (pandas' _metadata, a
        [] every DataFrame's state names): the same object in two names'
        pickles only because it is their class's, which does not make the
        names one unit (loaded, each instance has its own copy anyway).
        Found once per save, when first asked."""
        if self.constants is None:
            self.constants = set()
            for cls in self.classes.values():
                for k in getattr(cls, "__mro__", ()):
                    self.constants.update(id(v) for v in vars(k).values()
                                          if type(v) in (list, dict, set))
        return self.constants

    def _runs(self, cls, obj):
        """runs_on_load(obj), once per class and per kind: the class itself
        (pickled by value), or an instance of it."""
        key = (id(cls), obj is cls)
        hit = self.runs.get(key)
        if hit is None or hit[0] is not cls:
            hit = self.runs[key] = (cls, _reach_call("runs_on_load", obj, True))
        return hit[1]

    def refuse(self, obj):
        check = self.deny.get(type(obj))
        if check is not None:
            why = check(obj)
            if why:
                raise _Refused(why)

    def array_parts(self, a):
        """The reduction of a numpy array whose buffer becomes parts, or None
        when its own pickle keeps the buffer (not contiguous, object dtype).
        An array met again in this save (a group's second pickle, a second
        name) reuses its parts."""
        hit = self.arrays.get(id(a))
        if hit is None:
            # numpy's own reduction copies an array it cannot hand over as
            # a buffer: not asked for one that is not contiguous.
            if a.dtype.hasobject or not (a.flags.c_contiguous or a.flags.f_contiguous):
                return None
            try:
                rv = a.__reduce_ex__(5)
                view = rv[1][0].raw() if len(rv) == 2 and type(rv[1][0]) is _PickleBuffer else None
            except (BufferError, TypeError, ValueError, IndexError):
                view = None
            if view is None:
                return None
            hit = self.arrays[id(a)] = (a, rv, view.readonly, self._cut(view))
        _, rv, readonly, parts = hit
        self.unit.parts.extend(parts)
        return _array, (rv[0], tuple((p.hash, p.size) for p in parts), readonly, rv[1][1:])

    def bytes_parts(self, value):
        """A name's large bytes value as _BigBytes: the parts it was mapped
        from, unhashed, when this call mapped it (_bytes_of); else cut and
        hashed as an array's buffer is."""
        parts = _bytes_tag(value)
        if type(parts) is not tuple:
            parts = self._cut(memoryview(value))
        self.unit.parts.extend(parts)
        return _BigBytes(parts)

    def share(self, values):
        """Note the arrays whose memory arrays of two of values share."""
        seen = set()
        for v in values:
            if type(v) is self.ndarray:
                root = id(self._root(v))
                (self.shared if root in seen else seen).add(root)

    def _root(self, a):
        """The array whose memory a uses (numpy's base chain, to its end)."""
        while type(a.base) is self.ndarray:
            a = a.base
        return a

    def view_of(self, a):
        """The reduction of a numpy view a as a view of the array whose
        memory it uses, when that memory is shared by the arrays of two
        names or more (then they are one unit, and writing through one
        changes the others after loading as before it); else None: it is
        pickled as a copy of what it sees, as numpy does."""
        root = self._root(a)
        if root is a or id(root) not in self.shared or root.dtype.hasobject \
                or not (root.flags.c_contiguous or root.flags.f_contiguous):
            return None
        offset = a.__array_interface__["data"][0] - root.__array_interface__["data"][0]
        return _view, (root, offset, a.shape, a.strides, a.dtype, a.flags.writeable)

    def _cut(self, view):
        """view's bytes as parts: a chunk of a region this call mapped that
        the cell did not write is its loaded part, unhashed; any other is
        hashed, and named by the loaded part when it hashes the same."""
        sizes = _chunk_sizes(view.nbytes)
        old, dirty = self._mapped(view, len(sizes))
        parts, at = [], 0
        for i, size in enumerate(sizes):
            if old is not None and dirty is not None and not dirty[i]:
                parts.append(old[i])
            else:
                chunk = view[at:at + size]
                h = _sha256([chunk])
                parts.append(old[i] if old is not None and old[i].hash == h
                             else Body(h, size, [chunk]))
            at += size
        return tuple(parts)

    def _mapped(self, view, n):
        """(the loaded parts, which of them the cell wrote) when view is a
        whole region this call mapped in n chunks; else (None, None)."""
        found = _region_of(view)
        if found is None or found[1] != 0:
            return None, None
        region = found[0]
        if region.nbytes != view.nbytes or type(region.tag) is not tuple or len(region.tag) != n:
            return None, None
        hit = self.dirty.get(id(region))
        if hit is None:
            hit = self.dirty[id(region)] = (region, region.dirty())
        return region.tag, hit[1]

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
            self.unit.add(hit[2])
            return hit[1]
        dill = _import_dill()
        buf = io.BytesIO()
        outer, self.unit = self.unit, _Notes()
        try:
            p = self._dill_class()(buf, self)
            p.dump(obj)
        finally:
            notes, self.unit = self.unit, outer
            outer.add(notes)
        data = buf.getvalue()
        # Held files reopen without changing anything on disk (files.py).
        try:
            dill.loads(data)
        except Fatal:
            raise
        except BaseException as e:
            raise _Refused(f"would not load again: {reason(e)}") from None
        self.dilled[id(obj)] = (obj, data, notes)
        return data

    def _dill_class(self):
        if self._dill_pickler is None:
            self._dill_pickler = _make_dill_pickler(_import_dill())
        return self._dill_pickler


class _Notes:
    """What one unit's pickle names: modules, the functions, classes and
    modules it holds (whose code says which names they read), whether it
    holds a file, whether loading it runs code of the cells' classes."""

    __slots__ = ("modules", "code", "files", "runs", "parts")

    def __init__(self):
        self.modules, self.code, self.files, self.runs = set(), [], False, False
        self.parts = []         # the Bodies of its arrays' buffers

    def add(self, other):
        self.modules |= other.modules
        self.code.extend(other.code)
        self.files = self.files or other.files
        self.runs = self.runs or other.runs
        self.parts.extend(other.parts)


def _reach_call(name, obj, failed):
    """reach.py's name(obj), or failed when reach.py cannot be had (this
    module imported outside the worker, by a test)."""
    try:
        import _dolsot
        reach = _dolsot.embedded("reach")
    except ImportError:
        return failed
    return getattr(reach, name)(obj)


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
        if isinstance(obj, _NOTED):
            self._d.note(obj)
        else:
            self._d.note_instance(obj)
        if type(obj) is self._d.ndarray and self._d.parting:
            reduced = (self._d.view_of(obj) if obj.base is not None else None) or (
                self._d.array_parts(obj) if obj.nbytes >= _PART_MIN else None)
            if reduced is not None:
                return reduced
        if type(obj) in _FILE_TYPES:
            self._d.unit.files = True
            return _file_reduce(obj)
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

        def reducer_override(self, obj):
            if isinstance(obj, _NOTED):
                self._d.note(obj)
            else:
                self._d.note_instance(obj)
            if type(obj) in _FILE_TYPES:
                self._d.unit.files = True
                return _file_reduce(obj)
            if type(obj) in self._d.deny:
                self._d.refuse(obj)
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


def _groups(names, memos, constants=frozenset):
    """Partition names (by index) into groups whose values share objects;
    constants() gives the ids of objects whose sharing does not count,
    asked for only when two names' pickles share one."""
    parent = list(range(len(names)))

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner = {}
    for i, memo in enumerate(memos):
        for oid in owner.keys() & memo.keys():
            if _identity_matters(memo[oid][1]) and oid not in constants():
                a, b = root(i), root(owner[oid])
                if a != b:
                    parent[max(a, b)] = min(a, b)
        owner.update(dict.fromkeys(memo.keys() - owner.keys(), i))
    groups = {}
    for i in range(len(names)):
        groups.setdefault(root(i), []).append(i)
    return [groups[k] for k in sorted(groups)]


def _units(d, state, kept, notes):
    """[(names, pickle, parts)]: one unit per name, or per group sharing
    objects; parts the Bodies of its arrays' buffers (_Dumper.array_parts)."""
    names = sorted(kept)
    units = []
    for group in _groups(names, [kept[n][1] for n in names], d.class_constants):
        members = tuple(names[i] for i in group)
        if len(members) == 1:
            units.append((members, kept[members[0]][0], notes[members[0]].parts))
            continue
        d.unit = _Notes()
        try:
            units.append((members, d.dumps({n: state[n] for n in members})[0], d.unit.parts))
        except BaseException:  # keep the names, if not their sharing
            units.extend(((n,), kept[n][0], notes[n].parts) for n in members)
    return units


def remember(memory, held, dropped, failed):
    """The memory for the index of the blob a call saves: memory the loaded
    one (a dict from Stored.memory), held the names the new blob keeps,
    dropped [(name, type, why, statement)] and failed [(name, statement,
    error)] as this call found them."""
    gone = set(held) | {d[0] for d in dropped} | {f[0] for f in failed}
    keep = {key: [r for r in memory.get(key, ()) if r[0] not in gone]
            for key in ("dropped", "failed")}
    out = {"dropped": (keep["dropped"] + [tuple(d) for d in dropped])[-MEMORY_MAX:],
           "failed": (keep["failed"] + [tuple(f) for f in failed
                                        if f[0] not in held])[-MEMORY_MAX:]}
    return out if out["dropped"] or out["failed"] else {}


def _plain_memory(raw):
    """The memory from an index, checked to be the shape remember() makes."""
    if not isinstance(raw, dict):
        return {}
    out = {}
    for key, width in (("dropped", 4), ("failed", 3)):
        out[key] = [tuple(r) for r in raw.get(key, ())
                    if isinstance(r, (tuple, list)) and len(r) == width
                    and all(isinstance(x, str) for x in r)][-MEMORY_MAX:]
    return out


def _type_name(value):
    t = type(value)
    module = getattr(t, "__module__", "") or ""
    name = getattr(t, "__qualname__", None) or t.__name__
    return name if module in ("builtins", "__main__") else f"{module}.{name}"


def dump(state, pieces, raw_pieces, previous=None, unloaded=(), ended=(),
         memory=None, failed=(), statements=None, count=0, reuse=None, live=None,
         pieces_modules=None, units=None, have=(), skipped=()):
    """Pickle the namespace and the carried state into one blob, as parts.

    state is {name: value}; pieces is {piece: value} to pickle, raw_pieces
    {piece: bytes} already pickled (kept from the loaded blob), previous
    {piece: bytes} what to keep for a piece that cannot be pickled;
    unloaded is Stored.unloaded, the units this call could not load, and
    ended names the cell deleted; memory the loaded index's memory, failed
    [(name, statement, error)] the names a failed cell did not bind, and
    statements a function from names to {name: statement} (called only
    when a name is dropped), for remember(); count is the session's cell
    counter; reuse is Stored.reuse (the units of values still bound as
    they were loaded, saved by their ref); live, a dict, asks for the
    index's "live" entry (a live process's save) and gets the new memory
    under "memory" and the new reuse under "reuse"; pieces_modules, a
    function from the carried pieces' names to the modules restoring them
    imports, or to None when the module record must stay empty (see the
    top); units the call's units (see the top), have the hashes the store
    holds already (the loaded head's refs); skipped is Stored.skipped, the
    units this call did not load, saved again by their refs.  Returns (parts, held names,
    [(name, reason)] dropped, [(piece, reason)] pieces that could not be
    pickled, [(name, reason)] names kept unloaded).
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
                carry.append((piece, previous[piece]))
    carry.extend((p, b) for p, b in sorted(raw_pieces.items()) if p not in pieces)
    kept, dropped, notes, reused = {}, [], {}, {}
    reuse = reuse or {}
    d.parting = True
    d.share(state.values())
    for name in sorted(state):
        hit = reuse.get(name)
        d.unit = notes[name] = _Notes()
        if hit is not None and _unchanged(hit, state[name]):
            # The memo a pickle of it has, for the grouping of shared values.
            kept[name] = (hit[1], {id(hit[0]): (0, hit[0])})
            reused[name] = hit
            continue
        try:
            value = state[name]
            if type(value) is bytes and len(value) >= _PART_MIN:
                # Its id in the memo, as if pickled inline: a name whose
                # value holds it too is grouped with it (then pickled
                # inline, sharing it).
                chunks, memo = _dump_one(d, d.bytes_parts(value))
                memo[id(value)] = (len(memo), value)
                kept[name] = (chunks, memo)
            else:
                kept[name] = _dump_one(d, value)
        except Fatal:
            raise
        except _Refused as e:
            dropped.append((name, str(e)))
        except BaseException as e:
            dropped.append((name, reason(e)))
    groups = _units(d, state, kept, notes)
    keep, still = _keep(unloaded, set(state) | set(ended))
    passed = [(n, b, a) for n, m, b, a in skipped if n == m and not set(n) & set(state)]
    where = statements(n for n, _ in dropped) if dropped and statements else {}
    memory = remember(memory or {}, set(kept).union(*(n for n, _, _ in passed)),
                      [(n, _type_name(state[n]), why, where.get(n, "")) for n, why in dropped],
                      failed)
    if live is not None:
        live["memory"] = memory
        live["index"] = {"token": _posix().urandom(8).hex(),
                         "only": [(n, _type_name(state[n])) for n, _ in dropped]}
    modules = pieces_modules([p for p, _ in carry]) if pieces_modules else set()
    if modules is not None:   # the modules of units saved by ref, as when pickled
        modules = modules.union(*(a[0] for _, _, a in passed if a is not None))
    record = _record(d.modules | modules) if modules is not None else b""
    table = _Refs()
    index = {"live": live["index"]} if live is not None else {}
    index.update({"units": [(n, table.add(b, p)) for n, b, p in groups]
                  + [(n, table.add(b)) for n, b, _ in passed],
                  "about": [_about(notes, n) for n, _, _ in groups] + [a for _, _, a in passed],
                  "carry": [(p, table.add(b)) for p, b in carry],
                  "count": count})
    if keep:
        index["kept"] = [(n, table.add(b), m) for n, b, m in keep]
    if memory:
        index["memory"] = memory
    if live is not None:
        # A value saved by its old ref keeps its entry (and snapshot).
        live["reuse"] = {n[0]: hit for n, hit in (
            (n, reused.get(n[0]) or _reusable(state[n[0]], table.body(h)))
            for n, h in index["units"] if len(n) == 1) if hit is not None}
        live["have"] = table.hashes()
    held = sorted(list(kept) + [name for n, _, _ in passed for name in n])
    return (table.assemble(index, record, have if units is not None else None),
            held, dropped, lost, still)


def _our_reducers():
    """The callables this module's reductions name (a module by name, a
    held file, dill's pickle): they run nothing of the session's."""
    return (importlib.import_module, _held_file, _dill_loads, _array, _view, _bytes_of)


def _about(notes, names):
    """What a call that does not load a unit must know of it, from what
    pickling its names met: (modules its loading imports, the names the
    cells' code it holds reads or None when that cannot be bounded, whether
    it holds a file, whether loading it runs code of the cells' classes).
    See Stored.choose."""
    unit = _Notes()
    for name in names:
        unit.add(notes[name])
    return (tuple(sorted(unit.modules)), _reads(unit.code), unit.files, unit.runs)


def _reads(code):
    names = set()
    for obj in code:
        if any(obj is f for f in _our_reducers()):
            continue
        found = _reach_call("value_code_names", obj, None)
        if found is None:
            return None
        names |= found
    return tuple(sorted(names))


class _Refs:
    """The ref table of a blob being saved: each body once, by its hash."""

    def __init__(self):
        self._bodies = {}   # hash -> Body

    def add(self, body, parts=()):
        """The ref of body (chunks, bytes or a Body, with the Bodies of its
        arrays' buffers): its hash, for now; assemble() turns it into a
        position in the sorted table."""
        if not isinstance(body, Body):
            chunks = body if isinstance(body, list) else [body]
            body = Body(_sha256(chunks), _size(chunks), chunks)
            body.parts = tuple({p.hash: p for p in parts}.values())
        self._bodies.setdefault(body.hash, body)
        for part in body.parts:
            self._bodies.setdefault(part.hash, part)
        return body.hash

    def body(self, ref):
        return self._bodies[ref]

    def hashes(self):
        return frozenset(self._bodies)

    def assemble(self, index, record, have):
        """The blob as a list of bytes-like parts, to be written back to back
        (the worker writes them straight into the session file: no join).
        have None: every body goes into the pack; else those not in it,
        and those small enough to be kept with the head."""
        order = sorted(self._bodies)
        at = {h: i for i, h in enumerate(order)}
        for key, pos in (("units", 1), ("carry", 1), ("kept", 1)):
            if key in index:
                index[key] = [e[:pos] + (at[e[pos]],) + e[pos + 1:] for e in index[key]]
        parts = [(at[h], tuple(at[p.hash] for p in self._bodies[h].parts))
                 for h in order if self._bodies[h].parts]
        if parts:
            index["parts"] = parts
        index = _pickle.dumps(index, protocol=5)
        refs = b"".join(h + self._bodies[h].size.to_bytes(8, "little") for h in order)
        parts = [MAGIC, len(index).to_bytes(_HEAD, "little"), index,
                 len(record).to_bytes(_RECORD_HEAD, "little"), record,
                 len(order).to_bytes(_REF_COUNT, "little"), refs]
        for h in order:
            body = self._bodies[h]
            if have is None or h not in have or body.size < _INLINE_MAX:
                parts.append(h + body.size.to_bytes(8, "little"))
                parts.extend(body.chunks())
        return _coalesce(parts)


def _sha256(chunks):
    try:
        import _dolsot
    except ImportError:   # session.py imported by a test, outside the worker
        import hashlib
        h = hashlib.sha256()
        for chunk in chunks:
            h.update(chunk)
        return h.digest()
    return _dolsot.sha256(chunks)


_UNRECORDED = ("__main__", "__mp_main__", "builtins")


def _recordable(name):
    return (name not in _UNRECORDED and not name.startswith("_dolsot") and name.isascii()
            and all(part.isidentifier() for part in name.split(".")) and name in sys.modules)


def recordable_modules():
    """The modules imported now that a record could name, sorted."""
    return sorted(m for m in list(sys.modules) if _recordable(m))


def _record(modules):
    """The module record's bytes: empty past its bounds, as if none."""
    names = sorted(m for m in modules if _recordable(m))
    text = "".join(n + "\n" for n in names).encode("ascii")
    if len(names) > RECORD_MAX_MODULES or len(text) > RECORD_MAX_BYTES:
        return b""
    return text


def _posix():
    return sys.modules.get("posix") or importlib.import_module("posix")


def _keep(unloaded, ended):
    """The unloaded units to save again, as (names, body, members), less
    the names ended, and [(name, reason)] for the names kept."""
    keep, still = [], []
    for names, members, body, why in unloaded:
        names = tuple(n for n in names if n not in ended)
        if names:
            keep.append((names, body, members))
            still.extend((n, why) for n in names)
    return keep, sorted(still)


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


_ATOMS = frozenset((bytes, str, int, float, complex, bool, type(None)))


try:
    from _dolsot import flat_snapshot as _flat_snapshot, flat_same as _flat_same
except ImportError:   # session.py imported by a test, outside the worker
    def _flat_snapshot(value):
        return None

    _flat_same = None


def _reusable(value, body):
    """The reuse entry of a live process's value saved as body: (value,
    body) when it is _frozen, (value, body, snapshot) for a list, dict or
    set of plain values (worker/flat.h), else None."""
    if _frozen(value):
        return (value, body)
    snapshot = _flat_snapshot(value)
    return None if snapshot is None else (value, body, snapshot)


def _unchanged(hit, value):
    """Whether value is still what its reuse entry hit says its unit holds:
    the very object, and for a container the very same items."""
    return hit[0] is value and (len(hit) == 2 or _flat_same(value, hit[2]))


def _frozen(value, depth=0):
    """Whether value cannot change without its name being rebound: then a
    name still bound to the very object it loaded holds what its unit
    says, and the unit is saved again by its ref, unpickled."""
    t = type(value)
    if t in _ATOMS:
        return True
    if (t is tuple or t is frozenset) and depth < 4 and len(value) <= _FROZEN_MAX:
        return all(_frozen(x, depth + 1) for x in value)
    return False


class Missing(Exception):
    """A unit's bytes cannot be had, or are not what its hash says: its
    names are dropped with the message."""


class Body:
    """A unit's bytes, named by their hash: in hand (chunks), or read from
    where the call's units are when first asked for (see _Source)."""

    __slots__ = ("hash", "size", "_chunks", "_source", "parts")

    def __init__(self, hash, size, chunks=None, source=None):
        self.hash, self.size = hash, size
        self._chunks, self._source = chunks, source
        self.parts = ()         # the Bodies of its arrays' buffers

    def chunks(self):
        if self._chunks is None:
            self._chunks = [self._source.read(self)]
        return self._chunks

    def data(self):
        chunks = self.chunks()
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def __len__(self):
        """The bytes the unit stands for: its own and its parts'."""
        return self.size + sum(p.size for p in self.parts)

    def __bytes__(self):
        return bytes(self.data())

    def present(self):
        """Whether its bytes, and its parts', are there to read (_Source.has)."""
        own = self._chunks is not None or self._source is None or self._source.has(self)
        if not own or not self.parts:
            return own
        source = self.parts[0]._source
        if source is not None and all(p._source is source for p in self.parts):
            return source.has_all(self.parts)
        return all(p.present() for p in self.parts)


def _data(body):
    """The bytes of a unit: a Body's, or a version 3 body as it is."""
    return body.data() if isinstance(body, Body) else body


class _Source:
    """Where a call reads units: the blob's pack, else the store's objects
    directory.  A unit the client packed from the store, or read from the
    directory, is checked against its hash; a whole blob's pack is not (the
    client checked the whole blob's signature)."""

    def __init__(self, pack, checked, directory):
        self.pack, self.checked, self.directory = pack, checked, directory

    def read(self, body):
        data = self.pack.get(body.hash)
        if data is None:
            return self._read_file(body)
        if not self.checked:
            _check(body, data)
        return data

    def mappable(self, bodies):
        """Whether bodies are all files of the directory (none in the pack),
        which map_units can map back to back."""
        return self.directory is not None and not any(b.hash in self.pack for b in bodies)

    def has(self, body):
        """Whether body's bytes are there: in the pack (a small unit, which
        a save packs again, checked against its hash unless the whole blob
        was), or a file of its size in the directory (not read)."""
        data = self.pack.get(body.hash)
        if data is not None:
            return self.checked or body.size >= _INLINE_MAX or _sha256([data]) == body.hash
        if self.directory is None:
            return False
        name = body.hash.hex()
        try:
            return _posix().stat(f"{self.directory}/{name[:2]}/{name[2:]}").st_size == body.size
        except OSError:
            return False

    def has_all(self, bodies):
        """has() of each of bodies (an array's parts), the directory's files
        among them looked at in one call (a 1 GiB array has 257)."""
        files = []
        for body in bodies:
            if body._chunks is not None:
                continue
            if body.hash not in self.pack:
                files.append(body)
            elif not self.has(body):
                return False
        if not files or _units_present is None:
            return all(self.has(b) for b in files)
        return self.directory is not None and _units_present(
            self.directory, [(b.hash, b.size) for b in files])

    def _read_file(self, body):
        if self.directory is None:
            raise Missing(f"its stored bytes are missing (unit {body.hash.hex()[:12]})")
        if body.size >= _MAP_MIN and _map_units is not None:
            return memoryview(_mapped(_map_units, self.directory, (body,), False))
        name = body.hash.hex()
        try:
            with io.FileIO(f"{self.directory}/{name[:2]}/{name[2:]}", "r") as f:
                data = f.readall()
        except OSError as e:
            raise _missing(e, name) from None
        _check(body, data)
        return data


def _check(body, data):
    if len(data) != body.size or _sha256([data]) != body.hash:
        raise _damaged(body.hash.hex())


def _damaged(name):
    """The Missing of unit name (hex) whose bytes are not what it names."""
    return Missing("its stored bytes do not match their hash "
                   f"(damaged or replaced: unit {name[:12]})")


def _missing(e, name):
    """The Missing (or MemoryError, which keeps the unit: _THIS_CALL) that
    an OSError reading unit name stands for."""
    if isinstance(e, FileNotFoundError):
        return Missing(f"its stored bytes are missing (unit {name[:12]})")
    import errno
    if e.errno == errno.ENOMEM:   # a --memory bound: another call may have it
        return MemoryError(f"cannot map unit {name[:12]}: {e.strerror}")
    return Missing(f"its stored bytes cannot be read (unit {name[:12]}: "
                   f"{e.strerror or reason(e)})")


# A unit at least this large is mapped, not read (worker/unitmap.h): when
# its stamp (store/stamp.h) says its bytes were checked and the file has
# not changed since, it is not hashed again; unpickling copies its pages
# once, where a read would copy them twice.  A unit is a file never
# written again once named (store/objects.c).  store/stamp.h's STAMP_MIN
# is the same bound.
_MAP_MIN = 1 << 20

try:
    from _dolsot import map_units as _map_units, region_of as _region_of
    from _dolsot import map_bytes as _map_bytes, bytes_tag as _bytes_tag
    from _dolsot import units_present as _units_present
except ImportError:   # session.py imported by a test, outside the worker
    _map_units = _map_bytes = _units_present = None

    def _region_of(view):
        return None

    def _bytes_tag(value):
        return None

from _pickle import PickleBuffer as _PickleBuffer


def _mapped(mapper, directory, bodies, arg):
    """mapper(directory, refs, arg) of bodies' files mapped back to back,
    each checked (_map_units: a Region, arg whether writable; _map_bytes: a
    bytes object, arg its tag): a file damaged or gone raised as its unit's."""
    try:
        return mapper(directory, [(b.hash, b.size) for b in bodies], arg)
    except ValueError as e:
        raise _damaged(str(e)) from None
    except OSError as e:
        path = (e.filename or "").split("/")
        raise _missing(e, "".join(path[-2:])) from None


def _chunk_sizes(n):
    """The sizes of the parts an n-byte buffer is cut into: _CHUNK bytes
    each, the last one holding the rest (under 2 * _CHUNK), so that every
    part but the last is a whole number of pages and none is small."""
    k = max(1, n // _CHUNK)
    return [_CHUNK] * (k - 1) + [n - _CHUNK * (k - 1)]


# The _Source of the unit being unpickled, for _buffer (Stored._unpickle).
_loading = None


def _array(make, refs, readonly, args):
    """A numpy array whose buffer is the parts refs (_Dumper.array_parts):
    make is numpy's own rebuilder, args the rest of its arguments."""
    return make(_buffer(refs, readonly), *args)


def _bytes_of(refs):
    """A bytes value stored as parts (_Dumper.bytes_parts): mapped, its
    pages read only when the cell touches them, when they are files of a
    FileStore's this call reads; else read, checked and joined."""
    source, bodies = _parts(refs, "its stored bytes have no store to come from")
    if _map_bytes is None or not source.mappable(bodies):
        return _joined(bodies, True)
    return _mapped(_map_bytes, source.directory, bodies, bodies)


class _BigBytes:
    """A name's bytes value of _PART_MIN bytes or more, as pickled: a call
    of _bytes_of naming its parts."""

    __slots__ = ("refs",)

    def __init__(self, parts):
        self.refs = tuple((p.hash, p.size) for p in parts)

    def __reduce__(self):
        return _bytes_of, (self.refs,)


def _view(root, offset, shape, strides, dtype, writeable):
    """A view of root, as _Dumper.view_of found it."""
    view = type(root)(shape, dtype, buffer=root, offset=offset, strides=strides)
    if not writeable:
        view.flags.writeable = False
    return view


def _buffer(refs, readonly):
    """The bytes of the parts refs, [(hash, size)], back to back: mapped,
    copy on write, when they are files of a FileStore's this call reads;
    else read, checked and joined into one (writable unless readonly)."""
    source, bodies = _parts(refs, "its stored buffer has no store to come from")
    if _map_units is not None and source.mappable(bodies):
        region = _mapped(_map_units, source.directory, bodies, not readonly)
        region.tag = bodies
        return region
    return _joined(bodies, readonly)


def _parts(refs, homeless):
    """(the _Source of the unit being unpickled, the Bodies of refs); with
    no source, Missing(homeless)."""
    source = _loading
    if source is None:
        raise Missing(homeless)
    return source, tuple(Body(bytes(h), int(n), source=source) for h, n in refs)


def _joined(bodies, readonly):
    """bodies' bytes read, checked and joined into one (writable unless
    readonly)."""
    out = bytearray(sum(b.size for b in bodies))
    at = 0
    for b in bodies:
        out[at:at + b.size] = b.data()
        at += b.size
    return bytes(out) if readonly else out


def load_error(session, why):
    return Fatal(f"dolsot: session '{session}' cannot be loaded: {why}; "
                 f"run 'dolsot --reset {session}' to start it afresh")


class Stored:
    """A parsed blob: units to load into a namespace, carried pieces as bytes."""

    def __init__(self, units, carry, whole=None, count=0):
        self.count = count      # cells the session has run (execution_count)
        self.units = units      # [(names, members, body)]: a Body, or a
                                # version 3 blob's memoryview
        self.carry = carry      # {piece: body}
        self._whole = whole     # a version 1 session, already unpickled
        self.unloaded = []      # [(names, members, body, reason)]
        self.closed = []        # [(name, reason)]: loaded holding a file,
                                # closed as it could not be reopened
        self.memory = {}        # the index's memory, see remember()
        self.live_only = []     # [(name, type)] a live process held unsaved
        self.reuse = {}         # {name: (value, body)}: _frozen values as loaded
        self.have = frozenset()  # the hashes of the head's refs (version 4)
        self.about = []         # per unit, what _about() said of it, or None
        self.skipped = []       # [(names, members, body, about)] not loaded

    def worth_choosing(self):
        """Whether there is anything to leave unloaded.  Asking reach.py
        costs microseconds (5 us for `x + 1`, 20 us for a four-name cell
        over 40 units); every unit loaded is unpickled and then pickled
        again, about 0.2 ms for a small DataFrame: so even a small session
        of many names is worth choosing for."""
        return bool(self.units)

    def choose(self, names, aliases):
        """The units a cell needs loaded (positions in self.units), or None
        for all: names, what its code can reach (reach.code_names: None when
        it cannot be bounded), aliases the call's toolbox aliases.  A unit
        is left unloaded only when no name the cell reaches, directly or
        through the cells' code held in units it loads, is one of its
        names, and loading it could have no effect of its own: every module
        it names is of _INERT and importable here (_importable), it holds no
        file, loading it runs no code of the cells' classes, it was not kept
        unloaded, and none of its names is hidden by a toolbox alias (whose
        warning names it)."""
        if names is None or self._whole is not None:
            return None
        graph, forced = [], set()
        for i, (unit, about) in enumerate(zip(self.units, self.about)):
            if about is None or about[2] or about[3] or set(unit[0]) & aliases or not all(
                    _inert(m) and _importable(m) for m in about[0]):
                forced.add(i)
            reads = about[1] if about is not None else None
            graph.append((unit[0], None if reads is None else frozenset(reads)))
        try:
            import _dolsot
            chosen = _dolsot.embedded("reach").closure(names, graph)
        except ImportError:
            return None
        if chosen is None:
            return None
        # A unit whose bytes are gone is loaded, to be dropped with its
        # reason now, as a full load would: saved by ref, it could not be
        # saved at all.
        return chosen | forced | {i for i, (_, _, body) in enumerate(self.units)
                                  if i not in chosen and isinstance(body, Body)
                                  and not body.present()}

    def load_skipped(self, ns):
        """Load the units load_into() left out; as load_into()."""
        skipped, self.skipped = self.skipped, []
        units, about = self.units, self.about
        self.units = [(n, m, b) for n, m, b, _ in skipped]
        self.about = [a for _, _, _, a in skipped]
        try:
            return self.load_into(ns)
        finally:
            self.units, self.about = units, about

    def load_into(self, ns, wanted=None):
        """Load the units wanted (all when None) into ns; returns [(name,
        reason)] for those dropped.  The units that fail otherwise go to
        self.unloaded; those not wanted, to self.skipped."""
        if self._whole is not None:
            ns.update(self._whole)
            return []
        dropped = []
        for i, (names, members, body) in enumerate(self.units):
            if wanted is not None and i not in wanted:
                self.skipped.append((names, members, body, self.about[i]))
                continue
            try:
                value = _unpickle(body)
                if len(members) == 1:
                    ns[names[0]] = value
                    # Not _reusable: a container's snapshot, taken here,
                    # costs a loading call what its pickle would (a list of
                    # 200,000 ints: 1.8 ms more to load, 1.9 ms less to
                    # dump); a live process takes it once, at its save.
                    if _frozen(value):
                        self.reuse[names[0]] = (value, body)
                else:
                    ns.update((n, value[n]) for n in names)
            except Fatal:
                raise
            except Missing as e:
                dropped.extend((n, str(e)) for n in names)
            except BaseException as e:  # one value never sinks the session
                if _is_dropped_file(e):
                    self._load_closing_gone(ns, names, members, body, dropped)
                elif isinstance(e, _THIS_CALL):
                    self.unloaded.append((names, members, body, reason(e)))
                else:
                    dropped.extend((n, reason(e)) for n in names)
        self.unloaded = _bounded(self.unloaded, dropped)
        return dropped

    def _load_closing_gone(self, ns, names, members, body, dropped):
        """A unit holding a file that cannot be reopened: a name whose value is
        such a file is dropped with the reason; a value that only holds one
        (in a list, an attribute) loads with it closed, and says so."""
        try:
            with _files().closing_gone() as gone:
                value = _unpickle(body)
            values = {names[0]: value} if len(members) == 1 else {n: value[n] for n in names}
        except Fatal:
            raise
        except BaseException as e:
            dropped.extend((n, reason(e)) for n in names)
            return
        loaded = []
        for n, v in values.items():
            if id(v) in gone and gone[id(v)][0] is v:
                dropped.append((n, gone[id(v)][1]))
            else:
                ns[n] = v
                loaded.append(n)
        why = next(iter(gone.values()))[1] if gone else None
        self.closed.extend((n, why) for n in loaded if why)


# The modules whose objects unpickle with no effect outside themselves, by
# name or as a package's prefix: a unit naming only these may stay
# unloaded (Stored.choose).  "__main__" is the cells' own functions and
# classes, which dill rebuilds without running their code.
_INERT = ("__main__", "builtins", "copyreg", "_codecs", "collections", "datetime",
          "decimal", "fractions", "numbers", "array", "math", "cmath", "operator",
          "functools", "uuid", "pathlib", "enum", "re", "types", "dill", "numpy",
          "pandas", "_dolsot_session")


def _inert(module):
    return module.split(".", 1)[0] in _INERT


_found = {}


def _importable(module):
    """Whether loading a unit that names module could import it, without
    importing it (a cold worker has not, and need not, for a unit it does
    not load): imported already, or its top package found on sys.path.  A
    unit that could not be loaded is loaded, so that its warning is said."""
    if module in sys.modules:
        return True
    top = module.split(".", 1)[0]
    if top not in _found:
        try:
            import importlib.util
            _found[top] = importlib.util.find_spec(top) is not None
        except Exception:
            _found[top] = False
    return _found[top]


# Failures of loading that another call may not have, so the unit is kept
# unloaded: a module not importable here (no such --toolbox, a sandbox
# without its directory), a name a module lacks here (another version of
# it), a file or directory this call cannot reach, memory this call's
# --memory does not give.  Any other failure is the value's own: dropped.
_THIS_CALL = (ImportError, AttributeError, OSError, MemoryError)


def _bounded(unloaded, dropped):
    """unloaded within KEPT_MAX bytes: the smallest units first; the names
    of those past the bound go to dropped, with their reason."""
    fit, total = [], 0
    for unit in sorted(unloaded, key=lambda u: (len(u[2]), u[0])):
        if total + len(unit[2]) > KEPT_MAX:
            dropped.extend((n, f"{unit[3]}; not kept: the values kept unloaded "
                               f"would pass {KEPT_MAX >> 20} MiB") for n in unit[0])
        else:
            total += len(unit[2])
            fit.append(unit)
    return sorted(fit, key=lambda u: u[0])


def _unpickle(body):
    """Unpickle a unit; its arrays' parts come from where it came from."""
    global _loading
    _loading = body._source if isinstance(body, Body) else None
    try:
        return _pickle.loads(_data(body))
    finally:
        _loading = None


def _is_dropped_file(exc):
    files = sys.modules.get("_dolsot_files")
    return files is not None and isinstance(exc, files.Dropped)


def loads_piece(body):
    """Unpickle one carried piece (raises what the unpickler raises)."""
    return _pickle.loads(_data(body))


def _u(view, at, width):
    return int.from_bytes(view[at:at + width], "little")


def _index(session, blob, has_record):
    """(end of the record, the index) of a version 2 to 4 blob."""
    if len(blob) < len(MAGIC) + _HEAD:
        raise load_error(session, "truncated")
    n = _u(blob, len(MAGIC), _HEAD)
    start = len(MAGIC) + _HEAD
    if n > len(blob) - start:
        raise load_error(session, "truncated")
    end = start + n
    if has_record:   # the worker has no use for the record: skip it
        if len(blob) - end < _RECORD_HEAD:
            raise load_error(session, "truncated")
        m = _u(blob, end, _RECORD_HEAD)
        if m > len(blob) - end - _RECORD_HEAD:
            raise load_error(session, "truncated")
        end += _RECORD_HEAD + m
    try:
        index = _PlainUnpickler(io.BytesIO(blob[start:start + n])).load()
        if not isinstance(index, dict):
            raise ValueError("not a dict")
    except BaseException as e:
        raise load_error(session, f"bad index ({reason(e)})") from None
    return end, index


def _sections(session, index, ref):
    """The index's sections, each entry's body made by ref from what the
    index holds in its place (a size in version 3, a ref in version 4)."""
    try:
        units = [(_names(names), ref(at), _names(names)) for names, at in index["units"]]
        carry = [(str(p), ref(at)) for p, at in index["carry"]]
        kept = [(_names(names), ref(at), _names(members))
                for names, at, members in index.get("kept", ())]
        if any(not set(names) <= set(members) for names, _, members in kept):
            raise ValueError("a kept unit names what it does not hold")
        memory = _plain_memory(index.get("memory"))
        count = int(index.get("count", 0))
        live = index.get("live") or {}
        live_only = [(str(name), str(kind)) for name, kind in live.get("only", ())]
    except Fatal:
        raise
    except BaseException as e:
        raise load_error(session, f"bad index ({reason(e)})") from None
    return units, carry, kept, memory, count, live_only


def _names(names):
    names = tuple(str(x) for x in names)
    if not names:
        raise ValueError("a unit without names")
    return names


def load(session, blob, units=None):
    """Parse a blob (bytes or memoryview); units is the call's (see the
    top).  Raises Fatal when it is damaged as a whole; single values are
    only read and unpickled by Stored.load_into."""
    view = memoryview(blob)
    magic = bytes(view[:len(MAGIC)])
    if magic == MAGIC_V1:
        return _load_v1(session, view)
    if magic == MAGIC:
        return _load_v4(session, view, units)
    if magic not in (MAGIC_V3, MAGIC_V2):
        raise load_error(session, "not a dolsot session (bad magic)")
    pos, index = _index(session, view, magic == MAGIC_V3)
    bodies = []

    def inline(size):
        size = int(size)
        bodies.append(size)
        return size

    units, carry, kept, memory, count, live_only = _sections(session, index, inline)
    if any(size < 0 for size in bodies) or pos + sum(bodies) != len(view):
        raise load_error(session, "truncated or has trailing bytes")
    out, pieces = [], {}
    for names, size, members in units:
        out.append((names, members, view[pos:pos + size]))
        pos += size
    for piece, size in carry:
        pieces[piece] = view[pos:pos + size]
        pos += size
    for names, size, members in kept:   # tried again, as any unit
        out.append((names, members, view[pos:pos + size]))
        pos += size
    return _stored(out, pieces, count, memory, live_only)


def _stored(units, carry, count, memory, live_only, have=frozenset()):
    stored = Stored(units, carry, count=count)
    stored.memory, stored.live_only, stored.have = memory, live_only, have
    stored.about = [None] * len(units)
    return stored


def _load_v4(session, view, where):
    pos, index = _index(session, view, True)
    if len(view) - pos < _REF_COUNT:
        raise load_error(session, "truncated")
    n = _u(view, pos, _REF_COUNT)
    pos += _REF_COUNT
    if n > _REFS_MAX or n * _REF > len(view) - pos:
        raise load_error(session, "truncated")
    refs = [(bytes(view[at:at + _HASH]), _u(view, at + _HASH, 8))
            for at in range(pos, pos + n * _REF, _REF)]
    pack = _pack(session, view, pos + n * _REF, {h for h, _ in refs})
    source = _Source(pack, where is None, None if where in (None, "-") else where)
    bodies = [Body(h, size, source=source) for h, size in refs]

    def ref(at):
        if type(at) is not int or not 0 <= at < len(bodies):
            raise ValueError(f"ref {at!r} out of range")
        return bodies[at]

    units, carry, kept, memory, count, live_only = _sections(session, index, ref)
    try:
        for at, parts in index.get("parts", ()):
            ref(at).parts = tuple(ref(p) for p in parts)
    except BaseException as e:
        raise load_error(session, f"bad index ({reason(e)})") from None
    out = [(names, members, body) for names, body, members in units + kept]
    stored = _stored(out, dict(carry), count, memory, live_only,
                     frozenset(h for h, _ in refs))
    stored.about = _plain_about(index.get("about"), len(units)) + [None] * len(kept)
    return stored


def _plain_about(raw, n):
    """The index's "about" (see _about), n entries checked to be of its
    shape; None for each when it is not."""
    def strs(xs):
        return type(xs) is tuple and all(type(x) is str for x in xs)

    if (type(raw) is not list or len(raw) != n or not all(
            type(a) is tuple and len(a) == 4 and strs(a[0]) and (a[1] is None or strs(a[1]))
            and type(a[2]) is bool and type(a[3]) is bool for a in raw)):
        return [None] * n
    return list(raw)


def _pack(session, view, pos, refs):
    """{hash: memoryview} of the pack from pos to the end of view."""
    pack = {}
    while pos < len(view):
        if len(view) - pos < _REF:
            raise load_error(session, "truncated pack")
        h, size = bytes(view[pos:pos + _HASH]), _u(view, pos + _HASH, 8)
        pos += _REF
        if size > len(view) - pos or h not in refs or h in pack:
            raise load_error(session, "bad pack")
        pack[h] = view[pos:pos + size]
        pos += size
    return pack


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
