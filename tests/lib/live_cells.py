"""Run cells in one live interpreter, the way dolsot runs them one per call.

    /usr/bin/python3.11 tests/lib/live_cells.py < CELLS

CELLS are separated by lines reading '#%% cell'.  Each runs in __main__, as
in dolsot: the statements, then the repr of a last expression that is not
None on a line of its own.  After each cell's stdout comes a line holding
only '\\x1e'; an exception goes to stderr and the next cell runs.  The CLI
tests compare this with what dolsot prints for the same cells, one call each.
"""

import ast
import contextlib
import io
import sys
import types

SEP = "#%% cell\n"


def run(code, ns):
    tree = ast.parse(code, "<cell>", "exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    exec(compile(tree, "<cell>", "exec"), ns)
    return eval(compile(last, "<cell>", "eval"), ns) if last else None


def main():
    # A module of its own, so cells cannot clobber this script's names.
    cells = types.ModuleType("__main__")
    cells.__builtins__ = __builtins__
    sys.modules["__main__"] = cells
    ns = cells.__dict__
    for code in sys.stdin.read().split(SEP):
        buf = io.StringIO()
        value = None
        try:
            with contextlib.redirect_stdout(buf):
                value = run(code, ns)
        except BaseException as e:  # the next cell still runs, as in dolsot
            print(f"{type(e).__name__}: {e}", file=sys.stderr)
        out = buf.getvalue()
        if value is not None:
            if out and not out.endswith("\n"):
                out += "\n"
            out += repr(value) + "\n"
        sys.stdout.write(out + "\x1e\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
