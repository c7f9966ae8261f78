#!/bin/sh
# bench/typegate.sh - what the type gate adds to a call, per checker.
#
# Usage (from the repository root; it runs tools/deps.sh bench and
# tools/npm-deps.sh, then needs ./dolsot built):
#   sh bench/typegate.sh            # prints a markdown section
#   sh bench/typegate.sh >> bench/RESULTS.md
# Environment:
#   BENCH_ROUNDS   recorded rounds per command (default 25, at least 20)
#   BENCH_WARMUP   unrecorded rounds first (default 3)
#   BENCH_SERVER   DOLSOT_SERVER for the dolsot calls (default: both auto and off)
#
# For mypy and for pyright, on one cell in a session that holds a name, it
# times three commands, interleaved round by round:
#   off     dolsot with DOLSOT_TYPECHECK=0
#   gate    dolsot with DOLSOT_TYPECHECK=1 and DOLSOT_TY_BIN=the checker
#   alone   the checker by itself, with the argv, environment, directory and
#           file the gate used (captured once by a wrapper that records them)
# and reports medians.  The gate's cost is gate - off; the target is that it
# stays within alone + 10%.
set -eu

cd "$(dirname "$0")/.."
ROOT=$(pwd)
PY=/usr/bin/python3.11
ROUNDS=${BENCH_ROUNDS:-25}
WARMUP=${BENCH_WARMUP:-3}
SERVERS=${BENCH_SERVER:-auto off}
MYPY=$(command -v mypy || true)
PYRIGHT=$ROOT/tools/node/node_modules/.bin/pyright
sh tools/deps.sh bench
sh tools/npm-deps.sh
[ "$ROUNDS" -ge 20 ] || { echo "bench/typegate.sh: BENCH_ROUNDS must be >= 20" >&2; exit 2; }
[ -x ./dolsot ] || { echo "bench/typegate.sh: build ./dolsot first (make)" >&2; exit 2; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/dolsot-bench-gate.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM
mkdir -m 700 "$WORK/cache" "$WORK/xdg"
cat > "$WORK/mytools.py" <<'PY'
__all__ = ["add", "load", "help"]
def add(a: int, b: int) -> int:
    return a + b
def load(name: str) -> list[int]:
    return [1, 2, 3]
def help(topic: str | None = None) -> str:
    return "add, load"
PY
CELL='orders = mt.load("orders")
total = mt.add(sum(orders), n)
total'

# A wrapper named like the checker (the name picks the format) that keeps
# a copy of what the gate hands the checker, then runs the real one.
record() {
	name=$1 real=$2 dir=$WORK/rec-$name
	mkdir -p "$dir/bin" "$dir/copy"
	cat > "$dir/bin/$name" <<SH
#!/bin/sh
src=\$(dirname "\$(eval echo \\\${\$#})")
cp "\$src"/* "$dir/copy/"
pwd > "$dir/cwd"
printf '%s\n' "\$MYPYPATH" > "$dir/mypypath"
for a in "\$@"; do printf '%s\n' "\$a"; done > "$dir/argv"
exec "$real" "\$@"
SH
	chmod +x "$dir/bin/$name"
	echo "$dir"
}

export PYTHONPATH= VIRTUAL_ENV= XDG_CACHE_HOME=$WORK/xdg
cd "$WORK"
"$ROOT/dolsot" --reset all >/dev/null 2>&1 || true

summary=$WORK/summary.md
: > "$summary"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for server in $SERVERS; do
for checker in mypy pyright; do
	case $checker in
	mypy) real=$MYPY ;;
	pyright) real=$PYRIGHT ;;
	esac
	if [ -z "$real" ] || [ ! -x "$real" ]; then
		echo "| $checker | DOLSOT_SERVER=$server | SKIP: not installed | | | | |" >> "$summary"
		continue
	fi
	store=$WORK/store-$checker-$server
	export DOLSOT_CACHE_DIR=$store DOLSOT_SERVER=$server
	DOLSOT_TYPECHECK=0 "$ROOT/dolsot" --toolbox mytools:mt --session b "n = 3" >/dev/null 2>&1
	dir=$(record "$checker" "$real")
	DOLSOT_TY_BIN=$dir/bin/$checker "$ROOT/dolsot" --toolbox mytools:mt --session b "$CELL" \
		> "$WORK/first.out" 2>&1
	grep -q "type gate" "$WORK/first.out" && { cat "$WORK/first.out" >&2; exit 1; }
	$PY - "$ROOT/dolsot" "$real" "$dir" "$CELL" "$ROUNDS" "$WARMUP" "$checker" "$server" \
		>> "$summary" <<'PYEOF'
import os, statistics, subprocess, sys, time
dolsot, real, rec, cell, rounds, warmup, checker, server = sys.argv[1:]
rounds, warmup = int(rounds), int(warmup)
argv = open(f"{rec}/argv").read().split("\n")[:-1]
copy = f"{rec}/copy"
old = os.path.dirname(argv[-1])
argv = [real] + [a.replace(old, copy) for a in argv]
env_alone = dict(os.environ)
if checker == "mypy":
    env_alone["MYPYPATH"] = open(f"{rec}/mypypath").read().strip()
base = [dolsot, "--toolbox", "mytools:mt", "--session", "b", cell]
cmds = {
    "off": (base, {**os.environ, "DOLSOT_TYPECHECK": "0"}, None),
    "gate": (base, {**os.environ, "DOLSOT_TYPECHECK": "1", "DOLSOT_TY_BIN": real}, None),
    "alone": (argv, env_alone, copy),
}
times = {k: [] for k in cmds}
for i in range(warmup + rounds):
    for k, (a, env, cwd) in cmds.items():
        t0 = time.perf_counter()
        p = subprocess.run(a, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        dt = time.perf_counter() - t0
        if k != "alone" and (p.returncode != 0 or b"type gate" in p.stderr):
            sys.exit(f"{k} failed: {p.returncode} {p.stderr.decode()}")
        if i >= warmup:
            times[k].append(dt)
med = {k: statistics.median(v) * 1000 for k, v in times.items()}
# Paired per round (the three commands ran back to back), so that a change
# of load during the run moves both sides of each difference alike.
added = [(g - o) * 1000 for g, o in zip(times["gate"], times["off"])]
ratios = sorted((g - o) / a for g, o, a in zip(times["gate"], times["off"], times["alone"]))
q = statistics.quantiles(ratios, n=4)
print(f"| {checker} | DOLSOT_SERVER={server} | {med['off']:.1f} | {med['gate']:.1f} | "
      f"{statistics.median(added):.1f} | {med['alone']:.1f} | "
      f"{statistics.median(ratios):.2f} ({q[0]:.2f}-{q[2]:.2f}) |")
PYEOF
done
done

date=$(date -u +%Y-%m-%d)
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
mypy_v=$([ -n "$MYPY" ] && "$MYPY" --version 2>/dev/null || echo none)
pyright_v=$([ -x "$PYRIGHT" ] && "$PYRIGHT" --version 2>/dev/null || echo none)
cat <<MD

## Type gate: added latency per cell ($date)

Machine: $(nproc) cores, $cpu, $(uname -sr); $mypy_v; $pyright_v.
Load average (1, 5, 15 min) before the run: $load_before; after: $(cut -d' ' -f1-3 /proc/loadavg).
\`sh bench/typegate.sh\`, $ROUNDS rounds after $WARMUP warm-up rounds, the
three commands interleaved; medians in milliseconds.  The cell loads a list,
calls \`mt.add\` on a name the session holds, and shows the value.  *off* is
dolsot with \`DOLSOT_TYPECHECK=0\`, *gate* the same call with the checker,
*alone* the checker run by itself with the same argv, environment,
directory and file as in the gate (mypy with its warm cache).  *added* is
the median over rounds of gate - off, and *ratio* the median over rounds of
(gate - off) / alone, with its interquartile range: the three commands of a
round run back to back, so pairing them cancels drifts of the machine's
load.  Target: ratio <= 1.10.

| checker | mode | off | gate | added | alone | ratio (IQR) |
| --- | --- | ---: | ---: | ---: | ---: | ---: |
$(cat "$summary")
MD
