"""mytools: a small example toolbox for dolsot.

Run it from this directory (the worker puts the current directory on
sys.path):

    dolsot --toolbox mytools:mt --session demo "print(mt.help())"

It follows the toolbox conventions of dolsot(1): importable by name, a
declared public surface (__all__), one exception class whose int exit_code
becomes dolsot's exit status, a help() function, and annotated signatures.
The data is fixed, so every run gives the same answers.
"""

import inspect

__all__ = ["ToolError", "add", "load", "scale", "help"]


class ToolError(Exception):
    """A failure this toolbox reports on purpose; dolsot exits with 3."""

    exit_code = 3


_DATA = {
    "orders": (12, 7, 30, 5, 18),
    "returns": (2, 1, 4),
}


def add(a: int, b: int) -> int:
    """Return a + b."""
    return a + b


def load(name: str) -> list[int]:
    """Return a fresh list of the named data set: 'orders' or 'returns'."""
    try:
        return list(_DATA[name])
    except KeyError:
        raise ToolError(f"no data set named {name!r}; "
                        f"known: {', '.join(sorted(_DATA))}") from None


def scale(values: list[int], factor: int) -> list[int]:
    """Return a new list with every value multiplied by factor."""
    return [v * factor for v in values]


class _Text(str):
    """A str whose repr is itself, so help() reads well as a cell's value."""

    def __repr__(self) -> str:
        return str(self)


def _functions():
    return {name: obj for name, obj in globals().items()
            if name in __all__ and inspect.isfunction(obj)}


def help(topic: str | None = None) -> str:
    """Return the cheat sheet, or the full help of one function."""
    funcs = _functions()
    if topic is None:
        lines = ["mytools: example toolbox"]
        for name, fn in funcs.items():
            summary = (fn.__doc__ or "").strip().splitlines()[0]
            lines.append(f"  {name}{inspect.signature(fn)}")
            lines.append(f"      {summary}")
        lines.append("Failures raise ToolError (exit status 3). "
                     "help('NAME') shows one function.")
        return _Text("\n".join(lines))
    if topic not in funcs:
        raise ToolError(f"no function named {topic!r}; "
                        f"known: {', '.join(funcs)}")
    fn = funcs[topic]
    return _Text(f"{topic}{inspect.signature(fn)}\n\n"
                 f"{inspect.getdoc(fn) or '(no documentation)'}")
