#!/bin/sh
# Install the npm packages the tests use into tools/node (never globally),
# when they are missing: pyright, one of the type checkers the type gate is
# tested against, @modelcontextprotocol/sdk, the official MCP client that
# tests/lib/mcp_client.mjs drives `dolsot mcp` with, and
# @modelcontextprotocol/inspector, whose CLI is the second client
# tests/check_mcp.c runs, and pi (@mariozechner/pi-coding-agent), the agent
# host tests/pi/ drives with integrations/pi loaded.
# usage: tools/npm-deps.sh
# Without npm it says why and exits 0: the tests that need these packages
# then print SKIP with that reason.
set -eu

cd "$(dirname "$0")/node"
PYRIGHT_VERSION=1.1.414	# keep in step with package.json
MCP_SDK_VERSION=1.32.2
INSPECTOR_VERSION=2.12.0
PI_VERSION=0.73.1

if [ -x node_modules/.bin/pyright ] &&
   grep -q "\"version\": \"$PYRIGHT_VERSION\"" node_modules/pyright/package.json 2>/dev/null &&
   grep -q "\"version\": \"$MCP_SDK_VERSION\"" \
	node_modules/@modelcontextprotocol/sdk/package.json 2>/dev/null &&
   grep -q "\"version\": \"$INSPECTOR_VERSION\"" \
	node_modules/@modelcontextprotocol/inspector/package.json 2>/dev/null &&
   grep -q "\"version\": \"$PI_VERSION\"" \
	node_modules/@mariozechner/pi-coding-agent/package.json 2>/dev/null; then
	exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
	echo "dolsot: npm not found; the pyright, MCP client and pi tests will be skipped" >&2
	exit 0
fi
echo "dolsot: installing pyright $PYRIGHT_VERSION, @modelcontextprotocol/sdk" \
	"$MCP_SDK_VERSION, @modelcontextprotocol/inspector $INSPECTOR_VERSION" \
	"and @mariozechner/pi-coding-agent $PI_VERSION into tools/node" >&2
# package.json and package-lock.json pin the version; ci installs exactly that.
npm ci --no-audit --no-fund --loglevel=error >/dev/null
