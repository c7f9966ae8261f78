"""dolsot's warm mypy: one interpreter that imported mypy, checking a cell
per request as the command line would (checkd_drv.c runs it).

Run by the interpreter of the mypy script's own #! line, as

    PYTHON WORKDIR/_dolsot_mypy.py FLAG...

with the gate's flags (gate.py's command(), without the script and the
file) and the environment the cold run would have.  Requests and answers
are JSON-RPC 2.0 messages framed by a Content-Length header, as a
language server's, on stdin and on the stdout it had at start (fd 1 is
then pointed at stderr, so nothing mypy prints can reach the stream):

    -> {"id": N, "method": "check", "params": {"text": CELL}}
    <- {"id": N, "result": {"code": STATUS, "stdout": TEXT}}

Each cell is written to a new directory of its own, made the current
one, and checked there by mypy.api.run with the same flags: the same
path-dependent checks as the cold run's fresh directory, and mypy's cache
(under --cache-dir) never takes a rewritten cell for one it has seen.
What stays loaded is the interpreter and mypy itself (mypyc modules and
their lazy imports); mypy still reads its cache from disk per check.
After an exit status other than 0 or 1 (a crash inside mypy), the
process answers and exits, so that the next cell gets a fresh one.
"""

import json
import os
import shutil
import sys

CELL_FILE = "_dolsot_cell.py"
MAX_HEADER = 4096
MAX_BODY = 64 << 20


def read_frame(inp):
    """The body of the next frame, or None at end of input."""
    length = None
    seen = 0
    while True:
        line = inp.readline(MAX_HEADER + 1)
        if not line:
            return None
        seen += len(line)
        if seen > MAX_HEADER or not line.endswith(b"\n"):
            raise ValueError("header too long")
        line = line.strip()
        if not line:
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    if length is None or not 0 <= length <= MAX_BODY:
        raise ValueError("no usable Content-Length")
    body = inp.read(length)
    if len(body) != length:
        return None
    return body


def write_frame(out, msg):
    body = json.dumps(msg).encode("utf-8")
    out.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    out.flush()


def check(run, flags, base, seq, text):
    """(status, stdout) of mypy on text, in a directory of its own."""
    where = os.path.join(base, "c%d" % seq)
    os.mkdir(where, 0o700)
    try:
        cell = os.path.join(where, CELL_FILE)
        with open(cell, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.chdir(where)
        out, _err, status = run(list(flags) + [cell])
        return status, out
    finally:
        os.chdir(base)
        shutil.rmtree(where, ignore_errors=True)


def main():
    flags = sys.argv[1:]
    base = os.getcwd()
    proto = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    inp = sys.stdin.buffer
    from mypy.api import run
    import mypy.main  # noqa: F401  (loaded now, not by the first cell)

    seq = 0
    while True:
        body = read_frame(inp)
        if body is None:
            return 0
        msg = json.loads(body)
        if msg.get("method") != "check":
            continue
        seq += 1
        status, out = check(run, flags, base, seq, msg["params"]["text"])
        write_frame(proto, {"jsonrpc": "2.0", "id": msg["id"],
                            "result": {"code": status, "stdout": out}})
        if status not in (0, 1):
            return 0


sys.exit(main())
