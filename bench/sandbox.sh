#!/bin/sh
# bench/sandbox.sh - what --sandbox and the limits add to one call.
#
# Usage (from the repository root):  sh bench/sandbox.sh
# Environment:
#   BENCH_ROUNDS   recorded rounds per scenario (default 40)
#   BENCH_WARMUP   unrecorded warm-up rounds per scenario (default 3)
#   BENCH_USER     also measure as this unprivileged user (default dolsot-test
#                  when it exists and we are root; "" to skip)
#   BENCH_BASE     another dolsot binary (an older build): its --sandbox calls
#                  are timed too, as "sandbox-base", interleaved with the
#                  others, so the change's own cost is sandbox - sandbox-base
# Output: bench/out/sandbox-<UTC timestamp>/ (run.log, raw-*.csv).
#
# Each scenario times the same trivial call (`x + 1` on a session holding
# x = 1) with and without --sandbox, interleaved round by round, each system
# on its own store.  "cold" is DOLSOT_SERVER=off (the worker forked by the
# command, Python started in it); "warm" has the store's server up, with the
# zygote for the call's environment ready.  The added cost is reported as
# the difference of the medians and as the median of the per-round
# differences.
set -eu

# shellcheck source=bench/pair.sh
. "$(dirname "$0")/pair.sh"
pair_init sandbox 40
if [ -z "${BENCH_USER+set}" ]; then
	BENCH_USER=
	if [ "$(id -u)" -eq 0 ] && id dolsot-test >/dev/null 2>&1; then
		BENCH_USER=dolsot-test
	fi
fi
[ -x ./dolsot ] || make dolsot

WORK=$(mktemp -d "${TMPDIR:-/tmp}/dolsot-bench-sbx.XXXXXX")
chmod 755 "$WORK"
# One binary for the whole run, readable by the other user too.
cp ./dolsot "$WORK/dolsot"
DBIN=$WORK/dolsot
BIN=$DBIN
DBASE=
if [ -n "${BENCH_BASE:-}" ]; then
	cp "$BENCH_BASE" "$WORK/dolsot-base"
	DBASE=$WORK/dolsot-base
fi

# as USER CMD...: run CMD as USER ("" is ourselves).
as() {
	u=$1
	shift
	if [ -n "$u" ]; then
		setpriv --reuid="$u" --regid="$u" --clear-groups "$@"
	else
		"$@"
	fi
}

