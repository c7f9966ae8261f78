"""Result, SessionInfo and Move: what a call gives back.

A Result is filled from one --json object of the binary (or, for
InProcessSession, from the cell run here). The first eight fields are the
original dolsot's; the rest are what --json adds.
"""

import dataclasses
import datetime
import typing


class SessionInfo(typing.NamedTuple):
    """One stored session: its id, its size in bytes, when it was last saved."""

    id: str
    size_bytes: int
    last_used: datetime.datetime


class Move(typing.NamedTuple):
    """What Repl.undo and Repl.checkout did, as --undo/--checkout --json say:
    the session moved, the action ("undo" or "checkout"), the state gone
    back to and the new state the move committed (None when DOLSOT_HISTORY=0
    keeps no history)."""

    session: str
    action: str
    to: int
    state: typing.Optional[int]


@dataclasses.dataclass
class Result:
    """The outcome of one cell. A failing cell is a Result, never a raise."""

    ok: bool
    value: typing.Optional[str] = None
    stdout: str = ""
    error: typing.Optional[str] = None
    exit_code: int = 0
    # What the session holds after the call, whatever its outcome (a call
    # rejected, timed out or killed rolls back: what it held before).
    held: typing.List[str] = dataclasses.field(default_factory=list)
    dropped: typing.List[str] = dataclasses.field(default_factory=list)
    text: str = ""
    # What --json adds (see dolsot(1), JSON OUTPUT).
    status: str = "ok"
    stderr: str = ""
    execution_count: typing.Optional[int] = None
    session_state: str = "unchanged"
    dropped_reasons: typing.Dict[str, str] = dataclasses.field(default_factory=dict)
    kept_unloaded: typing.Dict[str, str] = dataclasses.field(default_factory=dict)
    hints: typing.List[str] = dataclasses.field(default_factory=list)
    traceback: typing.List[str] = dataclasses.field(default_factory=list)
    limit: typing.Optional[str] = None
    warnings: typing.List[str] = dataclasses.field(default_factory=list)
    diagnostics: typing.List[dict] = dataclasses.field(default_factory=list)
    displays: typing.List[dict] = dataclasses.field(default_factory=list)
    truncated: typing.Dict[str, dict] = dataclasses.field(default_factory=dict)
    timings_ms: typing.Dict[str, typing.Optional[float]] = dataclasses.field(
        default_factory=dict)
    raw: typing.Optional[dict] = dataclasses.field(default=None, repr=False)

    def __post_init__(self):
        if not self.text:
            self.text = compose_text(self)


def _line(s):
    return s if s.endswith("\n") else s + "\n"


def compose_text(r):
    """stdout, value, error and the held-names banner in the order the CLI
    prints them, as one string (without a final newline)."""
    parts = []
    if r.stdout:
        parts.append(_line(r.stdout))
    if r.value is not None:
        parts.append(_line(r.value))
    if r.stderr:
        parts.append(_line(r.stderr))
    if r.error:
        parts.append(_line(r.error))
        parts.extend(_line(h) for h in r.hints)
    parts.extend(_line(w) for w in r.warnings)
    if r.session_state in ("created", "committed"):
        banner = ", ".join(r.held) or "(nothing)"
        if r.kept_unloaded:
            banner += "; kept unloaded: " + ", ".join(sorted(r.kept_unloaded))
        parts.append(_line("session now holds: " + banner))
    if r.dropped:
        parts.append(_line("warning: dropped unpicklable names (gone next call): " +
                           ", ".join(f"{n} ({r.dropped_reasons.get(n, '?')})"
                                     for n in r.dropped)))
    return "".join(parts).rstrip("\n")


def error_line(ename, evalue, line=None):
    """The error as the CLI's `Type: message (line N)`."""
    text = f"{ename}: {evalue}" if evalue else ename
    return f"{text} (line {line})" if line else text


def from_json(obj):
    """A Result from one --json result object."""
    err = obj.get("error")
    sess = obj.get("session") or {}
    dropped = sess.get("dropped") or []
    kept = sess.get("kept_unloaded") or []
    return Result(
        ok=obj["status"] == "ok",
        value=obj.get("value"),
        stdout=obj.get("stdout", ""),
        error=error_line(err["ename"], err["evalue"], err.get("line")) if err else None,
        exit_code=obj["exit_code"],
        held=list(sess.get("held") or []),
        dropped=[d["name"] for d in dropped],
        status=obj["status"],
        stderr=obj.get("stderr", ""),
        execution_count=obj.get("execution_count"),
        session_state=sess.get("state", "unchanged"),
        dropped_reasons={d["name"]: d["reason"] for d in dropped},
        kept_unloaded={d["name"]: d["reason"] for d in kept},
        hints=list(err.get("hints") or []) if err else [],
        traceback=list(err.get("traceback") or []) if err else [],
        limit=obj.get("limit"),
        warnings=list(obj.get("warnings") or []),
        diagnostics=list(obj.get("diagnostics") or []),
        displays=list(obj.get("displays") or []),
        truncated=dict(obj.get("truncated") or {}),
        timings_ms=dict(obj.get("timings_ms") or {}),
        raw=obj,
    )


def failure(message, exit_code=1):
    """A Result for a call the binary ended with a `dolsot:` line only (a busy
    session, a refused store directory): nothing ran, the session is as it was."""
    return Result(ok=False, error=message, exit_code=exit_code, status="error",
                  session_state="unchanged")
