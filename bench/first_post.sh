#!/bin/sh
# bench/first_post.sh DOLSOT STORE - untimed clean-up after a timed first
# call on STORE (scenario "first" of bench/run.sh; run by timeit.py --post).
#
# The call started the store's server in the background and may have exited
# before that server listens, so wait (up to 10 s) until --server-status
# finds it: no server at all means the call did not start one, which fails
# the run.  Then --server-start waits until its zygote is ready (so it does
# not compete with the next timed command) and --server-stop stops it and
# waits until it and its zygotes are gone.  dash adds PWD to the
# environment, and dolsot keys its zygotes on the environment: `env -u PWD`
# gives dolsot exactly the environment the timed call had.
set -eu
d=$1
store=$2
run() { DOLSOT_CACHE_DIR=$store env -u PWD "$d" "$@"; }
i=0
until run --server-status >/dev/null 2>&1; do
	i=$((i + 1))
	if [ $i -ge 200 ]; then
		echo "first_post: no server running for $store 10 s after the call" >&2
		exit 1
	fi
	sleep 0.05
done
run --server-start >/dev/null
run --server-stop >/dev/null
