#!/bin/sh
# Run each test program given; report every failure, exit 1 if any failed.
# Tests run from the repository root (they use ./dolsot and man/dolsot.1).
cd "$(dirname "$0")/.." || exit 1
failed=0
for t in "$@"; do
	echo "== $t"
	if ! "./$t"; then
		echo "FAILED: $t"
		failed=1
	fi
done
exit $failed