cleanup() {
	for d in "$WORK"/*/; do
		[ -d "$d/store" ] || continue
		owner=$(stat -c %U "$d")
		[ "$owner" = "$(id -un)" ] && owner=
		b=$DBIN
		case $d in *-base/) b=$DBASE ;; esac
		as "$owner" env DOLSOT_CACHE_DIR="$d/store" "$b" --server-stop >/dev/null 2>&1 || true
	done
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

{
	echo "# dolsot --sandbox benchmark $STAMP"
	echo "date:     $(date -u)"
	echo "machine:  nproc=$(nproc); $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //');" \
		"kernel $(uname -r); $(grep MemTotal /proc/meminfo | tr -s ' ')"
	echo "commit:   $(git rev-parse --short HEAD 2>/dev/null || echo '?')" \
		"(working tree: $(git status --porcelain 2>/dev/null | wc -l) modified/untracked paths)"
	echo "dolsot:   $("$DBIN" --version); binary sha256 $(sha256sum "$DBIN" | cut -c1-16)"
	echo "rounds:   $ROUNDS recorded + $WARMUP warm-up, systems interleaved per round"
	echo "users:    $(id -un)${BENCH_USER:+ and $BENCH_USER}"
} | tee "$OUT/run.log"

# A store for one system, owned by the user who runs it, with x = 1; its
# calls run in the directory $RUN and with the environment timeit.py gives
# the timed commands, in the same order (a zygote is picked by both, and the
# order of the variables counts).
# $1 user, $2 name, $3 server (off|auto), rest: extra options of its calls.
# shellcheck disable=SC2046
make_store() {
	u=$1 name=$2 server=$3
	shift 3
	dir=$WORK/$name
	mkdir -m 700 "$dir" "$dir/store"
	[ -n "$u" ] && chown -R "$u" "$dir"
	# No shell between env -i and dolsot: sh would reorder the variables.
	(cd "$RUN" && as "$u" env -i PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 \
		HOME="$HOME" ${TMPDIR:+TMPDIR="$TMPDIR"} DOLSOT_SERVER="$server" \
		DOLSOT_CACHE_DIR="$dir/store" "$BIN" --session s "$@" "x = 1" >/dev/null 2>&1)
	if [ "$server" = auto ]; then
		(cd "$RUN" && as "$u" env -i PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 \
			HOME="$HOME" ${TMPDIR:+TMPDIR="$TMPDIR"} DOLSOT_CACHE_DIR="$dir/store" \
			"$BIN" --server-start $(case " $* " in *" --sandbox "*) echo --sandbox ;; esac))
	fi
}

# The timeit.py command of a system: runs in its directory, as its user.
sys_cmd() {
	u=$1 name=$2 server=$3
	shift 3
	prefix=
	[ -n "$u" ] && prefix="setpriv --reuid=$u --regid=$u --clear-groups"
	echo "DOLSOT_SERVER=$server DOLSOT_CACHE_DIR=$WORK/$name/store $prefix $BIN --session s $* 'x + 1'"
}

server_pid() {
	as "$1" env DOLSOT_CACHE_DIR="$WORK/$2/store" "$BIN" --server-status | sed -n 's/^pid //p'
}

# Median of per-round differences and medians, from a raw CSV.
report() {
	$PY - "$1" "$2" "$3" <<'EOF'
import csv, statistics, sys
raw, base, other = sys.argv[1:4]
rows = {}
for r in csv.DictReader(open(raw)):
    if r["ok"] == "1":
        rows.setdefault(r["system"], {})[int(r["round"])] = float(r["wall_ms"])
b, o = rows.get(base, {}), rows.get(other, {})
diffs = [o[k] - b[k] for k in b if k in o]
def q(xs, p):
    s = sorted(xs)
    i = p * (len(s) - 1)
    lo = int(i)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (i - lo)
print(f"| {other} vs {base} | {len(diffs)} | {q(list(b.values()), .5):.2f} "
      f"| {q(list(o.values()), .5):.2f} "
      f"| {q(list(o.values()), .5) - q(list(b.values()), .5):+.2f} "
      f"| {statistics.median(diffs):+.2f} | {q(diffs, .25):+.2f} .. {q(diffs, .75):+.2f} "
      f"| {min(o.values()) - min(b.values()):+.2f} |")
EOF
}

run_as() {
	u=$1 tag=${1:-$(id -un)}
	raw=$OUT/raw-$tag.csv
	RUN=$WORK/$tag-run
	mkdir -m 755 "$RUN"
	[ -n "$u" ] && chown "$u" "$RUN"
	make_store "$u" "$tag-cold" off
	make_store "$u" "$tag-cold-sbx" off --sandbox
	make_store "$u" "$tag-cold-lim" off
	make_store "$u" "$tag-warm" auto
	make_store "$u" "$tag-warm-sbx" auto --sandbox
	base_cold= base_warm= pid_base=
	if [ -n "$DBASE" ]; then
		BIN=$DBASE
		make_store "$u" "$tag-cold-base" off --sandbox
		make_store "$u" "$tag-warm-base" auto --sandbox
		base_cold=$(sys_cmd "$u" "$tag-cold-base" off --sandbox)
		base_warm=$(sys_cmd "$u" "$tag-warm-base" auto --sandbox)
		pid_base=$(server_pid "$u" "$tag-warm-base")
		BIN=$DBIN
	fi
	limits="--memory 1G --max-file-size 1G --cpu-seconds 60 --recursion-limit 1000 --max-procs 64"
	(cd "$RUN" && pair_time cold "$raw" \
		--sys plain "$(sys_cmd "$u" "$tag-cold" off)" \
		--sys sandbox "$(sys_cmd "$u" "$tag-cold-sbx" off --sandbox)" \
		--sys limits "$(sys_cmd "$u" "$tag-cold-lim" off "$limits")" \
		${DBASE:+--sys sandbox-base "$base_cold" --expect sandbox-base 2} \
		--expect plain 2 --expect sandbox 2 --expect limits 2)
	# The warm calls' work is done in the server's process tree: count its CPU.
	pid_plain=$(server_pid "$u" "$tag-warm")
	pid_sbx=$(server_pid "$u" "$tag-warm-sbx")
	(cd "$RUN" && pair_time warm "$raw" \
		--sys plain "$(sys_cmd "$u" "$tag-warm" auto)" \
		--sys sandbox "$(sys_cmd "$u" "$tag-warm-sbx" auto --sandbox)" \
		${DBASE:+--sys sandbox-base "$base_warm" --expect sandbox-base 2} \
		${DBASE:+--server-pid sandbox-base "$pid_base"} \
		--expect plain 2 --expect sandbox 2 \
		--server-pid plain "$pid_plain" --server-pid sandbox "$pid_sbx")
	{
		echo
		echo "## as $tag (uid $(id -u "$tag"))"
		echo
		$TIMEIT summary --raw "$raw" --base plain
		echo
		echo "| added cost (wall, ms) | rounds | median without | median with | difference of medians | median of per-round differences | interquartile range of differences | difference of minima |"
		echo "|---|---:|---:|---:|---:|---:|---|---:|"
		for sc in cold warm; do
			grep -e '^scenario' -e "^$sc," "$raw" > "$raw.$sc"
			report "$raw.$sc" plain sandbox | sed "s/^| /| $sc: /"
			[ "$sc" = cold ] && report "$raw.$sc" plain limits | sed "s/^| /| $sc: /"
			[ -n "$DBASE" ] && report "$raw.$sc" sandbox-base sandbox | sed "s/^| /| $sc: /"
		done
		for d in "$tag-warm" "$tag-warm-sbx" ${DBASE:+"$tag-warm-base"}; do
			printf '%s: ' "$d"
			b=$DBIN
			case $d in *-base) b=$DBASE ;; esac
			as "$u" env DOLSOT_CACHE_DIR="$WORK/$d/store" "$b" --server-status | grep '^calls'
		done
	} | tee -a "$OUT/run.log"
}

run_as ""
[ -n "$BENCH_USER" ] && run_as "$BENCH_USER"
echo "output in $OUT"
