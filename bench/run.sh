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
#   BENCH_ONLY     comma-separated parts to run (default: all), of
#                  S1 S2 S3 S5 S4 first rss profile s3trace mem
#                  e.g. BENCH_ONLY=S4,first  or  BENCH_ONLY=S1,mem
#   BENCH_TRACE_RUNS  traced S3 calls in the s3trace part (default 3)
# Output: bench/out/<UTC timestamp>/ (run.log, raw.csv, summary.md, rss.json,
# profiling files).  See bench/README.md.
set -eu

cd "$(dirname "$0")/.."
ROOT=$(pwd)
PY=/usr/bin/python3.11
ROUNDS=${BENCH_ROUNDS:-30}
WARMUP=${BENCH_WARMUP:-2}
PEERS=${BENCH_PEERS:-/work/shared/peers}
ONLY=${BENCH_ONLY:-}
TRACE_RUNS=${BENCH_TRACE_RUNS:-3}
REF=$PEERS/refdolsot/dolsot
CLEAN_PATH=/usr/local/bin:/usr/bin:/bin
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT=$ROOT/bench/out/$STAMP
TIMEIT="$PY $ROOT/bench/timeit.py"

case $ROUNDS in '' | *[!0-9]* | 0) echo "BENCH_ROUNDS must be a positive integer" >&2; exit 2 ;; esac
case $WARMUP in '' | *[!0-9]*) echo "BENCH_WARMUP must be an integer >= 0" >&2; exit 2 ;; esac
case $TRACE_RUNS in '' | *[!0-9]* | 0) echo "BENCH_TRACE_RUNS must be a positive integer" >&2; exit 2 ;; esac
PARTS="S1 S2 S3 S5 S4 first rss profile s3trace mem"
for p in $(echo "$ONLY" | tr ',' ' '); do
	case " $PARTS " in *" $p "*) ;; *) echo "BENCH_ONLY: unknown part '$p' (parts: $PARTS)" >&2; exit 2 ;; esac
done
# want PART: is PART selected (BENCH_ONLY unset selects everything)?
want() {
	[ -z "$ONLY" ] && return 0
	case ",$ONLY," in *",$1,"*) return 0 ;; esac
	return 1
}
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
# S1 variants: a warm store on tmpfs (fsync is free there) and a warm
# DOLSOT_STORE=memory store (sessions only in the server), each with its own
# server.  "first": a fresh store per round under $DF.  "mem": a fresh store
# whose server is started only to be measured at rest.
SHM=$(mktemp -d /dev/shm/dolsot-bench.XXXXXX)
DS=$SHM/cache-dolsot-shm
DM=$WORK/cache-dolsot-mem
DF=$WORK/first
DR=$WORK/cache-at-rest
mkdir -m 700 "$DC" "$DCC" "$RC" "$MS" "$WORK/bin" "$DS" "$DM" "$DF" "$DR"

# Other people rebuild ./dolsot in this tree: time a snapshot of it, so one
# run measures one binary (it needs nothing beside itself; cwd stays the root).
cp ./dolsot "$WORK/bin/dolsot"
DBIN=$WORK/bin/dolsot

# The environment every measured command gets (timeit.py builds the same one):
# no PYTHON* variables from the caller, no pyenv on PATH.
clean() {
	env -i PATH="$CLEAN_PATH" HOME="$HOME" LANG=C.UTF-8 ${TMPDIR:+TMPDIR="$TMPDIR"} "$@"
}
# The same environment as words for `env -i $CENV ...` behind a wrapper that
# changes the environment (perf adds PATH entries and PERF_* variables):
# dolsot keys its zygotes on the environment, so a call under perf would
# otherwise get a zygote of its own and its first call would run cold.
CENV="PATH=$CLEAN_PATH HOME=$HOME LANG=C.UTF-8${TMPDIR:+ TMPDIR=$TMPDIR}"

