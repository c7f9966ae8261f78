#!/bin/sh
# bench/sign.sh - the cost of signed sessions by itself (bench/sign_cost.c:
# the key file's read, sign and verify for 1 KiB to 50 MB, medians in one
# process), then per call: sh bench/ab.sh with the binary before signing
# as OLD gives S1 (small session) and S3 (50 MB) warm and cold, paired.
#
# Usage (from the repository root, after make dolsot):  sh bench/sign.sh
set -eu
cd "$(dirname "$0")/.."
W=$(mktemp -d "${TMPDIR:-/tmp}/dolsot-sign.XXXXXX")
trap 'rm -rf "$W"' EXIT
mkdir -m 700 "$W/store"
make -s build/store/sign.o build/base/fdio.o
cc -O2 -std=gnu11 -D_GNU_SOURCE -I. -Istore -Ibase -o "$W/sign_cost" bench/sign_cost.c build/store/sign.o \
	build/base/fdio.o -Wl,-Bstatic -lcrypto -Wl,-Bdynamic -ldl -lpthread
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) cores; load: $(uptime | sed 's/.*load average: //')"
"$W/sign_cost" "$W/store"
