"""Check that no file includes a header from a layer above its own.

usage: python3.11 tools/layers.py [LAYERS]   (default tools/layers.txt)
       python3.11 tools/layers.py --suggest   (print a layering that fits)

A module is a top-level NAME.c and/or NAME.h.  LAYERS lists the modules,
one layer per line, the top layer first; blank lines and # comments are
ignored.  A file of module M may include "N.h" only when N sits in a
layer below M's (a module's own header is always fine).  Every module
must be listed.  Exit status 1 and one line per problem otherwise.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"/]+)\.h"', re.M)


def modules():
    """{module: {modules it includes}} for every top-level .c and .h."""
    uses = {}
    for name in sorted(os.listdir(ROOT)):
        base, ext = os.path.splitext(name)
        if ext not in (".c", ".h") or base.endswith("_py"):
            continue
        with open(os.path.join(ROOT, name), encoding="utf-8") as f:
            text = f.read()
        deps = uses.setdefault(base, {})
        for dep in INCLUDE.findall(text):
            if dep != base:
                deps.setdefault(dep, name)
    return uses


def read_layers(path):
    rank = {}
    with open(path, encoding="utf-8") as f:
        lines = [l.split("#", 1)[0].split() for l in f]
    lines = [l for l in lines if l]
    for depth, mods in enumerate(lines):
        for m in mods:
            rank[m] = len(lines) - depth   # higher number: higher layer
    return rank


def suggest(uses):
    depth = {}

    def d(m, seen=()):
        if m in depth:
            return depth[m]
        if m in seen:
            raise SystemExit("cycle: " + " -> ".join(seen + (m,)))
        depth[m] = 1 + max((d(n, seen + (m,)) for n in uses.get(m, ()) if n in uses), default=-1)
        return depth[m]

    for m in uses:
        d(m)
    for level in range(max(depth.values()), -1, -1):
        print(" ".join(sorted(m for m in depth if depth[m] == level)))


def main():
    uses = modules()
    if sys.argv[1:2] == ["--suggest"]:
        suggest(uses)
        return 0
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tools", "layers.txt")
    rank = read_layers(path)
    bad = 0
    for m in sorted(uses):
        if m not in rank:
            print(f"layers: {m} is in no layer of {os.path.relpath(path, ROOT)}")
            bad = 1
            continue
        for dep, where in sorted(uses[m].items()):
            if dep not in rank:
                if dep in uses:
                    continue   # reported above
                print(f"layers: {where} includes {dep}.h, which is no module here")
                bad = 1
            elif rank[dep] >= rank[m]:
                print(f"layers: {where} includes {dep}.h from the same layer or above")
                bad = 1
    for m in sorted(set(rank) - set(uses)):
        print(f"layers: {m} is listed but has no file")
        bad = 1
    return bad


if __name__ == "__main__":
    sys.exit(main())