# dolsot's warm server (started by the first call on a store) outlives the
# call: stop ours before removing its store.
cleanup() {
	for d in "$DC" "$DS" "$DM" "$DR"; do
		clean DOLSOT_CACHE_DIR="$d" "$DBIN" --server-stop >/dev/null 2>&1 || true
	done
	rm -rf "$WORK" "$SHM"
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
	: >"$WORK/made-$sid"
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
# server_status [STORE]: --server-status of STORE's server (default: $DC).
# ensure_session SESSION CELL: make_session unless this run made it already
# (the rss/profile/s3trace parts need s1 and s3 when S1/S3 were not run).
ensure_session() { [ -f "$WORK/made-$1" ] || make_session "$@"; }
server_status() { clean DOLSOT_CACHE_DIR="${1:-$DC}" "$DBIN" --server-status 2>&1 || true; }
server_pid() { server_status "${1:-}" | sed -n 's/^pid \([0-9]*\)$/\1/p'; }
server_calls() { server_status "${1:-}" | sed -n 's/^calls \([0-9]*\) warm, \([0-9]*\) cold$/\1 \2/p'; }

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
	echo "store:    $WORK ($(df -T "$WORK" | awk 'NR==2 {print $2}')); S1 dolsot-shm: $SHM ($(df -T "$SHM" | awk 'NR==2 {print $2}'))"
	echo "parts:    ${ONLY:-all} (of $PARTS)"
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
	# time_scenario NAME [--sys NAME CMD | --expect NAME TEXT | ...]...
	# Warm servers: SCEN_SERVERS (default "dolsot=$DC") lists SYSTEM=STORE
	# pairs; each store's server CPU is added to SYSTEM, and its warm/cold
	# call counters are checked: every timed call should have been served
	# warm.  SCEN_CALLS (default 1) is the number of dolsot calls per timed
	# unit of SYSTEM.
	sc=$1
	shift
	echo
	servers=${SCEN_SERVERS-dolsot=$DC}
	calls_per_unit=${SCEN_CALLS:-1}
	for pair in $servers; do
		sy=${pair%%=*} st=${pair#*=}
		spid=$(server_pid "$st")
		if [ -n "$spid" ]; then
			set -- "$@" --server-pid "$sy" "$spid"
		else
			echo "[$sc] WARNING: no dolsot server is running for $sy before the scenario"
		fi
		echo "$spid $(server_calls "$st")" >"$WORK/calls-before-$sy"
	done
	$TIMEIT time --scenario "$sc" --rounds "$ROUNDS" --warmup "$WARMUP" \
		--raw "$OUT/raw.csv" "$@"
	for pair in $servers; do
		sy=${pair%%=*} st=${pair#*=}
		before=$(cat "$WORK/calls-before-$sy")
		after="$(server_pid "$st") $(server_calls "$st")"
		# shellcheck disable=SC2086 # split "pid warm cold" into words
		set -- $before $after
		if [ $# -eq 6 ] && [ "$1" = "$4" ]; then
			echo "[$sc] $sy server $1: $(($5 - $2)) calls served warm, $(($6 - $3)) cold" \
				"(expected $(((ROUNDS + WARMUP) * calls_per_unit)) warm: $((ROUNDS + WARMUP)) timed units" \
				"incl. warm-up x $calls_per_unit calls)"
		else
			echo "[$sc] WARNING: $sy server changed or vanished during the scenario" \
				"(before: pid, calls = ${before:-?}; after: ${after:-?})"
		fi
	done
}

scen_S1() {
	# S1: trivial cell on a session holding x = 1.  Besides the default warm
	# store (ext4 here) and the cold path: warm with the store on tmpfs
	# (dolsot-shm), warm with DOLSOT_STORE=memory (dolsot-mem, no file at
	# all), and the floors of any CLI call: `dolsot --version` (exec of the
	# binary, no store) and /bin/true (the harness's spawn + reap).
	make_session s1 'x = 1'
	setup DOLSOT_CACHE_DIR="$DS" "$DBIN" --session s1 'x = 1'
	setup DOLSOT_CACHE_DIR="$DS" "$DBIN" --server-start
	setup DOLSOT_CACHE_DIR="$DM" DOLSOT_STORE=memory "$DBIN" --session s1 'x = 1'
	setup DOLSOT_CACHE_DIR="$DM" DOLSOT_STORE=memory "$DBIN" --server-start
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
	SCEN_SERVERS="dolsot=$DC dolsot-shm=$DS dolsot-mem=$DM"
	time_scenario S1 \
		--sys dolsot "$DOLSOT --session s1 'x + 1'" --expect dolsot 2 \
		--sys dolsot-shm "DOLSOT_CACHE_DIR=$DS $DBIN --session s1 'x + 1'" --expect dolsot-shm 2 \
		--sys dolsot-mem "DOLSOT_CACHE_DIR=$DM DOLSOT_STORE=memory $DBIN --session s1 'x + 1'" \
		--expect dolsot-mem 2 \
		--sys dolsot-cold "$DCOLD --session s1 'x + 1'" --expect dolsot-cold 2 \
		--sys refdolsot "$REFD --session s1 'x + 1'" --expect refdolsot 2 \
		--sys py-nosite "$PY_S" --expect py-nosite '' \
		--sys py-dill "$PY_DILL" --expect py-dill '' \
		--sys dolsot-version "$DBIN --version" \
		--sys true /bin/true --expect true '' \
		"$@"
	SCEN_SERVERS="dolsot=$DC"
}

scen_S2() {
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
}

S3_CELL='blob = __import__("os").urandom(50_000_000); nums = list(range(200_000))'
scen_S3() {
	# S3: a 50 MB bytes object and a 200k-int list in the session.
	make_session s3 "$S3_CELL"
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
}

scen_S5() {
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
	SCEN_CALLS=2
	time_scenario S5-pair \
		--sys dolsot "$DOLSOT --session s5p 'def f(a): return a + 1' && $DOLSOT --session s5p 'f(1)'" \
		--expect dolsot 2 \
		--sys dolsot-cold "$DCOLD --session s5p 'def f(a): return a + 1' && $DCOLD --session s5p 'f(1)'" \
		--expect dolsot-cold 2 \
		--sys refdolsot "$REFD --session s5p 'def f(a): return a + 1' && $REFD --session s5p 'f(1)'" \
		--expect refdolsot 2 \
		--sys py-nosite-x2 "$PY_S && $PY_S" --expect py-nosite-x2 '' \
		--sys py-dill-x2 "$PY_DILL && $PY_DILL" --expect py-dill-x2 ''
	SCEN_CALLS=1
}

scen_S4() {
	# S4: 8 sessions x 4 cells, 8 callers at once: caller i runs `n = 0`,
	# `n += 1`, `n += 1`, `n += 1; n` on session s4-i, one after the other;
	# every caller must print 3.  One timed unit = 32 calls, from the first
	# spawn to the last caller's exit.
	i=0
	while [ $i -lt 8 ]; do
		make_session "s4-$i" 'n = 0'
		i=$((i + 1))
	done
	s4() { # s4 CMD: the 4 cells of caller {i} as one unit
		echo "$1 --session s4-{i} 'n = 0' && $1 --session s4-{i} 'n += 1' &&" \
			"$1 --session s4-{i} 'n += 1' && $1 --session s4-{i} 'n += 1; n'"
	}
	SCEN_CALLS=32
	time_scenario S4 \
		--sys dolsot "$(s4 "$DOLSOT")" --fanout dolsot 8 --expect dolsot 3 \
		--sys dolsot-cold "$(s4 "$DCOLD")" --fanout dolsot-cold 8 --expect dolsot-cold 3 \
		--sys refdolsot "$(s4 "$REFD")" --fanout refdolsot 8 --expect refdolsot 3
	SCEN_CALLS=1
}

scen_first() {
	# first: the first call on a store that has no server yet.  Each round
	# gets a fresh store under $DF holding session f (x = 1, made with
	# DOLSOT_SERVER=off, untimed).  dolsot-first (the default, auto) runs
	# cold and starts the server in the background; the timed region ends
	# when the client exits.  Untimed afterwards (bench/first_post.sh): wait
	# until --server-status finds the server the call started (none within
	# 10 s fails the run), --server-start (waits for its zygote, so it cannot
	# compete with the next system), --server-stop; then a check that no
	# process still holds a file or its cwd in that store.  dolsot-first-off is the same call with
	# DOLSOT_SERVER=off.  The stores are removed after the scenario.
	a="DOLSOT_CACHE_DIR=$DF/auto-{r}"
	o="DOLSOT_CACHE_DIR=$DF/off-{r}"
	SCEN_SERVERS=
	time_scenario first \
		--sys dolsot-first "$a $DBIN --session f 'x + 1'" --expect dolsot-first 2 \
		--pre dolsot-first "$a DOLSOT_SERVER=off $DBIN --session f 'x = 1'" \
		--post dolsot-first "/bin/sh $ROOT/bench/first_post.sh $DBIN $DF/auto-{r}" \
		--free dolsot-first "$DF/auto-{r}" \
		--sys dolsot-first-off "$o DOLSOT_SERVER=off $DBIN --session f 'x + 1'" \
		--expect dolsot-first-off 2 \
		--pre dolsot-first-off "$o DOLSOT_SERVER=off $DBIN --session f 'x = 1'" \
		--free dolsot-first-off "$DF/off-{r}"
	SCEN_SERVERS="dolsot=$DC"
	rm -rf "${DF:?}"/*
}

scenarios() {
	for part in S1 S2 S3 S5 S4 first; do
		if want $part; then
			"scen_$part"
		fi
	done
}

# --- peak RSS -----------------------------------------------------------------
vmhwm_cell='print([l.split(":")[1].strip() for l in open("/proc/self/status") if l.startswith("VmHWM")][0])'
rss() {
	echo
	echo "## Peak RSS (not timed)"
	ensure_session s1 'x = 1'
	ensure_session s3 "$S3_CELL"
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
	ensure_session s1 'x = 1'
	ensure_session s3 "$S3_CELL"
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
			# shellcheck disable=SC2086 # $CENV is several NAME=VALUE words
			clean perf stat -r 20 -e task-clock,page-faults,context-switches,cpu-migrations \
				-o "$OUT/perf-$sc-$sys.txt" env -i $CENV "$@" --session "$sc" "$cell" >/dev/null 2>&1 || true
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

# --- S3 warm: where the time goes ---------------------------------------------
s3trace() {
	echo
	echo "## S3 warm: where the time goes (strace -T of client and zygote+worker; perf)"
	ensure_session s3 "$S3_CELL"
	if ! command -v strace >/dev/null 2>&1; then
		echo "strace not found: skipped"
		return 0
	fi
	# The cell writes a marker to stderr between the restore (unpickle) and
	# the dump (pickle); it defines no name, so the session is unchanged.
	mcell='__import__("sys").stderr.write("@cell\n"); len(blob) + len(nums)'
	setup DOLSOT_CACHE_DIR="$DC" "$DBIN" --server-start
	zyg=$(server_status | awk '/^zygote / { z = $2 } /^  toolboxes -$/ { print z; exit }')
	if [ -z "$zyg" ]; then
		echo "no ready zygote for the default environment: skipped"
		return 0
	fi
	n=1
	set --
	while [ "$n" -le "$TRACE_RUNS" ]; do
		z=$OUT/s3trace-$n-zygote.strace c=$OUT/s3trace-$n-client.strace
		# The zygote's spare (forked before we attach) runs the call.
		spare=$(spare_of "$zyg")
		# shellcheck disable=SC2046 # one -p PID pair per spare
		strace -f -tt -T -o "$z" -p "$zyg" $(for s in $spare; do echo "-p $s"; done) \
			2>"$WORK/strace-attach.err" &
		spid=$!
		# wait until strace has seized the zygote and its spare
		i=0
		for p in "$zyg" $spare; do
			while [ "$(awk '/^TracerPid/ {print $2}' "/proc/$p/status")" = 0 ] &&
				[ $i -lt 100 ]; do
				sleep 0.05
				i=$((i + 1))
			done
		done
		t0=$(date +%s%N)
		clean DOLSOT_CACHE_DIR="$DC" strace -f -tt -T -o "$c" "$DBIN" --session s3 "$mcell" \
			>"$WORK/s3trace.out" 2>&1 || true
		t1=$(date +%s%N)
		sleep 0.2
		kill -INT "$spid" 2>/dev/null || true
		wait "$spid" 2>/dev/null || true
		echo "traced call $n: $(((t1 - t0) / 1000000)) ms under strace, output: $(tr '\n' ' ' <"$WORK/s3trace.out")"
		set -- "$@" "$c" "$z"
		n=$((n + 1))
	done
	$PY "$ROOT/bench/s3phases.py" "$@" | tee "$OUT/s3trace.md"
	# perf: CPU of the client and of the worker by what they do (sampled;
	# kernel call chains; Python frames are not resolved).  perf changes
	# the environment (PATH, PERF_*), which would select another zygote:
	# the client gets the clean one back through env -i.
	if command -v perf >/dev/null 2>&1; then
		spare=$(spare_of "$zyg")
		perf record -q -e cpu-clock -F 4000 -g -p "$zyg${spare:+,$spare}" \
			-o "$OUT/s3-worker.perf" \
			>/dev/null 2>&1 &
		ppid=$!
		sleep 0.5
		# shellcheck disable=SC2086 # $cenv is several NAME=VALUE words
		clean perf record -q -e cpu-clock -F 4000 -g -o "$OUT/s3-client.perf" \
			env -i $CENV DOLSOT_CACHE_DIR="$DC" "$DBIN" --session s3 'len(blob) + len(nums)' \
			>/dev/null 2>&1 || true
		sleep 0.2
		kill -INT "$ppid" 2>/dev/null || true
		wait "$ppid" 2>/dev/null || true
		$PY "$ROOT/bench/s3phases.py" --perf client "$OUT/s3-client.perf" \
			--perf worker "$OUT/s3-worker.perf" | tee -a "$OUT/s3trace.md"
	fi
}

# The pids of a zygote's spares (the worker it forked ahead of the next call).
spare_of() {
	for k in $(cat "/proc/$1/task/$1/children" 2>/dev/null); do
		[ "$(cat "/proc/$k/comm" 2>/dev/null)" = dolsot-spare ] && echo "$k"
	done
	return 0
}

# --- memory at rest -----------------------------------------------------------
mem() {
	echo
	echo "## Memory at rest (/proc/PID/smaps_rollup; kB)"
	# A fresh store: the server with the default zygote and the
	# numpy+pandas (tb_frame) zygote, started and left idle; no call run.
	setup DOLSOT_CACHE_DIR="$DR" "$DBIN" --server-start
	setup PYTHONPATH="$ROOT/bench" DOLSOT_CACHE_DIR="$DR" "$DBIN" --server-start --toolbox tb_frame:tb
	sleep 2
	server_status "$DR" >"$OUT/server-status-at-rest.txt"
	$TIMEIT smaps --status "$OUT/server-status-at-rest.txt" \
		--label "fresh, idle 2 s:" | tee "$OUT/mem-at-rest.md"
	# The benchmark's own server, after all the calls above (if it runs).
	if [ -n "$(server_pid)" ]; then
		server_status >"$OUT/server-status-after.txt"
		echo
		$TIMEIT smaps --status "$OUT/server-status-after.txt" \
			--label "after the scenarios:" | tee -a "$OUT/mem-at-rest.md"
	fi
	clean DOLSOT_CACHE_DIR="$DR" "$DBIN" --server-stop >/dev/null 2>&1 || true
}

main() {
	header
	if want S1; then get_monty; fi
	scenarios
	echo
	echo "## Summary (wall time; ratios are dolsot's time divided by the system's)"
	echo "(dolsot = default warm server path; dolsot-cold = DOLSOT_SERVER=off. CPU for"
	echo " dolsot = client median + the server tree's mean CPU per call)"
	if [ -f "$OUT/raw.csv" ]; then
		$TIMEIT summary --raw "$OUT/raw.csv" --base dolsot --throughput S4 32 \
			--target "S1 dolsot 2 py-nosite" \
			--target "S1 dolsot 0.25 refdolsot" \
			--target "S1 dolsot 2.5 ms" \
			--target "S1 dolsot-shm 2.5 ms" \
			--target "S1 dolsot-mem 2.5 ms" \
			--target "S1 dolsot 0.2 dolsot-cold" \
			--target "S1 dolsot-shm 0.2 dolsot-cold" \
			--target "S1 dolsot-mem 0.2 dolsot-cold" \
			--target "S1 dolsot 1 monty-cli" \
			--target "S3 dolsot 0.4 refdolsot" \
			--target "S3 dolsot 1 dolsot-cold" \
			--target "S5-call dolsot 1.1 py-dill" \
			--target "S5-pair dolsot 1.1 py-dill-x2" \
			--target "S4 dolsot 0.2 dolsot-cold" \
			--target "first dolsot-first 1.05 dolsot-first-off" \
			--target "S1 dolsot-cold 2 py-nosite" \
			--target "S1 dolsot-cold 0.25 refdolsot" \
			--target "S3 dolsot-cold 0.4 refdolsot" \
			--target "S5-call dolsot-cold 1.1 py-dill" \
			--target "S5-pair dolsot-cold 1.1 py-dill-x2" | tee "$OUT/summary.md"
		echo "(S4: dolsot ≤ 0.2 × dolsot-cold in time per unit = ≥ 5 × the cells per second)"
	fi
	if want rss; then rss; fi
	if want profile && [ "${BENCH_PROFILE:-1}" != 0 ]; then
		profile
	fi
	if want s3trace && [ "${BENCH_PROFILE:-1}" != 0 ]; then
		s3trace
	fi
	if want mem; then mem; fi
	echo
	echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "raw output: $OUT"
	: >"$WORK/ok"
}

main 2>&1 | tee "$OUT/run.log"
[ -f "$WORK/ok" ] || { echo "bench/run.sh: failed; see $OUT/run.log" >&2; exit 1; }
