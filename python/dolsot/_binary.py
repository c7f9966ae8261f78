"""Finding the dolsot binary, and making sure it speaks --json.

The search order: an explicit path, then DOLSOT_BIN, then the binary
built beside this package in a source tree (python/dolsot/ is two levels
below the tree's ./dolsot), then "dolsot" on PATH. The first place that
names a binary decides: a wrong DOLSOT_BIN is an error, not a reason to
look further, so a typo never silently runs another build.
"""

import os
import shutil
import subprocess

from .errors import BinaryNotFound, DolsotError

_INSTALL = ("build it with `make` in the dolsot source tree and install it "
            "(`make install`), or point Repl(binary=...) or DOLSOT_BIN at it")

_TREE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "dolsot")

# (realpath, mtime_ns, size) of binaries already checked for --json.
_checked = set()


def _usable(path):
    return os.path.isfile(path) and os.access(path, os.X_OK)


def locate(explicit=None):
    """Return the path of the binary to run, or raise BinaryNotFound."""
    if explicit is not None:
        path, origin = os.fspath(explicit), "binary="
    elif os.environ.get("DOLSOT_BIN"):
        path, origin = os.environ["DOLSOT_BIN"], "DOLSOT_BIN"
    elif _usable(_TREE):
        path, origin = _TREE, "the source tree"
    else:
        found = shutil.which("dolsot")
        if found is None:
            raise BinaryNotFound(f"the dolsot binary is not on PATH; {_INSTALL}")
        path, origin = found, "PATH"
    if not _usable(path):
        raise BinaryNotFound(f"{origin} names {path!r}, which is not an "
                             f"executable file; {_INSTALL}")
    path = os.path.abspath(path)
    _check(path)
    return path


def _check(path):
    """Fail unless the binary at path has --json (dolsot 0.3.0 with issue 12)."""
    st = os.stat(path)
    key = (os.path.realpath(path), st.st_mtime_ns, st.st_size)
    if key in _checked:
        return
    try:
        p = subprocess.run([path, "--help"], stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise DolsotError(f"cannot run {path} --help: {e}") from e
    if p.returncode != 0 or b"--json" not in p.stdout:
        raise DolsotError(f"{path} is not a dolsot binary with --json (dolsot "
                          f"0.3.0 or later is needed); {_INSTALL}")
    _checked.add(key)
