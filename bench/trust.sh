#!/bin/sh
# bench/trust.sh - what issue 20's trust boundary costs a call: a baseline
# binary against this tree's, side by side, interleaved round by round.
#
# Usage (from the repository root):  BENCH_BASE=/path/to/old/dolsot sh bench/trust.sh
# Environment:
#   BENCH_BASE     the baseline binary (required), e.g. a build of main
#   BENCH_ROUNDS   recorded rounds per scenario (default 30)
#   BENCH_WARMUP   unrecorded warm-up rounds per scenario (default 3)
# Output: bench/out/trust-<UTC timestamp>/ (run.log, raw-*.csv).
#
# Scenarios, each system on its own store with its warm server up:
#   plain   a warm unsandboxed call, `x + 1` on a session holding x = 1
#           (adds the origin check: one fstatat)
#   sbx     the same call with --sandbox (the session is copied into a
#           memfd, and saved through a bounded memfd)
#   sbx16m  --sandbox on a session holding 16 MiB of bytes (the copies'
#           cost grows with the session)
#   zygote  --server-start --sandbox on a stopped server: the server and a
#           zygote up (a zygote is now a fresh exec)
set -eu

# shellcheck source=bench/pair.sh
. "$(dirname "$0")/pair.sh"
pair_init trust 30

[ -n "${BENCH_BASE:-}" ] && [ -x "$BENCH_BASE" ] || {
	echo "set BENCH_BASE to the baseline dolsot binary" >&2
	exit 2
}
[ -x ./dolsot ] || make dolsot
WORK=$(mktemp -d "${TMPDIR:-/tmp}/dolsot-bench-trust.XXXXXX")
cp "$BENCH_BASE" "$WORK/base"
cp ./dolsot "$WORK/trust"
sha256sum "$WORK/base" "$WORK/trust" | tee "$OUT/run.log"

cleanup() {
	for b in base trust; do
		for s in plain sbx sbx16m zygote; do
			[ -d "$WORK/$b-$s" ] && DOLSOT_CACHE_DIR=$WORK/$b-$s "$WORK/$b" --server-stop \
				>/dev/null 2>&1 || true
		done
	done
	rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

# store BIN NAME ARGS...: a store with its server up and session s made.
store() {
	b=$1 name=$2
	shift 2
	DOLSOT_CACHE_DIR=$WORK/$b-$name "$WORK/$b" --server-start "$@"
	DOLSOT_CACHE_DIR=$WORK/$b-$name "$WORK/$b" --session s "$@" \
		"x = 1; big = b'b' * (16 << 20) if '$name' == 'sbx16m' else b''" >/dev/null 2>&1
}

cmd() {
	b=$1 name=$2
	shift 2
	echo "DOLSOT_CACHE_DIR=$WORK/$b-$name $WORK/$b --session s $* 'x + 1'"
}

cd "$WORK"
for b in base trust; do
	store "$b" plain
	store "$b" sbx --sandbox
	store "$b" sbx16m --sandbox
done
for sc in plain sbx sbx16m; do
	flag=
	[ "$sc" != plain ] && flag=--sandbox
	pair_time "$sc" "$OUT/raw-$sc.csv" \
		--sys base "$(cmd base "$sc" $flag)" --sys trust "$(cmd trust "$sc" $flag)" \
		--expect base 2 --expect trust 2
done
pair_time zygote "$OUT/raw-zygote.csv" \
	--pre base "DOLSOT_CACHE_DIR=$WORK/base-zygote $WORK/base --server-stop" \
	--pre trust "DOLSOT_CACHE_DIR=$WORK/trust-zygote $WORK/trust --server-stop" \
	--sys base "DOLSOT_CACHE_DIR=$WORK/base-zygote $WORK/base --server-start --sandbox" \
	--sys trust "DOLSOT_CACHE_DIR=$WORK/trust-zygote $WORK/trust --server-start --sandbox"
for sc in plain sbx sbx16m zygote; do
	echo "## $sc" | tee -a "$OUT/run.log"
	$TIMEIT summary --raw "$OUT/raw-$sc.csv" --base base | tee -a "$OUT/run.log"
done
uptime | tee -a "$OUT/run.log"
