"""How far one call reaches, from the built objects' symbols.

usage: python3.11 tools/calls.py [OBJDIR] [START]   (default build repl)

Maps every defined function and object of OBJDIR/**/*.o (but the tests',
the fuzzers', the sanitizer builds' and the generated *_py.o) to its file,
and each file to the files whose symbols it uses.
Prints the files START uses directly, the deepest chain of distinct files
a call from START can go through, and any cycle between files.
"""
import glob
import os
import subprocess
import sys


def graph(objdir):
    defs, undef = {}, {}
    for o in sorted(glob.glob(os.path.join(objdir, "**", "*.o"), recursive=True)):
        if os.path.relpath(o, objdir).split(os.sep)[0] in ("tests", "fuzz"):
            continue
        name = os.path.basename(o)[:-2]
        if name.endswith("_py") or name.endswith(".asan"):
            continue
        out = subprocess.run(["nm", o], capture_output=True, text=True, check=True).stdout
        used = set()
        for line in out.splitlines():
            f = line.split()
            if len(f) == 2 and f[0] == "U":
                used.add(f[1])
            elif len(f) == 3 and f[1] in "TDBR":
                defs.setdefault(f[2], name)
        undef[name] = used
    return {m: sorted({defs[s] for s in u if s in defs and defs[s] != m})
            for m, u in undef.items()}


def main():
    objdir = sys.argv[1] if len(sys.argv) > 1 else "build"
    start = sys.argv[2] if len(sys.argv) > 2 else "repl"
    g = graph(objdir)
    memo, state, cycles = {}, {}, []

    def deepest(n):
        if n in memo:
            return memo[n]
        state[n] = "open"
        best = [n]
        for m in g.get(n, []):
            if state.get(m) == "open":
                cycles.append((n, m))
                continue
            p = deepest(m)
            if len(p) + 1 > len(best):
                best = [n] + p
        state[n] = "done"
        memo[n] = best
        return best

    chain = deepest(start)
    print(f"{start} uses {len(g[start])} files: {' '.join(g[start])}")
    print(f"deepest chain, {len(chain)} files: {' -> '.join(chain)}")
    for a, b in cycles:
        print(f"cycle: {a} <-> {b}")
    return 1 if cycles else 0


if __name__ == "__main__":
    sys.exit(main())
