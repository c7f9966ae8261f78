#!/bin/sh
# Install the Debian packages a make target needs, when any is missing.
# usage: tools/deps.sh build|demo|check|lint|fuzz|valgrind|bench
# As root it runs apt-get; otherwise it prints the exact command and fails.
set -eu

build="gcc make libc6-dev python3.11 libpython3.11-dev python3-dill libseccomp-dev libjansson-dev libhiredis-dev libssl-dev libmicrohttpd-dev"
case "${1:-build}" in
build|demo) pkgs="$build" ;;
check) pkgs="$build check libsubunit-dev pkg-config mandoc python3-venv
	python3-numpy python3-pandas python3-matplotlib python3-openpyxl procps util-linux mypy nodejs passwd
	python3-jsonschema redis-server python3-nbformat jupyter-nbconvert caddy openssl curl" ;;
lint) pkgs="$build cppcheck clang-tidy mandoc" ;;
fuzz) pkgs="$build clang libclang-rt-14-dev" ;;
valgrind) pkgs="$build check libsubunit-dev pkg-config valgrind" ;;
bench) pkgs="$build python3-numpy python3-pandas python3-matplotlib python3-ipykernel python3-jupyter-client
	hyperfine mypy nodejs redis-server" ;;
*) echo "tools/deps.sh: unknown set '$1'" >&2; exit 2 ;;
esac

missing=""
for p in $pkgs; do
	if ! dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed; then
		missing="$missing $p"
	fi
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "dolsot: missing Debian packages; as root run:" >&2
	echo "  apt-get install -y$missing" >&2
	exit 1
fi
echo "dolsot: installing Debian packages:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
