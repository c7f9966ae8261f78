"""The exceptions of the dolsot package.

A cell that fails is never an exception: it is a Result with ok False.
Only a caller's own mistakes raise, and they raise before any process
starts: InvalidSession and InvalidToolbox. DolsotError is for the host's
set-up (no binary, a binary without --json, a DOLSOT_* variable the
binary refuses), which no change to the call can fix, and for what the
binary refuses outside a cell, with its message: history, undo and
checkout of a session that does not exist, with no earlier state, or to
a state no longer kept.
"""


class InvalidSession(ValueError):
    """A session id the engine does not accept, or code that is empty."""


class InvalidToolbox(ValueError):
    """An inject entry that is neither a module nor an importable name."""


class HostToolError(RuntimeError):
    """In an InProcessSession's cell: a host tool raised; the message is its
    exception's text (in a Repl's cell the worker raises its own, alike)."""


class DolsotError(RuntimeError):
    """The dolsot binary is missing, too old, or refused its settings."""


class BinaryNotFound(DolsotError, FileNotFoundError):
    """No usable dolsot binary was found; the message says where we looked."""
