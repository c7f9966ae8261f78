#!/bin/sh
# bench/run.sh - dolsot side by side with reference systems, in one run.
#
# Usage (from the repository root):  sh bench/run.sh
# Environment:
#   BENCH_ROUNDS   recorded rounds per scenario (default 30)
#   BENCH_WARMUP   unrecorded warm-up rounds per scenario (default 2)
#   BENCH_PEERS    directory of the reference systems (default /work/shared/peers)
#   BENCH_MONTY=0  skip Monty (no npm use at all)
#   BENCH_PROFILE=0  skip the strace/perf profiling section
# Output: bench/out/<UTC timestamp>/ (run.log, raw.csv, summary.md, rss.json,
# profiling files).  See bench/README.md.
set -eu

cd "$(dirname "$0")/.."
ROOT=$(pwd)
PY=/usr/bin/python3.11
ROUNDS=${BENCH_ROUNDS:-30}
WARMUP=${BENCH_WARMUP:-2}
PEERS=${BENCH_PEERS:-/work/shared/peers}
REF=$PEERS/refdolsot/dolsot
CLEAN_PATH=/usr/local/bin:/usr/bin:/bin
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT=$ROOT/bench/out/$STAMP
TIMEIT="$PY $ROOT/bench/timeit.py"

case $ROUNDS in '' | *[!0-9]* | 0) echo "BENCH_ROUNDS must be a positive integer" >&2; exit 2 ;; esac
case $WARMUP in '' | *[!0-9]*) echo "BENCH_WARMUP must be an integer >= 0" >&2; exit 2 ;; esac
[ -x ./dolsot ] || make dolsot
[ -x "$REF" ] || { echo "refdolsot not found at $REF" >&2; exit 1; }

mkdir -p "$OUT"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/dolsot-bench.XXXXXX")

# Per-system session stores: fresh, 0700 (dolsot refuses anything looser),
# removed at the end.  dolsot (warm, the default) and dolsot-cold
# (DOLSOT_SERVER=off) get separate stores.
DC=$WORK/cache-dolsot
DCC=$WORK/cache-dolsot-cold
RC=$WORK/cache-refdolsot
MS=$WORK/monty-sessions
mkdir -m 700 "$DC" "$DCC" "$RC" "$MS" "$WORK/bin"

# Other people rebuild ./dolsot in this tree: time a snapshot of it, so one
# run measures one binary (it needs nothing beside itself; cwd stays the root).
cp ./dolsot "$WORK/bin/dolsot"
DBIN=$WORK/bin/dolsot

# The environment every measured command gets (timeit.py builds the same one):
# no PYTHON* variables from the caller, no pyenv on PATH.
clean() {
	env -i PATH="$CLEAN_PATH" HOME="$HOME" LANG=C.UTF-8 ${TMPDIR:+TMPDIR="$TMPDIR"} "$@"
}

