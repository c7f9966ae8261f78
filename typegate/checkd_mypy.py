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
one, as the cold run's fresh directory is (so mypy's cache never takes a
rewritten cell for one it has seen).  The first cell is checked as
mypy's main() would check it (process_options, build.build, its exit
status rule), in this process, and the build is kept: its manager and
its graph, with the trees of everything the cell needed loaded from
mypy's cache.  A later cell, when none of the files that build read has
changed since (path, mtime, size, inode), is checked in this process
against those loaded trees: the kept cell is dropped from the graph,
the new one is loaded into it (load_graph with the old graph), and the
graph is processed as build.process_graph() does, with the same
freshness rules, but skipping what the kept build already processed; so
only the cell, and modules it imports that the kept build had not
loaded, cost anything.  Afterwards the cell is dropped again, and what
the check added to the build's sets is put back, so that the next cell
meets the build as it was kept.  (It used to be checked in a forked
copy, whose changes died with it; on a virtual machine whose page
faults are dear, the copy-on-write faults of that fork were most of a
check's time: see bench/RESULTS.md.)  When the cell loaded more, the
cell is built again, after the answer, and that build is kept instead;
so is a new build after a check that failed inside mypy.  Anything
unusual (a blocking error, a second source, an exception) is checked by
mypy.api.run in a forked copy, as the command line would.  After an
exit status other than 0 or 1 the process answers and exits, so that
the next cell gets a fresh one.
"""

import contextlib
import gc
import io
import json
import os
import shutil
import sys

CELL_FILE = "_dolsot_cell.py"
MAX_HEADER = 4096
MAX_BODY = 64 << 20
# A check in place leaves a little behind (about 20 KiB a cell with
# classes: objects mypy's compiled classes keep reachable), so the
# build is made anew, after an answer, once the process has grown this
# much since the kept build was made.
REBUILD_GROWTH = 64 << 20


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


class Warm:
    """mypy's build of an earlier cell, kept: its manager and graph, with the
    dependencies' trees loaded, and the files they came from as they were."""

    def __init__(self, manager, graph, cell_id):
        self.manager = manager
        self.graph = graph
        self.cell_id = cell_id
        self.done = {i for i, st in graph.items() if i != cell_id and st.tree is not None}
        self.stamps = {}
        for i, st in graph.items():
            if i != cell_id and st.path:
                self.stamps[st.path] = stamp(st.path)

        self.rss = resident()

    def unchanged(self):
        return all(stamp(p) == v for p, v in self.stamps.items())


def stamp(path):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


def resident():
    """This process's resident size in bytes (0 if unknown)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def answer(messages, blockers=False):
    """(status, stdout) as mypy's main() makes them from the messages
    (pairs of the line and whether it went to stderr)."""
    from mypy.util import count_stats
    every = [m for m, _ in messages]
    _, notes, _ = count_stats(every)
    status = (2 if blockers else 1) if every and notes < len(every) else 0
    return status, "".join(m + "\n" for m, serious in messages if not serious)


def load_rest(graph, manager):
    """Load from the cache what the build left unloaded (all of it when the
    cell itself was fresh, say a cell the cold run checked before), in
    dependency order, so that later cells find it loaded.  False when an
    import cycle is half loaded: then nothing is kept."""
    from mypy import build
    for ascc in build.sorted_components(graph):
        unloaded = [i for i in ascc if graph[i].tree is None]
        if not unloaded:
            continue
        if len(unloaded) != len(ascc) or any(graph[i].meta is None for i in ascc):
            return False
        scc = build.order_ascc(graph, ascc)
        if "builtins" in ascc:
            scc = sorted(scc, reverse=True)
            scc.remove("builtins")
            scc.append("builtins")
        build.process_fresh_modules(graph, scc, manager)
    return True


def full_build(flags, cell):
    """mypy's main() on the cell, in this process, keeping the build:
    (status, stdout, Warm or None)."""
    from mypy import build
    from mypy.errors import CompileError
    from mypy.fscache import FileSystemCache
    from mypy.main import process_options

    messages = []

    def flush(new, serious):
        messages.extend((m, serious) for m in new)

    sys.setrecursionlimit(2 ** 14)
    fscache = FileSystemCache()
    out, err = io.StringIO(), io.StringIO()
    sources, options = process_options(list(flags) + [cell], stdout=out, stderr=err,
                                       fscache=fscache)
    options.fast_exit = False
    if len(sources) != 1 or options.install_types or out.getvalue():
        raise RuntimeError("not a plain run")
    try:
        result = build.build(sources, options, None, flush, fscache, out, err)
    except CompileError:
        status, text = answer(messages, True)
        return status, text, None
    status, text = answer(messages)
    if not load_rest(result.graph, result.manager):
        return status, text, None
    warm = Warm(result.manager, result.graph, sources[0].module)
    warm.sink = messages
    # What is kept is never collected, so a forked child's collector does
    # not walk (and so copy) the whole of it.
    gc.collect()
    gc.freeze()
    return status, text, warm


def quick_check(warm, cell):
    """Check the cell against warm's loaded trees, as mypy's
    process_graph() would, but skipping the modules the kept build
    already processed.  (status, stdout, grew)."""
    from mypy import build
    from mypy.find_sources import create_source_list
    from mypy.modulefinder import BuildSourceSet, FindModuleCache

    m, graph = warm.manager, warm.graph
    graph.pop(warm.cell_id, None)
    m.modules.pop(warm.cell_id, None)
    m.ast_cache.clear()         # the kept build's parse of its own cell, among others
    m.errors.reset()
    m.errors.set_ignore_prefix(os.getcwd())     # paths as the cold run prints them
    m.fscache.flush()
    del warm.sink[:]
    sources = create_source_list([cell], m.options, m.fscache)
    if len(sources) != 1 or sources[0].module != warm.cell_id:
        raise RuntimeError("the cell is another module")
    m.source_set = BuildSourceSet(sources)
    m.find_module_cache = FindModuleCache(m.search_paths, m.fscache, m.options,
                                          source_set=m.source_set)
    new = []
    graph = build.load_graph(sources, m, graph, new)
    queue = []
    for ascc in build.sorted_components(graph):
        if ascc <= warm.done:
            continue
        scc = build.order_ascc(graph, ascc)
        if "builtins" in ascc:
            scc = sorted(scc, reverse=True)
            scc.remove("builtins")
            scc.append("builtins")
        fresh = all(graph[i].is_fresh() for i in scc)
        deps = set()
        for i in scc:
            deps.update(graph[i].dependencies)
        deps -= ascc
        stale_deps = {i for i in deps if i in graph and not graph[i].is_interface_fresh()}
        fresh = fresh and not stale_deps
        if fresh:
            undeps = set()
            for i in scc:
                undeps.update(graph[i].suppressed)
            fresh = not (undeps & graph.keys())
        if fresh:
            oldest = min(graph[i].xmeta.data_mtime for i in scc)
            viable = {i for i in stale_deps if graph[i].meta is not None}
            newest = max((graph[d].xmeta.data_mtime for d in viable), default=0)
            fresh = oldest >= newest
        if any(graph[d].transitive_error for d in deps if d in graph):
            for i in scc:
                graph[i].transitive_error = True
        if fresh:
            queue.append(scc)
            continue
        for prev in queue:
            build.process_fresh_modules(graph, prev, m)
        queue = []
        if scc == [warm.cell_id]:
            stale_cell(graph, scc)
        else:
            build.process_stale_scc(graph, scc, m)
    m.metastore.commit()
    status, text = answer(warm.sink)
    return status, text, len(new) > 1


def stale_cell(graph, scc):
    """build.process_stale_scc() on the SCC of the cell alone, writing no
    cache for it (mypy writes none when its cache directory is
    os.devnull): no module imports a cell, the next cell is another
    file, and writing the cache is done after the verdict.  That write
    was most of a check in place (bench/RESULTS.md)."""
    from mypy import build
    options = graph[scc[0]].options
    saved = options.cache_dir
    options.cache_dir = os.devnull
    try:
        build.process_stale_scc(graph, scc, graph[scc[0]].manager)
    finally:
        options.cache_dir = saved


def in_place(warm, cell):
    """quick_check() in this process, then the build put back as it was
    kept: the cell, and any module the check loaded, dropped from the
    graph and the modules, the missing modules as they were, no errors
    left.  (status, stdout, grew); an exception from mypy's build
    passes through."""
    m, graph = warm.manager, warm.graph
    kept = set(graph) - {warm.cell_id}
    missing = set(m.missing_modules)
    # The check's objects are garbage at its end, and the kept ones are
    # frozen: collect once, after the answer (main), not during it.
    gc.disable()
    try:
        return quick_check(warm, cell)
    finally:
        for i in [i for i in graph if i not in kept]:
            del graph[i]
            m.modules.pop(i, None)
        m.missing_modules.clear()
        m.missing_modules.update(missing)
        m.errors.reset()
        gc.enable()


def forked(fn, *args):
    """fn(*args) in a child, whose changes to this process's objects are
    thrown away with it: its JSON-able result, or None if it died."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        gc.disable()            # a short life: nothing to reclaim
        os.close(r)
        try:
            data = json.dumps(fn(*args)).encode("utf-8")
        except BaseException:
            data = b"null"
        with os.fdopen(w, "wb") as f:
            f.write(data)
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    try:
        return json.loads(data) if data else None
    except ValueError:
        return None


def fallback(run, flags, cell):
    out, _err, status = run(list(flags) + [cell])
    return status, out, False


@contextlib.contextmanager
def cell_file(base, seq, text, litter):
    """The cell written to base/cN/, made the current directory while used;
    the directory is added to litter, for main to remove once it has
    answered."""
    where = os.path.join(base, "c%d" % seq)
    os.mkdir(where, 0o700)
    litter.append(where)
    try:
        cell = os.path.join(where, CELL_FILE)
        with open(cell, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.chdir(where)
        yield cell
    finally:
        os.chdir(base)


def check(run, flags, base, seq, text, kept, litter):
    """(status, stdout, grew) of mypy on text, in a directory of its own:
    with the kept build (kept[0]) when the files it read are unchanged,
    else with a new build, kept in its place.  grew: the cell imported
    modules the kept build had not loaded."""
    from mypy.errors import CompileError
    state = kept[0]
    with cell_file(base, seq, text, litter) as cell:
        if state is not None and state.unchanged():
            got = None
            try:
                got = in_place(state, cell)
            except CompileError:
                got = forked(fallback, run, flags, cell)
            except BaseException:   # mypy's crash is SystemExit: a build in
                pass                # doubt, so a new one, below
            if got is not None:
                status, out, grew = got
                return status, out, grew
        forget(kept)
        try:
            status, out, kept[0] = full_build(flags, cell)
        except BaseException:   # anything unusual: mypy's own main() says it
            out, _err, status = run(list(flags) + [cell])
        return status, out, False


def forget(kept):
    """Drop the kept build, and let the collector have it (it was frozen)."""
    kept[0] = None
    gc.unfreeze()
    gc.collect()


def rebuild(flags, base, seq, text, kept, litter):
    """A new kept build, of a cell that imported more than the kept one."""
    forget(kept)
    with cell_file(base, seq, text, litter) as cell:
        try:
            kept[0] = full_build(flags, cell)[2]
        except BaseException:
            kept[0] = None


def tidy(litter):
    """Remove the cell directories made since the last answer."""
    for where in litter:
        shutil.rmtree(where, ignore_errors=True)
    del litter[:]


def main():
    flags = sys.argv[1:]
    base = os.getcwd()
    proto = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    inp = sys.stdin.buffer
    from mypy.api import run
    import mypy.main  # noqa: F401  (loaded now, not by the first cell)

    seq = 0
    kept = [None]
    litter = []
    while True:
        body = read_frame(inp)
        if body is None:
            tidy(litter)
            return 0
        msg = json.loads(body)
        if msg.get("method") != "check":
            continue
        seq += 1
        text = msg["params"]["text"]
        status, out, grew = check(run, flags, base, seq, text, kept, litter)
        write_frame(proto, {"jsonrpc": "2.0", "id": msg["id"],
                            "result": {"code": status, "stdout": out}})
        tidy(litter)
        if status not in (0, 1):
            return 0
        state = kept[0]
        if grew or (state is not None and state.rss and
                    resident() > state.rss + REBUILD_GROWTH):
            # While the cell runs: keep a build that has loaded what it
            # imports, so that the next cell importing it too is quick;
            # or one without what checks in place left behind.
            seq += 1
            rebuild(flags, base, seq, text, kept, litter)
        else:
            gc.collect()        # the check's garbage, the answer being out


sys.exit(main())
