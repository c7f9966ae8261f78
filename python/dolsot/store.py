"""Where the binary keeps sessions, as Repl(store=...) names it.

The original dolsot let a host pass any object with load/save/delete/list;
here the engine is a separate binary that owns its stores, so a store is
one of the binary's own kinds, selected through DOLSOT_STORE and
DOLSOT_CACHE_DIR:

- FileStore(cache_dir=None, ttl_days=None): one file per session in a
  private directory (DOLSOT_CACHE_DIR, else {tmp}/dolsot-{uid}/sessions),
  reaping sessions unsaved for ttl_days (DOLSOT_SESSION_TTL_DAYS, else 7;
  0 keeps them forever).
- MemoryStore(): sessions kept only in the warm server's memory, lost when
  the server exits (it needs DOLSOT_SERVER=auto). Each MemoryStore gets a
  directory of its own for its server, so two of them never share sessions.

- Store(value, cache_dir=None): any other DOLSOT_STORE value, such as
  "redis://host:6379/0" (a Redis server that several hosts share) or
  "cmd:PROGRAM ARGS" (a store helper); cache_dir is this host's own
  directory (the session key file, the warm server's socket, the lock
  that keeps this host's calls on one session apart). Repl checks the
  value with the binary and raises ValueError with the binary's reason.

Repl(store=...) also takes every DOLSOT_STORE value as a string ("file",
"memory", "redis://...", "cmd:..."; a text whose first ':' comes before
any '/' is such a value) and a directory path (a FileStore there).
"""

import atexit
import os
import shutil
import subprocess
import tempfile


class FileStore:
    """Sessions as files in a directory the binary creates 0700."""

    def __init__(self, cache_dir=None, ttl_days=None):
        if cache_dir is not None:
            cache_dir = os.path.abspath(os.fspath(cache_dir))
        if ttl_days is not None and (isinstance(ttl_days, bool) or
                                     not isinstance(ttl_days, int) or ttl_days < 0):
            raise ValueError(f"ttl_days must be an int >= 0, not {ttl_days!r}")
        self.cache_dir = cache_dir
        self.ttl_days = ttl_days

    def env(self):
        """The variables that select this store for the binary."""
        e = {"DOLSOT_STORE": "file"}
        if self.cache_dir is not None:
            e["DOLSOT_CACHE_DIR"] = self.cache_dir
        if self.ttl_days is not None:
            e["DOLSOT_SESSION_TTL_DAYS"] = str(self.ttl_days)
        return e

    def __repr__(self):
        return f"FileStore(cache_dir={self.cache_dir!r}, ttl_days={self.ttl_days!r})"


class MemoryStore:
    """Sessions in the warm server's memory only, private to this object."""

    def __init__(self):
        self.cache_dir = tempfile.mkdtemp(prefix="dolsot-memstore-")
        self._binary = None
        atexit.register(self.close)

    def env(self):
        return {"DOLSOT_STORE": "memory", "DOLSOT_CACHE_DIR": self.cache_dir}

    def _used_by(self, binary):
        self._binary = binary

    def close(self):
        """Stop this store's server (its sessions are gone) and remove its
        directory. Called at exit; calling it twice is harmless."""
        if self.cache_dir is None:
            return
        if self._binary is not None:
            env = dict(os.environ, DOLSOT_CACHE_DIR=self.cache_dir)
            try:
                subprocess.run([self._binary, "--server-stop"], env=env,
                               stdin=subprocess.DEVNULL, capture_output=True,
                               timeout=30, check=False)
            except (OSError, subprocess.TimeoutExpired):
                pass
        shutil.rmtree(self.cache_dir, ignore_errors=True)
        self.cache_dir = None

    def __repr__(self):
        return "MemoryStore()"


class Store:
    """Sessions where a DOLSOT_STORE value says (Redis, a store helper),
    exactly as the binary's --store and DOLSOT_STORE take it."""

    def __init__(self, value, cache_dir=None):
        if not isinstance(value, str):
            raise TypeError(f"a store value must be a str, not {type(value).__name__}")
        if cache_dir is not None:
            cache_dir = os.path.abspath(os.fspath(cache_dir))
        self.value = value
        self.cache_dir = cache_dir

    def env(self):
        e = {"DOLSOT_STORE": self.value}
        if self.cache_dir is not None:
            e["DOLSOT_CACHE_DIR"] = self.cache_dir
        return e

    def check(self, binary):
        """Raise ValueError, with the binary's reason, unless it takes the
        value. The binary only parses it: --server-status looks at this
        host's warm server and never reaches the store."""
        env = dict(os.environ, **self.env())
        env.pop("DOLSOT_STORE")
        p = subprocess.run([binary, "--store", self.value, "--server-status"], env=env,
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=60,
                           check=False)
        if p.returncode == 2:
            why = p.stderr.decode("utf-8", "replace").strip()
            raise ValueError(why.removeprefix("dolsot: --"))

    def __repr__(self):
        return f"Store({self.value!r}, cache_dir={self.cache_dir!r})"


def _is_value(text):
    """Whether a store string is a DOLSOT_STORE value rather than a path."""
    colon = text.find(":")
    return colon > 0 and "/" not in text[:colon]


def resolve(store):
    """The store object for Repl(store=...); None means DOLSOT_STORE decides."""
    if store is None or isinstance(store, (FileStore, MemoryStore, Store)):
        return store
    if isinstance(store, str) and store == "file":
        return FileStore()
    if isinstance(store, str) and store == "memory":
        return MemoryStore()
    if isinstance(store, str) and _is_value(store):
        return Store(store)
    if isinstance(store, (str, os.PathLike)):
        if not os.fspath(store):
            raise ValueError("store must not be an empty path")
        return FileStore(store)
    raise TypeError(
        f"store must be a FileStore, a MemoryStore, a Store, a DOLSOT_STORE value "
        f"or a directory path, not {type(store).__name__}: the binary keeps sessions "
        "itself, so a store object with load/save methods cannot be plugged in")
