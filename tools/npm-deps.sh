#!/bin/sh
# Install the npm packages the tests use into tools/node (never globally),
# when they are missing.  Today that is pyright, one of the type checkers
# the type gate is tested against.
# usage: tools/npm-deps.sh
# Without npm it says why and exits 0: the tests that need pyright then
# print SKIP with that reason.
set -eu

cd "$(dirname "$0")/node"
PYRIGHT_VERSION=1.1.414	# keep in step with package.json

if [ -x node_modules/.bin/pyright ] &&
   grep -q "\"version\": \"$PYRIGHT_VERSION\"" node_modules/pyright/package.json 2>/dev/null; then
	exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
	echo "dolsot: npm not found; the pyright tests will be skipped" >&2
	exit 0
fi
echo "dolsot: installing pyright $PYRIGHT_VERSION into tools/node" >&2
# package.json and package-lock.json pin the version; ci installs exactly that.
npm ci --no-audit --no-fund --loglevel=error >/dev/null
