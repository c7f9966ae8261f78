"""dolsot held files: how a file object in the session is saved and reopened.

A cell that leaves a file object in its namespace gets it back in the next
call by this rule, whatever dill's file modes would do.  Loading never
changes a file on disk: nothing is created, truncated or written.

  closed              a closed file object of the same type, name and mode;
                      nothing is opened
  'r'                 reopened for reading, at the saved position
  'r+', 'w+', 'x+'    reopened for reading and writing, at the saved
                      position, never truncated
  'w', 'x'            reopened for writing, at the saved position, never
                      truncated
  'a', 'a+'           reopened for appending: writes go to the end

(with 'b' or 't' as opened).  Before it is saved, a file open for writing
is flushed, so that what the cell wrote is on disk and the saved position is
where the next write goes.  A relative name is made absolute against the
working directory at save time.  A text file keeps its encoding, errors,
line buffering and write-through; its newline setting is not saved (the
reopened file translates newlines as open() does by default).

Dropped at save time, with the reason: a file opened from a descriptor
(there is no name to reopen), one that is not a regular file (a pipe, a
terminal, a device: reopening it could block or take another reader's
data), and a text file being read by iteration (for line in f), whose
position Python cannot tell.  Dropped at load time: a file whose path no
longer exists (deleted, or not visible in a sandboxed call) or cannot be
opened now; a value that only holds such a file loads with it closed
(closing_gone, used by session.py).  In every case the reason says what the cell should do instead:
re-open the file in the cell that uses it.
"""

import io
import posix
import stat

# Types of file objects this module saves; their subclasses are left to the
# pickler (a subclass may carry state of its own).
TYPES = (io.TextIOWrapper, io.BufferedReader, io.BufferedWriter,
         io.BufferedRandom, io.FileIO)
_INSTEAD = "re-open it in the cell that uses it"
_STD = ("stdin", "stdout", "stderr")


class Dropped(Exception):
    """A held file that cannot come back in this call; the message says why."""


class Refused(Exception):
    """A held file that cannot be saved; the message says why."""


def _raw(f):
    while not isinstance(f, io.FileIO):
        f = getattr(f, "buffer", None) or getattr(f, "raw", None)
        if f is None:
            return None
    return f


def _kind(f):
    if isinstance(f, io.TextIOWrapper):
        return "text"
    return "raw" if isinstance(f, io.FileIO) else "buffered"


def _absolute(name):
    if name.startswith("/"):
        return name
    return posix.getcwd() + "/" + name


def state(f):
    """What reopens f: a tuple of plain data.  Raises Refused."""
    import sys
    for which in _STD:
        if f is getattr(sys, "__" + which + "__", None):
            return ("std", which)
    name = getattr(f, "name", None)
    mode = getattr(f, "mode", "")
    raw = _raw(f)
    if not isinstance(name, str) or raw is None:
        raise Refused("a file opened from a descriptor cannot be reopened "
                      f"by name: {_INSTEAD}")
    kind = _kind(f)
    text = (f.encoding, f.errors, f.line_buffering, f.write_through) \
        if kind == "text" else None
    if f.closed:
        return ("closed", name, mode, kind, text)
    try:
        st = posix.fstat(raw.fileno())
    except OSError as e:
        raise Refused(f"the file {name} cannot be examined ({e.strerror}): "
                      f"{_INSTEAD}") from None
    if not stat.S_ISREG(st.st_mode):
        raise Refused(f"{name} is not a regular file (a pipe, a terminal or "
                      f"a device cannot be reopened safely): {_INSTEAD}")
    try:
        if f.writable():
            f.flush()
        position = f.tell()
    except OSError as e:
        if kind == "text" and "next()" in str(e):
            raise Refused(f"the file {name} is being read by iteration, so its "
                          f"position cannot be told: {_INSTEAD}") from None
        raise Refused(f"the file {name} cannot be saved ({e}): {_INSTEAD}") from None
    return ("open", _absolute(name), name, mode, kind, text, position)


def _flags(mode):
    plus = "+" in mode
    if "a" in mode:
        return (posix.O_RDWR if plus else posix.O_WRONLY) | posix.O_APPEND
    if "r" in mode and not plus:
        return posix.O_RDONLY
    return posix.O_RDWR if plus else posix.O_WRONLY


def _wrap(fd, name, mode, kind, text):
    """A file object of kind over fd, named name: no open(2) of a path here."""
    if kind == "text":
        encoding, errors, line_buffering, write_through = text
        f = io.open(fd, mode, encoding=encoding, errors=errors)
        f.reconfigure(line_buffering=line_buffering, write_through=write_through)
    else:
        f = io.open(fd, mode, buffering=0 if kind == "raw" else -1)
    _raw(f).name = name
    return f


def _closed(name, mode, kind, text):
    fd = posix.open("/dev/null", _flags(mode) | posix.O_CLOEXEC)
    f = _wrap(fd, name, mode, kind, text)
    f.close()
    return f


def _reopen(path, name, mode, kind, text, position):
    try:
        fd = posix.open(path, _flags(mode) | posix.O_CLOEXEC | posix.O_NOCTTY
                        | posix.O_NONBLOCK)
    except FileNotFoundError:
        raise Dropped(f"the file {path} no longer exists: {_INSTEAD}") from None
    except OSError as e:
        raise Dropped(f"the file {path} cannot be reopened ({e.strerror}): "
                      f"{_INSTEAD}") from None
    try:
        if not stat.S_ISREG(posix.fstat(fd).st_mode):
            raise Dropped(f"{path} is no longer a regular file: {_INSTEAD}")
        posix.set_blocking(fd, True)
        f = _wrap(fd, name, mode, kind, text)
    except BaseException:
        posix.close(fd)
        raise
    try:
        f.seek(position)
    except (OSError, ValueError) as e:
        f.close()
        raise Dropped(f"the file {path} cannot be reopened at its position "
                      f"({e}): {_INSTEAD}") from None
    return f


# While set (see closing_gone), a file that cannot be reopened comes back
# closed instead of raising, and is noted here: {id(file): (file, reason)}.
_gone = None


def reopen(saved):
    """The file object saved by state(); raises Dropped."""
    how = saved[0]
    if how == "std":
        import sys
        return getattr(sys, "__" + saved[1] + "__")
    if how == "closed":
        return _closed(*saved[1:])
    try:
        return _reopen(*saved[1:])
    except Dropped as e:
        if _gone is None:
            raise
        _, _, name, mode, kind, text, _ = saved
        f = _closed(name, mode, kind, text)
        _gone[id(f)] = (f, str(e))
        return f


class closing_gone:
    """Within it, files that cannot be reopened come back closed; the
    context's value is the {id: (file, reason)} of those."""

    def __enter__(self):
        global _gone
        _gone = {}
        return _gone

    def __exit__(self, *exc):
        global _gone
        _gone = None
