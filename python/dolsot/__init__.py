"""dolsot: stateful Python cells for LLM agents, as a Python API.

Repl runs each cell through the dolsot binary (a fresh worker per cell,
sessions pickled between calls); InProcessSession runs cells in this
process against a live namespace. Both return a Result.

    from dolsot import Repl
    repl = Repl(inject={"mt": "mytools"})
    repl.run("task-42", "mt.add(1, 2)").value   # '3'
"""

from .errors import (BinaryNotFound, DolsotError, HostToolError, InvalidSession,
                     InvalidToolbox)
from .handle import Handle, Peek
from .inprocess import InProcessSession
from .repl import Repl
from .result import Move, Result, SessionInfo

__version__ = "0.3.0"

__all__ = ["Repl", "Result", "SessionInfo", "Move", "Handle", "Peek", "InProcessSession",
           "InvalidSession", "InvalidToolbox", "DolsotError", "BinaryNotFound",
           "HostToolError"]
