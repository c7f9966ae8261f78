"""Handle: a detached cell (Repl.run(..., detach_after=S) whose cell still
ran after S seconds), through the binary's --wait, --peek and --cancel.

The cell runs on in a keeper process of the binary's, outside this one:
a Handle is only its id, good for the session TTL, for this user and
store directory (README, "Detached cells").
"""

import asyncio
import json
import subprocess
import typing

from .errors import DolsotError

# The binary's exit code for "still running, detached".
DETACHED = 75


class Peek(typing.NamedTuple):
    """A detached cell's output so far (each stream cut as a Result's is)
    and its state: "running", "finished", "cancelled" or "lost"."""

    state: str
    stdout: str
    stderr: str


class Handle:
    """A detached cell. wait() gives its Result (as run() would have),
    peek() its output so far, cancel() stops it (its session unchanged).
    The *_async variants are the same for event loops."""

    def __init__(self, repl, obj):
        self.id = obj["handle"]
        self.session = obj["session"]
        self._repl = repl

    def _argv(self, *args):
        return [self._repl.binary, *args, self.id, "--json"]

    def _answer(self, rc, out, err, what):
        if rc == DETACHED:
            raise TimeoutError(f"detached cell {self.id} is still running")
        if what == "wait":
            return self._repl._answer(rc, out, err)
        if not out.strip():
            raise DolsotError(err.decode("utf-8", "replace").strip() or
                              f"dolsot --{what} exited {rc}")
        obj = json.loads(out)
        if what == "peek":
            return Peek(obj["state"], obj["stdout"], obj["stderr"])
        return obj["status"] == "cancelled"

    def _call(self, what, timeout=None):
        argv = self._argv(f"--{what}")
        if timeout is not None:
            argv += ["--timeout", repr(float(timeout))]
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                           env=self._repl._env(), check=False)
        return self._answer(p.returncode, p.stdout, p.stderr, what)

    async def _acall(self, what, timeout=None):
        argv = self._argv(f"--{what}")
        if timeout is not None:
            argv += ["--timeout", repr(float(timeout))]
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=self._repl._env())
        try:
            out, err = await proc.communicate()
        except BaseException:
            proc.kill()   # the waiter only: the cell runs on
            await proc.wait()
            raise
        return self._answer(proc.returncode, out, err, what)

    def wait(self, timeout=None):
        """The cell's Result once it ends; with timeout (seconds), a
        TimeoutError when it still runs by then (the cell runs on)."""
        return self._call("wait", timeout)

    def peek(self):
        """Its output so far, a Peek."""
        return self._call("peek")

    def cancel(self):
        """Stop the cell; its session is left as it was. True when it was
        cancelled, False when it had already ended (wait() has its Result)."""
        return self._call("cancel")

    async def wait_async(self, timeout=None):
        return await self._acall("wait", timeout)

    async def peek_async(self):
        return await self._acall("peek")

    async def cancel_async(self):
        return await self._acall("cancel")

    def __repr__(self):
        return f"Handle({self.id!r}, session={self.session!r})"


def answer(repl, rc, out, err):
    """A detached call's answer: a Handle when it detached, else its Result."""
    if rc == DETACHED and out.strip():
        obj = json.loads(out)
        if obj.get("status") == "detached":
            return Handle(repl, obj)
    return repl._answer(rc, out, err)


def running(repl):
    """The user's detached cells that still run, as Handles."""
    p = subprocess.run([repl.binary, "--list-running", "--json"], stdin=subprocess.DEVNULL,
                       capture_output=True, env=repl._env(), check=False)
    if p.returncode != 0:
        raise DolsotError(p.stderr.decode("utf-8", "replace").strip() or
                          f"dolsot --list-running exited {p.returncode}")
    return [Handle(repl, o) for o in json.loads(p.stdout)["running"]]


__all__ = ["Handle", "Peek"]
