"""Check the program's layers and its folders' doors.

usage: python3.11 tools/layers.py [LAYERS]   (default tools/layers.txt)
       python3.11 tools/layers.py --suggest   (print a layering that fits)

A module is a NAME.c and/or NAME.h, at the top (the spine) or in one of
the subsystems' folders (a folder beside the spine with a README.md).
LAYERS lists the modules by path (NAME at the top, DIR/NAME in a folder),
one layer per line, the top layer first; blank lines and # comments are
ignored.  A file of module M may include "N.h" only when N sits in a
layer below M's (a module's own header is always fine).  Every module
must be listed.

Each folder's README.md names its door in a line "Door: a.h b.h ...":
the headers that files outside the folder may include.  A file outside
includes no other header of that folder.

Exit status 1 and one line per problem otherwise.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"/]+)\.h"', re.M)
DOOR = re.compile(r"^Door:(.*)$", re.M)
NOT_SUBSYSTEMS = {"tests", "man", "bench", "fuzz", "docs", "examples", "python",
                  "schema", "tools", "build"}


def folders():
    """The subsystems' folders: every top-level folder with a README.md
    and C files, but the project's other folders."""
    found = []
    for name in sorted(os.listdir(ROOT)):
        path = os.path.join(ROOT, name)
        if name in NOT_SUBSYSTEMS or name.startswith(".") or not os.path.isdir(path):
            continue
        if any(f.endswith((".c", ".h")) for f in os.listdir(path)):
            found.append(name)
    return found


def modules():
    """{module path: {module name it includes: file}}, and {name: path}."""
    uses, path_of = {}, {}
    for folder in [""] + folders():
        for name in sorted(os.listdir(os.path.join(ROOT, folder))):
            base, ext = os.path.splitext(name)
            if ext not in (".c", ".h") or base.endswith("_py"):
                continue
            mod = os.path.join(folder, base)
            path_of[base] = mod
            with open(os.path.join(ROOT, folder, name), encoding="utf-8") as f:
                text = f.read()
            deps = uses.setdefault(mod, {})
            for dep in INCLUDE.findall(text):
                if dep != base:
                    deps.setdefault(dep, os.path.join(folder, name))
    return uses, path_of


def doors(path_of):
    """Problems with the folders' doors, one line each."""
    bad = []
    door = {}
    for folder in folders():
        readme = os.path.join(ROOT, folder, "README.md")
        try:
            with open(readme, encoding="utf-8") as f:
                m = DOOR.search(f.read())
        except OSError as e:
            bad.append(f"layers: {folder}/ has no README.md ({e.strerror})")
            continue
        if not m:
            bad.append(f"layers: {folder}/README.md names no door (a line \"Door: a.h ...\")")
            continue
        door[folder] = {h[:-2] for h in m.group(1).split()}
        for h in sorted(door[folder]):
            if path_of.get(h) != os.path.join(folder, h):
                bad.append(f"layers: {folder}/README.md's door names {h}.h, which {folder}/ does not hold")
    return door, bad


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
    uses, path_of = modules()
    if sys.argv[1:2] == ["--suggest"]:
        suggest({m: {path_of[d] for d in deps if d in path_of} for m, deps in uses.items()})
        return 0
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tools", "layers.txt")
    rank = read_layers(path)
    door, problems = doors(path_of)
    for line in problems:
        print(line)
    bad = 1 if problems else 0
    for m in sorted(uses):
        if m not in rank:
            print(f"layers: {m} is in no layer of {os.path.relpath(path, ROOT)}")
            bad = 1
            continue
        for name, where in sorted(uses[m].items()):
            dep = path_of.get(name)
            if dep is None:
                print(f"layers: {where} includes {name}.h, which is no module here")
                bad = 1
            elif dep not in rank:
                continue   # reported as in no layer
            elif rank[dep] >= rank[m]:
                print(f"layers: {where} includes {name}.h from the same layer or above")
                bad = 1
            home = os.path.dirname(dep)
            if home and home != os.path.dirname(m) and home in door and name not in door[home]:
                print(f"layers: {where} includes {name}.h, which is not in {home}/'s door")
                bad = 1
    for m in sorted(set(rank) - set(uses)):
        print(f"layers: {m} is listed but has no file")
        bad = 1
    return bad


if __name__ == "__main__":
    sys.exit(main())
