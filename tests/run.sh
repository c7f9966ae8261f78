#!/bin/sh
# Run each test program given; report every failure and how long each
# program took, exit 1 if any failed.
# Tests run from the repository root (they use ./dolsot and man/dolsot.1).
# A name like tests/check_X runs the program make built, build/tests/check_X.
cd "$(dirname "$0")/.." || exit 1
failed=0
for t in "$@"; do
	echo "== $t"
	p=$t
	[ -x "build/$t" ] && p=build/$t
	start=$(date +%s)
	if ! "./$p"; then
		echo "FAILED: $t"
		failed=1
	fi
	echo "== $t: $(($(date +%s) - start)) s"
done
exit $failed
