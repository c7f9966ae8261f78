# shellcheck shell=sh
# bench/pair.sh - sourced by bench/trust.sh and bench/sandbox.sh: the set-up
# and the interleaved timing loop they share.  Not run on its own.
#
# pair_init NAME DEFAULT_ROUNDS: cd to the repository root and set PY,
# TIMEIT, ROUNDS and WARMUP (from BENCH_ROUNDS and BENCH_WARMUP, checked),
# STAMP, and OUT (bench/out/NAME-STAMP/, made) for the caller.
pair_init() {
	cd "$(dirname "$0")/.." || exit 1
	PY=/usr/bin/python3.11
	TIMEIT="$PY $(pwd)/bench/timeit.py"
	ROUNDS=${BENCH_ROUNDS:-$2}
	WARMUP=${BENCH_WARMUP:-3}
	case $ROUNDS in '' | *[!0-9]* | 0) echo "BENCH_ROUNDS must be a positive integer" >&2; exit 2 ;; esac
	case $WARMUP in '' | *[!0-9]*) echo "BENCH_WARMUP must be an integer >= 0" >&2; exit 2 ;; esac
	STAMP=$(date -u +%Y%m%dT%H%M%SZ)
	OUT=$(pwd)/bench/out/$1-$STAMP
	mkdir -p "$OUT"
}

# pair_time SCENARIO RAW ARGS...: time the systems of ARGS (timeit.py's
# --sys, --expect, --pre, --server-pid ...) interleaved round by round,
# ROUNDS recorded after WARMUP, rows into RAW; the table goes to the run log.
pair_time() {
	sc=$1 raw=$2
	shift 2
	$TIMEIT time --scenario "$sc" --rounds "$ROUNDS" --warmup "$WARMUP" --raw "$raw" "$@" \
		| tee -a "$OUT/run.log"
}
