"""An AST gate for InProcessSession: a mechanism, not a safety guarantee.

check_ast(code) raises UnsafeCode when the cell uses one of the constructs
below; InProcessSession(ast_gate=check_ast) runs it before every cell and
turns a rejection into a failed Result. Python running in the host's own
process cannot be confined by inspecting its syntax: attribute chains,
objects the namespace already holds, and the injected values themselves
all reach what this list names. Use the gate to catch mistakes and the
obvious, and the subprocess backend (with --sandbox) for code you do not
trust.
"""

import ast

# Modules whose import hands a cell the process, the files or the network.
DENIED_MODULES = frozenset({
    "os", "sys", "subprocess", "socket", "shutil", "ctypes", "importlib",
    "multiprocessing", "threading", "signal", "pty", "posix", "builtins",
    "gc", "inspect", "pickle", "marshal", "io", "pathlib", "tempfile",
})
# Builtins that evaluate code, reach the namespace or open files.
DENIED_CALLS = frozenset({
    "eval", "exec", "compile", "open", "__import__", "globals", "locals",
    "vars", "getattr", "setattr", "delattr", "breakpoint", "input", "exit",
    "quit",
})


class UnsafeCode(Exception):
    """A cell the AST gate refused; the message names the construct and line."""


def _where(node):
    return f" (line {node.lineno})" if hasattr(node, "lineno") else ""


def check_ast(code):
    """Raise UnsafeCode if code (source or a parsed ast.AST) imports a denied
    module, calls a denied builtin, or touches a dunder attribute."""
    tree = ast.parse(code) if isinstance(code, str) else code
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in DENIED_MODULES:
                    raise UnsafeCode(f"import of {a.name}{_where(node)}")
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and (node.module or "").split(".")[0] in DENIED_MODULES:
                raise UnsafeCode(f"import from {node.module}{_where(node)}")
        elif isinstance(node, ast.Attribute):
            if node.attr.startswith("__") and node.attr.endswith("__"):
                raise UnsafeCode(f"dunder attribute .{node.attr}{_where(node)}")
        elif isinstance(node, ast.Name):
            if node.id in DENIED_CALLS:
                raise UnsafeCode(f"use of {node.id}(){_where(node)}")
            if node.id.startswith("__") and node.id.endswith("__"):
                raise UnsafeCode(f"dunder name {node.id}{_where(node)}")