# dolsot's warm server (started by the first call on a store) outlives the
# call: stop ours before removing its store.
cleanup() {
	clean DOLSOT_CACHE_DIR="$DC" "$DBIN" --server-stop >/dev/null 2>&1 || true
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Commands (timeit.py syntax: leading NAME=VALUE words, shlex quoting).
DOLSOT="DOLSOT_CACHE_DIR=$DC $DBIN"
DCOLD="DOLSOT_CACHE_DIR=$DCC DOLSOT_SERVER=off $DBIN"
REFD="DOLSOT_CACHE_DIR=$RC DOLSOT_TYPECHECK=0 $PY $REF"
PY_S="$PY -S -c pass"
PY_DILL="$PY -c 'import dill'"

# Run one setup command (not timed) and fail loudly if it fails.
setup() {
	if ! clean "$@" >"$WORK/setup.out" 2>"$WORK/setup.err"; then
		echo "setup failed: $*" >&2
		cat "$WORK/setup.out" "$WORK/setup.err" >&2
		exit 1
	fi
}
# Every session is created in all three stores; for the warm store the
# server is then asked to have the zygote for this environment ready.
make_session() {
	# make_session SESSION CELL [TOOLBOX] -- run CELL in SESSION in every store
	sid=$1 cell=$2 tbx=${3:-}
	if [ -n "$tbx" ]; then
		for store in "DOLSOT_CACHE_DIR=$DC" "DOLSOT_CACHE_DIR=$DCC DOLSOT_SERVER=off"; do
			# shellcheck disable=SC2086 # $store is two assignments on purpose
			setup PYTHONPATH="$ROOT/bench" $store "$DBIN" --toolbox "$tbx" --session "$sid" "$cell"
		done
		setup PYTHONPATH="$ROOT/bench" DOLSOT_CACHE_DIR="$RC" DOLSOT_TYPECHECK=0 \
			"$PY" "$REF" --toolbox "$tbx" --session "$sid" "$cell"
		setup PYTHONPATH="$ROOT/bench" DOLSOT_CACHE_DIR="$DC" "$DBIN" --server-start --toolbox "$tbx"
	else
		setup DOLSOT_CACHE_DIR="$DC" "$DBIN" --session "$sid" "$cell"
		setup DOLSOT_CACHE_DIR="$DCC" DOLSOT_SERVER=off "$DBIN" --session "$sid" "$cell"
		setup DOLSOT_CACHE_DIR="$RC" DOLSOT_TYPECHECK=0 "$PY" "$REF" --session "$sid" "$cell"
		setup DOLSOT_CACHE_DIR="$DC" "$DBIN" --server-start
	fi
}
server_status() { clean DOLSOT_CACHE_DIR="$DC" "$DBIN" --server-status 2>&1 || true; }
server_pid() { server_status | sed -n 's/^pid \([0-9]*\)$/\1/p'; }
server_calls() { server_status | sed -n 's/^calls \([0-9]*\) warm, \([0-9]*\) cold$/\1 \2/p'; }

header() {
	echo "# dolsot benchmark run $STAMP"
	echo "date:     $(date -u)"
	echo "machine:  nproc=$(nproc); $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //');" \
		"kernel $(uname -r); $(grep MemTotal /proc/meminfo | tr -s ' ')"
	echo "commit:   $(git rev-parse --short HEAD 2>/dev/null || echo '?')" \
		"(working tree: $(git status --porcelain 2>/dev/null | wc -l) modified/untracked paths)"
	echo "dolsot:   $("$DBIN" --version 2>&1 | head -1); binary sha256" \
		"$(sha256sum "$DBIN" | cut -c1-16), ./dolsot built $(date -u -r dolsot '+%Y-%m-%d %H:%M:%S UTC')"
	echo "python:   $($PY -c 'import sys, dill, numpy, pandas; print(sys.version.split()[0], "dill", dill.__version__, "numpy", numpy.__version__, "pandas", pandas.__version__)')"
	echo "store:    $WORK ($(df -T "$WORK" | awk 'NR==2 {print $2}'))"
	echo "rounds:   $ROUNDS recorded + $WARMUP warm-up, systems interleaved per round"
	echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
}

# --- Monty (optional) ---------------------------------------------------------
MONTY_BIN=
MONTY_NODE=
get_monty() {
	if [ "${BENCH_MONTY:-1}" = 0 ]; then
		echo "Monty: skipped (BENCH_MONTY=0)"
		return 0
	fi
	if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
		echo "Monty: npm or node not found; continuing without Monty"
		return 0
	fi
	mkdir -p "$WORK/monty-cli" "$WORK/monty-node"
	if (cd "$WORK/monty-cli" &&
		timeout 300 npm pack --silent @pydantic/monty-linux-x64-gnu@0.0.23 &&
		tar xzf ./*.tgz) >"$WORK/npm-pack.log" 2>&1 &&
		[ -x "$WORK/monty-cli/package/monty" ]; then
		MONTY_BIN=$WORK/monty-cli/package/monty
		echo "Monty CLI: @pydantic/monty-linux-x64-gnu@0.0.23 (package/monty)"
	else
		echo "Monty CLI: npm pack failed; continuing without it:"
		tail -3 "$WORK/npm-pack.log"
	fi
	if [ -f "$PEERS/monty/monty_cli.mjs" ] &&
		cp -R "$PEERS/monty/." "$WORK/monty-node/" &&
		(cd "$WORK/monty-node" && timeout 300 npm install --silent --no-audit --no-fund) \
			>"$WORK/npm-install.log" 2>&1; then
		MONTY_NODE=$WORK/monty-node/monty_cli.mjs
		echo "Monty node session CLI: @pydantic/monty" \
			"$(sed -n 's/.*"version": *"\([^"]*\)".*/\1/p' "$WORK/monty-node/node_modules/@pydantic/monty/package.json" | head -1)," \
			"node $(node --version)"
	else
		echo "Monty node session CLI: npm install failed; continuing without it:"
		tail -3 "$WORK/npm-install.log" 2>/dev/null || true
	fi
}

# --- scenarios ----------------------------------------------------------------
time_scenario() {
	# time_scenario NAME [--sys NAME CMD | --expect NAME TEXT]...
	# The warm server's CPU is added for dolsot; its warm/cold call counters
	# are checked: every timed dolsot call should have been served warm.
	sc=$1
	shift
	echo
	spid=$(server_pid)
	before=$(server_calls)
	if [ -n "$spid" ]; then
		set -- "$@" --server-pid dolsot "$spid"
	else
		echo "[$sc] WARNING: no dolsot server is running before the scenario"
	fi
	$TIMEIT time --scenario "$sc" --rounds "$ROUNDS" --warmup "$WARMUP" \
		--raw "$OUT/raw.csv" "$@"
	after=$(server_calls)
	# shellcheck disable=SC2086 # split "warm cold" into two words
	set -- $before $after
	if [ $# -eq 4 ] && [ "$spid" = "$(server_pid)" ]; then
		echo "[$sc] dolsot server $spid: $(($3 - $1)) calls served warm, $(($4 - $2)) cold" \
			"($((ROUNDS + WARMUP)) timed dolsot units incl. warm-up; a unit of S5-pair is 2 calls)"
	else
		echo "[$sc] WARNING: dolsot server changed or vanished during the scenario" \
			"(before: pid ${spid:-none}, calls ${before:-?}; after: pid $(server_pid), calls ${after:-?})"
	fi
}

scenarios() {
	# S1: trivial cell on a session holding x = 1.
	make_session s1 'x = 1'
	set --
	if [ -n "$MONTY_BIN" ]; then
		clean "$MONTY_BIN" -c 'x = 1; x + 1' >/dev/null 2>"$WORK/monty.err" || true
		if grep -q '2$' "$WORK/monty.err"; then
			set -- --sys monty-cli "$MONTY_BIN -c 'x = 1; x + 1'"
		else
			echo "Monty CLI: unexpected output, left out: $(cat "$WORK/monty.err")"
		fi
	fi
	if [ -n "$MONTY_NODE" ]; then
		setup node "$MONTY_NODE" "$MS/s1.bin" 'x = 1'
		set -- "$@" --sys monty-node "node $MONTY_NODE $MS/s1.bin 'x + 1'" --expect monty-node 2
	fi
	time_scenario S1 \
		--sys dolsot "$DOLSOT --session s1 'x + 1'" --expect dolsot 2 \
		--sys dolsot-cold "$DCOLD --session s1 'x + 1'" --expect dolsot-cold 2 \
		--sys refdolsot "$REFD --session s1 'x + 1'" --expect refdolsot 2 \
		--sys py-nosite "$PY_S" --expect py-nosite '' \
		--sys py-dill "$PY_DILL" --expect py-dill '' \
		"$@"

	# S2: toolbox importing numpy and pandas.  Its .pyc is written once here
	# (dolsot never writes bytecode; every system then reads the same .pyc).
	clean "$PY" -c 'import py_compile, sys; py_compile.compile(sys.argv[1], doraise=True)' \
		"$ROOT/bench/tb_frame.py"
	make_session s2 'len(tb.frame(10))' tb_frame:tb
	tb="PYTHONPATH=$ROOT/bench"
	time_scenario S2 \
		--sys dolsot "$tb $DOLSOT --toolbox tb_frame:tb --session s2 'len(tb.frame(10))'" \
		--expect dolsot 10 \
		--sys dolsot-cold "$tb $DCOLD --toolbox tb_frame:tb --session s2 'len(tb.frame(10))'" \
		--expect dolsot-cold 10 \
		--sys refdolsot "$tb $REFD --toolbox tb_frame:tb --session s2 'len(tb.frame(10))'" \
		--expect refdolsot 10 \
		--sys py-nosite "$PY_S" --expect py-nosite '' \
		--sys py-dill "$PY_DILL" --expect py-dill '' \
		--sys py-import-tb "$tb $PY -c 'import tb_frame; print(len(tb_frame.frame(10)))'" \
		--expect py-import-tb 10

	# S3: a 50 MB bytes object and a 200k-int list in the session.
	make_session s3 'blob = __import__("os").urandom(50_000_000); nums = list(range(200_000))'
	# Floor: one interpreter that reads, unpickles, pickles, writes+fsyncs.
	setup "$PY" -c 'import os, pickle, sys; pickle.dump({"blob": os.urandom(50_000_000), "nums": list(range(200_000))}, open(sys.argv[1], "wb"), protocol=5)' \
		"$WORK/floor-s3.pkl"
	time_scenario S3 \
		--sys dolsot "$DOLSOT --session s3 'len(blob) + len(nums)'" --expect dolsot 50200000 \
		--sys dolsot-cold "$DCOLD --session s3 'len(blob) + len(nums)'" --expect dolsot-cold 50200000 \
		--sys refdolsot "$REFD --session s3 'len(blob) + len(nums)'" --expect refdolsot 50200000 \
		--sys py-nosite "$PY_S" --expect py-nosite '' \
		--sys py-dill "$PY_DILL" --expect py-dill '' \
		--sys py-pickle-rt "$PY -S $ROOT/bench/floor_roundtrip.py $WORK/floor-s3.pkl" \
		--expect py-pickle-rt 50200000

	# S5-call: call a function the session already holds.
	make_session s5c 'def f(a): return a + 1'
	time_scenario S5-call \
		--sys dolsot "$DOLSOT --session s5c 'f(1)'" --expect dolsot 2 \
		--sys dolsot-cold "$DCOLD --session s5c 'f(1)'" --expect dolsot-cold 2 \
		--sys refdolsot "$REFD --session s5c 'f(1)'" --expect refdolsot 2 \
		--sys py-nosite "$PY_S" --expect py-nosite '' \
		--sys py-dill "$PY_DILL" --expect py-dill ''

	# S5-pair: define f in one call, call it in the next; the pair is timed,
	# against two interpreter starts of each floor.
	make_session s5p 'def f(a): return a + 1'
	time_scenario S5-pair \
		--sys dolsot "$DOLSOT --session s5p 'def f(a): return a + 1' && $DOLSOT --session s5p 'f(1)'" \
		--expect dolsot 2 \
		--sys dolsot-cold "$DCOLD --session s5p 'def f(a): return a + 1' && $DCOLD --session s5p 'f(1)'" \
		--expect dolsot-cold 2 \
		--sys refdolsot "$REFD --session s5p 'def f(a): return a + 1' && $REFD --session s5p 'f(1)'" \
		--expect refdolsot 2 \
		--sys py-nosite-x2 "$PY_S && $PY_S" --expect py-nosite-x2 '' \
		--sys py-dill-x2 "$PY_DILL && $PY_DILL" --expect py-dill-x2 ''
}

# --- peak RSS -----------------------------------------------------------------
vmhwm_cell='print([l.split(":")[1].strip() for l in open("/proc/self/status") if l.startswith("VmHWM")][0])'
rss() {
	echo
	echo "## Peak RSS (not timed)"
	# The zygote that serves S1 and S3 (no toolbox, no PYTHONPATH).
	zyg=$(server_status | awk '/^zygote / { z = $2 } /^  toolboxes -$/ { print z; exit }')
	for sc in s1 s3; do
		case $sc in
		s1) cell='x + 1' ;;
		*) cell='len(blob) + len(nums)' ;;
		esac
		# 1. per process, under ptrace: VmHWM of each process just before it
		#    exits; for the warm path the zygote is seized so that the worker
		#    it forks is traced too.
		if [ -n "$zyg" ]; then
			$TIMEIT rss --out "$OUT/rss.json" --label "$sc dolsot" --attach "$zyg" -- \
				DOLSOT_CACHE_DIR="$DC" "$DBIN" --session "$sc" "$cell"
		else
			echo "$sc dolsot: WARNING: no ready zygote found; warm worker not measured"
		fi
		$TIMEIT rss --out "$OUT/rss.json" --label "$sc dolsot-cold" -- \
			DOLSOT_CACHE_DIR="$DCC" DOLSOT_SERVER=off "$DBIN" --session "$sc" "$cell"
		$TIMEIT rss --out "$OUT/rss.json" --label "$sc refdolsot" -- \
			DOLSOT_CACHE_DIR="$RC" DOLSOT_TYPECHECK=0 "$PY" "$REF" --session "$sc" "$cell"
		for sys in dolsot dolsot-cold refdolsot; do
			case $sys in
			dolsot) set -- env DOLSOT_CACHE_DIR="$DC" "$DBIN" ;;
			dolsot-cold) set -- env DOLSOT_CACHE_DIR="$DCC" DOLSOT_SERVER=off "$DBIN" ;;
			*) set -- env DOLSOT_CACHE_DIR="$RC" DOLSOT_TYPECHECK=0 "$PY" "$REF" ;;
			esac
			# 2. /usr/bin/time %M: ru_maxrss of the reaped tree, i.e. the
			#    largest single process among the command and its reaped
			#    descendants (for warm dolsot: the client only).
			clean /usr/bin/time -f %M -o "$WORK/maxrss" "$@" --session "$sc" "$cell" \
				>/dev/null 2>&1
			echo "$sc $sys: /usr/bin/time %M = $(cat "$WORK/maxrss") kB"
			# 3. the worker's own VmHWM read by the cell (before the session dump).
			echo "$sc $sys: worker VmHWM at end of cell (before dump) =" \
				"$(clean "$@" --session "$sc" "$vmhwm_cell; $cell" 2>/dev/null | head -1)"
		done
	done
	echo
	$TIMEIT rss-table --json "$OUT/rss.json" | tee "$OUT/rss.md"
	echo
	echo "dolsot warm server between calls (dolsot --server-status):"
	server_status | tee "$OUT/server-status.txt"
}

