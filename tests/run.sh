#!/bin/sh
# Run each test program given, one after the other, and report every
# failure and how long each took; exit 1 if any failed.  tests/run.py does
# it (and more: ways, TCases, several at once); see there.
# A name like tests/TIER/check_X runs the program make built,
# build/tests/TIER/check_X.
exec "${PYTHON:-/usr/bin/python3.11}" "$(dirname "$0")/run.py" "$@"
