/*
 * repl.h - the engine: run one cell in a session, list and reset sessions.
 *
 * repl_run() takes the session lock, loads the blob, runs a worker under the
 * deadline, saves the new blob, writes the text contract's images
 * (display_files.h) and releases the lock.  It fills a struct result for
 * output.c to render; it never prints and never exits.
 */
#ifndef DOLSOT_REPL_H
#define DOLSOT_REPL_H

#include <stddef.h>

#include "call.h"
#include "opts.h"
#include "output.h"
#include "sandbox_plan.h"
#include "store.h"

#define REPL_ERR_MAX 1024

/*
 * Run one cell.  Returns 0 when *res holds the call's result (whatever its
 * exit code), or -1 when the call failed before a result existed (store
 * refused, session busy, a syscall failed) with a reason in err.  When a
 * signal such as SIGTERM interrupted the call, *sig is set after everything
 * was cleaned up, and the caller should re-raise it.
 */
int repl_run(const struct run_args *a, struct result *res, int *sig,
             char *err, size_t errlen);

/*
 * Forget one session (waiting, like a run, up to the timeout for its lock so
 * a call in flight cannot save over the reset) or, with "all", every one
 * no call holds (without waiting: a session locked by a call in flight is
 * kept, with its save), and the images of the text contract with them
 * (display_files.h); "all" is every session of the settings' namespace
 * (settings.ns), never another's.  Returns 0 with *removed (sessions) and *images
 * (files) set, and, unless kept is NULL, *kept the ids kept as in use,
 * comma-separated (malloc'd; NULL when none); or -1 with a reason in err.
 */
int repl_reset(const struct settings *s, const char *target, unsigned *removed,
               unsigned *images, char **kept, char *err, size_t errlen);

/*
 * The sessions of the configured store in the settings' namespace, each
 * by its id there, into *out (malloc'd, the caller frees it).  0, or -1
 * with err.
 */
int repl_list(const struct settings *s, struct session_info **out, size_t *n, char *err,
              size_t errlen);

/*
 * The warm server of the configured store.  repl_server_start() starts it
 * unless it runs, and waits until a zygote for the caller's environment and
 * toolboxes is ready (0 or -1); with a sandbox plan, the zygote sandboxed
 * calls use, warmed with the plan's environment.  repl_server_info() fills buf with its
 * description; repl_server_stop() stops it and waits.  Both return 1, 0
 * when no server runs, or -1 with a reason in err.
 */
int repl_server_start(const struct settings *s, const struct toolbox_arg *toolboxes,
                      size_t n, const struct sandbox_plan *plan, char *err,
                      size_t errlen);
int repl_server_info(const struct settings *s, char *buf, size_t len, char *err,
                     size_t errlen);
int repl_server_stop(const struct settings *s, long *pid, char *err, size_t errlen);

/* Take id's lock, waiting like a run up to the timeout (the memory
 * store's server started anew when it ended).  0, or -1 with err
 * ("session 'ID' is busy: ..."). */
int repl_lock(const struct settings *s, struct store *st, const char *id,
              struct store_lock *lk, char *err, size_t errlen);

/* Open the configured store.  NULL and a reason in err on refusal. */
struct store *repl_open_store(const struct settings *s, char *err, size_t errlen);

#endif