# --- where the time goes --------------------------------------------------------
profile() {
	echo
	echo "## Profiling (not timed): perf stat -r 20, strace -f -c"
	echo "(perf/strace follow the command's own process tree: for warm dolsot that is"
	echo " the client only; the worker runs under the server's zygote)"
	for sc in s1 s3; do
		case $sc in
		s1) cell='x + 1' ;;
		*) cell='len(blob) + len(nums)' ;;
		esac
		for sys in dolsot dolsot-cold refdolsot; do
			case $sys in
			dolsot) set -- DOLSOT_CACHE_DIR="$DC" "$DBIN" ;;
			dolsot-cold) set -- DOLSOT_CACHE_DIR="$DCC" DOLSOT_SERVER=off "$DBIN" ;;
			*) set -- DOLSOT_CACHE_DIR="$RC" DOLSOT_TYPECHECK=0 "$PY" "$REF" ;;
			esac
			clean perf stat -r 20 -e task-clock,page-faults,context-switches,cpu-migrations \
				-o "$OUT/perf-$sc-$sys.txt" env "$@" --session "$sc" "$cell" >/dev/null 2>&1 || true
			[ "$sys" = refdolsot ] && continue
			clean strace -f -c -o "$OUT/strace-c-$sc-$sys.txt" \
				env "$@" --session "$sc" "$cell" >/dev/null 2>&1 || true
			clean strace -f -tt -T -o "$OUT/strace-T-$sc-$sys.txt" \
				env "$@" --session "$sc" "$cell" >/dev/null 2>&1 || true
		done
		for sys in dolsot dolsot-cold refdolsot; do
			f=$OUT/perf-$sc-$sys.txt
			[ -f "$f" ] && { echo "--- $(basename "$f")"; grep -E 'task-clock|page-faults|elapsed' "$f"; }
		done
		for sys in dolsot dolsot-cold; do
			echo "--- strace -f -c $sc $sys: top syscalls by time"
			sed -n '1,8p' "$OUT/strace-c-$sc-$sys.txt" 2>/dev/null || true
		done
	done
	clean perf stat -r 20 -e task-clock,page-faults -o "$OUT/perf-py-nosite.txt" "$PY" -S -c pass || true
	clean perf stat -r 20 -e task-clock,page-faults -o "$OUT/perf-py-dill.txt" "$PY" -c 'import dill' || true
	for f in "$OUT/perf-py-nosite.txt" "$OUT/perf-py-dill.txt"; do
		echo "--- $(basename "$f")"
		grep -E 'task-clock|page-faults|elapsed' "$f" || true
	done
}

