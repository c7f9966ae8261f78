#!/bin/sh
# bench/carry.sh - what carrying state (issue 7) adds to a call.
#
# Usage (from the repository root):  sh bench/carry.sh
# Environment: BENCH_ROUNDS (default 41 calls each way, per scenario),
#              BENCH_COST_ROUNDS (default 25 fresh interpreters each way).
#
# Two measurements, for a session without libraries and one with numpy,
# pandas and matplotlib imported:
#  1. end to end: the same cell with DOLSOT_CARRY=1 and =0, interleaved,
#     on the cold path and through the warm server (bench/carry_time.py);
#  2. the worker-side carry work alone (restore, save, pickle the pieces),
#     timed inside fresh interpreters started like the worker, which
#     resolves differences far below the noise of whole calls on a shared
#     machine (bench/carry_cost.py).
set -eu
cd "$(dirname "$0")/.."
PY=/usr/bin/python3.11
ROUNDS=${BENCH_ROUNDS:-41}
COST=${BENCH_COST_ROUNDS:-25}

sh tools/deps.sh bench
[ -x ./dolsot ] || make dolsot
echo "# carry benchmark, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: nproc=$(nproc); $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //');" \
	"kernel $(uname -r); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
echo
echo "End to end (wall time per call):"
echo
MPLBACKEND=Agg $PY bench/carry_time.py ./dolsot "$ROUNDS"
echo
echo "Worker side (the carry work alone, CPU ms):"
echo
echo "| session | cycle | interpreters | carry=1 median | carry=0 median | added |"
echo "| --- | --- | --- | --- | --- | --- |"
MPLBACKEND=Agg $PY bench/carry_cost.py ./dolsot "$COST" plain
MPLBACKEND=Agg $PY bench/carry_cost.py ./dolsot "$COST" libs
