#!/bin/sh
# bench/ab.sh - two builds of dolsot side by side, for a change that must
# not change speed: S1 (a trivial cell on a small session) and S3 (a 50 MB
# session), each warm (the server up) and cold (DOLSOT_SERVER=off).
#
# Usage (from the repository root):  sh bench/ab.sh OLD_BINARY [NEW_BINARY]
#   NEW_BINARY defaults to ./dolsot; BENCH_ROUNDS (default 30) recorded
#   rounds, BENCH_WARMUP (default 2) unrecorded ones, per scenario.
# Both binaries are copied first; the eight systems are interleaved round
# by round (bench/timeit.py), each with a store (and warm server) of its
# own.  Prints timeit.py's summary, based on "new", and leaves raw.csv in
# bench/out/ab-<UTC timestamp>/.
set -eu
cd "$(dirname "$0")/.."
PY=/usr/bin/python3.11
OLD=${1:?usage: sh bench/ab.sh OLD_BINARY [NEW_BINARY]}
NEW=${2:-./dolsot}
ROUNDS=${BENCH_ROUNDS:-30}
WARMUP=${BENCH_WARMUP:-2}
OUT=bench/out/ab-$(date -u +%Y%m%dT%H%M%SZ)
W=$(mktemp -d "${TMPDIR:-/tmp}/dolsot-ab.XXXXXX")
S3_CELL='blob = __import__("os").urandom(50_000_000); nums = list(range(200_000))'

mkdir -p "$OUT"
cp "$OLD" "$W/old"
cp "$NEW" "$W/new"
for b in old new; do
	mkdir -m 700 "$W/$b-warm" "$W/$b-cold"
done
cleanup() {
	for b in old new; do
		DOLSOT_CACHE_DIR="$W/$b-warm" "$W/$b" --server-stop >/dev/null 2>&1 || true
	done
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

run() { env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$HOME" LANG=C.UTF-8 "$@" >/dev/null 2>&1; }
for b in old new; do
	for s in "s1:x = 1" "s3:$S3_CELL"; do
		run DOLSOT_CACHE_DIR="$W/$b-warm" "$W/$b" --session "${s%%:*}" "${s#*:}"
		run DOLSOT_CACHE_DIR="$W/$b-cold" DOLSOT_SERVER=off "$W/$b" --session "${s%%:*}" "${s#*:}"
	done
	run DOLSOT_CACHE_DIR="$W/$b-warm" "$W/$b" --server-start
done

{
	echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) cores; load: $(uptime | sed 's/.*load average: //')"
	echo "old: $OLD ($(sha256sum "$W/old" | cut -c1-16)); new: $NEW ($(sha256sum "$W/new" | cut -c1-16))"
} | tee "$OUT/run.log"
for sc in S1 S3; do
	if [ $sc = S1 ]; then sid=s1 cell='x + 1' want=2; else sid=s3 cell='len(blob) + len(nums)' want=50200000; fi
	set --
	for b in new old; do
		set -- "$@" --sys "$b" "DOLSOT_CACHE_DIR=$W/$b-warm $W/$b --session $sid '$cell'" \
			--expect "$b" "$want" \
			--sys "$b-cold" "DOLSOT_CACHE_DIR=$W/$b-cold DOLSOT_SERVER=off $W/$b --session $sid '$cell'" \
			--expect "$b-cold" "$want"
	done
	$PY bench/timeit.py time --scenario "$sc" --rounds "$ROUNDS" --warmup "$WARMUP" \
		--raw "$OUT/raw.csv" "$@"
done
$PY bench/timeit.py summary --raw "$OUT/raw.csv" --base new | tee -a "$OUT/run.log"