main() {
	header
	get_monty
	scenarios
	echo
	echo "## Summary (wall time; ratios are dolsot's time divided by the system's)"
	echo "(dolsot = default warm server path; dolsot-cold = DOLSOT_SERVER=off. CPU for"
	echo " dolsot = client median + the server tree's mean CPU per call)"
	$TIMEIT summary --raw "$OUT/raw.csv" --base dolsot \
		--target "S1 dolsot 2 py-nosite" \
		--target "S1 dolsot 0.25 refdolsot" \
		--target "S3 dolsot 0.4 refdolsot" \
		--target "S5-call dolsot 1.1 py-dill" \
		--target "S5-pair dolsot 1.1 py-dill-x2" \
		--target "S1 dolsot-cold 2 py-nosite" \
		--target "S1 dolsot-cold 0.25 refdolsot" \
		--target "S3 dolsot-cold 0.4 refdolsot" \
		--target "S5-call dolsot-cold 1.1 py-dill" \
		--target "S5-pair dolsot-cold 1.1 py-dill-x2" | tee "$OUT/summary.md"
	rss
	if [ "${BENCH_PROFILE:-1}" != 0 ]; then
		profile
	fi
	echo
	echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "raw output: $OUT"
	: >"$WORK/ok"
}

main 2>&1 | tee "$OUT/run.log"
[ -f "$WORK/ok" ] || { echo "bench/run.sh: failed; see $OUT/run.log" >&2; exit 1; }
