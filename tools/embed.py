"""Embed a Python module in the binary: its source and its compiled code.

usage: python3.11 tools/embed.py NAME SOURCE OUTPUT.c

Writes NAME_py (the source, NUL-terminated), NAME_code (the code object as
marshal data) and NAME_magic (the bytecode magic number it was made for).
The interpreter built into dolsot loads the code when the magic matches
its own, and compiles the source otherwise.
"""
import importlib.util
import marshal
import os
import sys


def c_bytes(data):
    lines = []
    for i in range(0, len(data), 16):
        lines.append("\t" + ", ".join(f"0x{b:02x}" for b in data[i:i + 16]) + ",")
    return "\n".join(lines)


def main():
    name, source, output = sys.argv[1:4]
    with open(source, "rb") as f:
        text = f.read()
    code = compile(text, f"<dolsot-{name}>", "exec", dont_inherit=True, optimize=0)
    data = marshal.dumps(code)
    magic = int.from_bytes(importlib.util.MAGIC_NUMBER[:2], "little")
    with open(output + ".tmp", "w") as out:
        out.write(f"/* generated from {source} by tools/embed.py; do not edit */\n")
        out.write("#include <stddef.h>\n")
        source_bytes = c_bytes(text + bytes(1))
        out.write(f"const unsigned char {name}_py[] = {{\n{source_bytes}\n}};\n")
        out.write(f"const unsigned char {name}_code[] = {{\n{c_bytes(data)}\n}};\n")
        out.write(f"const size_t {name}_code_len = {len(data)};\n")
        out.write(f"const long {name}_magic = {magic};\n")
    os.replace(output + ".tmp", output)


main()
