/*
 * warm.h - the client side of the warm path: hand a call to the store's
 * server, start the server, ask it about itself or stop it.
 */
#ifndef DOLSOT_WARM_H
#define DOLSOT_WARM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "opts.h"
#include "output.h"
#include "call_path.h"

/*
 * What a caller wants warm: its toolboxes and, for a sandboxed call, the
 * environment to warm them in.  The key sent (struct warm_key, see
 * warm_proto.h) adds this process's directory, paths and environment.
 */
struct warm_want {
	const struct toolbox_arg *toolboxes;
	size_t n_toolboxes;
	/* NAME=VALUE entries, NUL-separated, to warm the zygote with instead of
	 * our environment (a sandbox's, which must not see ours); or NULL. */
	const char *env;
	size_t env_len;
	/* The session's module record (modrec.h), for a zygote that imported
	 * it already; none for a new session, a live one or a sandboxed one. */
	const char *const *preload;
	size_t n_preload;
};

/*
 * The warm call path: run the request (an encoded FRAME_REQUEST) through
 * the server of the store directory dirfd, under deadline.  The worker
 * gets session's load and save fds (which stay open here); watch (may be
 * NULL) hears the worker's pidfd before it is told to go.  With tools
 * (NULL: none), the worker's end of a new host-call channel goes to the
 * worker itself with WIRE_GO (the server never sees it), and this
 * process serves the other end.  Returns
 * CALL_DONE (*o filled, as cold_run would), CALL_NO_SERVER, CALL_FALLBACK
 * (nothing ran), or CALL_BROKEN with err saying what happened.
 */
enum call_status warm_run(int dirfd, const uint8_t *request, size_t request_len,
                          const struct worker_fds *session,
                          const struct timespec *deadline, double budget,
                          const struct warm_want *key, const struct cell_watch *watch,
                          struct host_tools *tools, struct capture *out,
                          struct capture *errc,
                          struct call_outcome *o, char *err, size_t errlen);

/*
 * Start a server for dirfd in the background (detached; it outlives us),
 * warming a zygote for key.  Returns its pid's parent's status: 0 or -1.
 */
int warm_spawn_server(int dirfd, double idle_seconds, const struct warm_want *key);

/* Make sure a server listens for dirfd, starting one if needed (once a
 * killed one has let go of its lock).  0, or -1 with the reason in err.
 * A server that listens may still be ending: a memory store's lock says
 * so (STORE_LOCK_GONE). */
int warm_ensure_server(int dirfd, double idle_seconds, char *err, size_t errlen);

/* Text from the server about itself into buf: 1, 0 when none runs, -1
 * with the reason in err when it does not answer in time (stopped,
 * frozen) or the exchange failed. */
int warm_info(int dirfd, char *buf, size_t len, char *err, size_t errlen);

/* Ask the server to stop and wait until it is gone; *pid gets its pid.
 * Returns 1 when one was stopped, 0 when none ran, -1 with the reason in
 * err. */
int warm_stop(int dirfd, long *pid, char *err, size_t errlen);

/* Ask the server of dirfd, if one runs, to prepare a zygote for key, and
 * do not wait for it (a probe whose answer nobody reads). */
void warm_prepare(int dirfd, const struct warm_want *key);

enum warm_ready {
	WARM_READY,            /* the zygote for the key is ready */
	WARM_READY_TIMEOUT,    /* it did not get ready in time */
	WARM_READY_FAILED,     /* the zygote failed; err says how */
	WARM_READY_ERROR,      /* no server could be started; err says why */
};

/*
 * Make sure a server runs (starting one, with idle_seconds, if needed) and
 * wait up to seconds until its zygote for key is ready.
 */
enum warm_ready warm_wait_ready(int dirfd, double idle_seconds, const struct warm_want *key,
                                double seconds, char *err, size_t errlen);

#endif
