#!/bin/sh
# bench/json.sh - what --json and the figure hook cost (issue 12).
#
# Usage (from the repository root, ./dolsot built):
#   BASE=/path/to/dolsot-before sh bench/json.sh   # prints a markdown section
# Environment:
#   BASE           a dolsot built from the commit before issue 12 (required)
#   BENCH_ROUNDS   recorded rounds (default 40, at least 20)
#   BENCH_WARMUP   unrecorded rounds first (default 3)
#
# For DOLSOT_SERVER=auto (warm) and off (cold) it runs, interleaved round by
# round, in one session each:
#   base   the old binary, text contract, cell `x = x + 1; x`
#   text   the new binary, same call          (the hook's cost: text / base)
#   json   the new binary with --json         (--json's cost: json / text)
# and, for information, a cell that draws one figure with the new binary in
# both modes (text writes the PNG file).  Medians and paired ratios.
set -eu

cd "$(dirname "$0")/.."
ROOT=$(pwd)
PY=/usr/bin/python3.11
ROUNDS=${BENCH_ROUNDS:-40}
WARMUP=${BENCH_WARMUP:-3}
[ -n "${BASE:-}" ] && [ -x "$BASE" ] || { echo "bench/json.sh: set BASE to the old dolsot" >&2; exit 2; }
[ -x ./dolsot ] || { echo "bench/json.sh: build ./dolsot first (make)" >&2; exit 2; }
[ "$ROUNDS" -ge 20 ] || { echo "bench/json.sh: BENCH_ROUNDS must be >= 20" >&2; exit 2; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/dolsot-bench-json.XXXXXX")
cp "$BASE" "$WORK/base"
cp ./dolsot "$WORK/new"
cleanup() {
	for b in base new; do
		for s in auto off; do
			DOLSOT_CACHE_DIR=$WORK/$b-$s DOLSOT_SERVER=auto "$WORK/$b" --server-stop \
				>/dev/null 2>&1 || true
		done
	done
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
export PYTHONPATH= VIRTUAL_ENV= DOLSOT_TYPECHECK=0
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
$PY - "$WORK" "$ROUNDS" "$WARMUP" <<'PYEOF'
import os, statistics, subprocess, sys, time
work, rounds, warmup = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
cell = "x = x + 1; x"
fig = ("import matplotlib\nmatplotlib.use('agg')\nimport matplotlib.pyplot as plt\n"
       "plt.figure(figsize=(4, 3)); plt.plot([1, 2, 3]); x = x + 1")
print("| server | scenario | base ms | text ms | json ms | text/base | json/text |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
for server in ("auto", "off"):
    env = {**os.environ, "DOLSOT_SERVER": server}
    def store(b):
        return {**env, "DOLSOT_CACHE_DIR": f"{work}/{b}-{server}"}
    systems = {
        "base": ([f"{work}/base", "--session", "b", cell], store("base")),
        "text": ([f"{work}/new", "--session", "t", cell], store("new")),
        "json": ([f"{work}/new", "--json", "--session", "j", cell], store("new")),
        "fig-text": ([f"{work}/new", "--session", "ft", fig], store("new")),
        "fig-json": ([f"{work}/new", "--json", "--session", "fj", fig], store("new")),
    }
    for name, (argv, e) in systems.items():
        subprocess.run(argv[:-1] + ["x = 0"], env=e, check=True, capture_output=True)
        if server == "auto":
            subprocess.run([argv[0], "--server-start"], env=e, check=True)
    times = {k: [] for k in systems}
    for i in range(warmup + rounds):
        for k, (argv, e) in systems.items():
            t0 = time.perf_counter()
            p = subprocess.run(argv, env=e, capture_output=True)
            dt = time.perf_counter() - t0
            if p.returncode != 0:
                sys.exit(f"{k} failed: {p.returncode} {p.stderr.decode()}")
            if i >= warmup:
                times[k].append(dt * 1000)
    med = {k: statistics.median(v) for k, v in times.items()}
    def ratio(a, b):
        r = sorted(x / y for x, y in zip(times[a], times[b]))
        q = statistics.quantiles(r, n=4)
        return f"{statistics.median(r):.3f} ({q[0]:.3f}-{q[2]:.3f})"
    print(f"| {server} | `{cell}` | {med['base']:.2f} | {med['text']:.2f} | "
          f"{med['json']:.2f} | {ratio('text', 'base')} | {ratio('json', 'text')} |")
    print(f"| {server} | one figure | | {med['fig-text']:.2f} | {med['fig-json']:.2f} | | "
          f"{ratio('fig-json', 'fig-text')} |")
PYEOF
echo
echo "$(date -u +%Y-%m-%d), $(nproc) cores ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)), $ROUNDS rounds after $WARMUP warm-up, load average before: $load_before, after: $(cut -d' ' -f1-3 /proc/loadavg)"
