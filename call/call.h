/*
 * call.h - one cell on a call path: build the request once, run it warm
 * when the server may take it and cold otherwise, and turn the worker's
 * outcome into a struct result.  repl.c holds the session's lock and files
 * around it; this door never touches the store.
 */
#ifndef DOLSOT_CALL_H
#define DOLSOT_CALL_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "call_path.h"
#include "opts.h"
#include "output.h"
#include "sandbox_plan.h"
#include "warm.h"

/* What the caller asks for: one cell in one session. */
struct run_args {
	const char *session;
	const char *code;
	size_t code_len;
	const struct toolbox_arg *toolboxes;
	size_t n_toolboxes;
	const struct settings *settings;
	const struct sandbox_plan *plan;   /* sandbox binds, environment; may be NULL */
	bool json;                         /* fill the structured fields (--json) */
	/* --describe: run no cell, save nothing; the --mount paths to list as
	 * path NUL mode NUL, repeated.  Without a session (NULL), no store. */
	bool describe;
	const char *describe_mounts;
	size_t describe_mounts_len;
	/* --fork: the session starts as a copy of this one's stored state
	 * (repl.c holds both locks); fork_replace: even when it exists.  With
	 * fork and no code (NULL), the copy is the whole call. */
	const char *fork;
	bool fork_replace;
	/* --fork SRC@N: the copy is of SRC's kept state N (0: SRC as it is). */
	uint64_t fork_state;
	/* --call-id: a call that repeats one the session recorded says that
	 * call's result again and runs nothing (recall.h); NULL: none. */
	const char *call_id;
	/* The host tools the cell may call (hosttools.h); NULL: none. */
	struct host_tools *tools;
};

/* One call: the cell, and the session's state as repl.c opened it. */
struct call_args {
	const struct run_args *run;
	const struct worker_fds *fds;      /* load (-1: new session) and save */
	size_t blob_len;                   /* bytes of the session to load */
	bool found;                        /* the session exists */
	const struct plan_cgroups *cgroup; /* the call's cgroups ("" when none) */
	const struct timespec *deadline;   /* CLOCK_MONOTONIC */
	int dirfd;                         /* the warm server's directory; -1: cold only */
	double t0;                         /* deadline_now() when the call began,
	                                    * for the start-up timing */
	const struct cell_watch *watch;    /* told where the cell runs; may be NULL */
	/* Where the session's units are, for the worker (frame.h's
	 * request.units): NULL or "", in the blob (a store of whole
	 * sessions); "-", packed into the blob by the store; else the
	 * store's objects directory. */
	const char *units;
};

/* What the worker asks of the store once it finished. */
struct call_save {
	bool wanted;       /* it wrote a new session into fds->save */
	int errnum;        /* writing it failed with this errno (0: it did not) */
	size_t len;        /* bytes written */
};

/*
 * Run the call.  Returns 0 when *res holds its result (whatever its exit
 * code), with *sv saying whether to commit the save; or -1 with a reason in
 * err when nothing ran.  *no_server tells that no server listened (the
 * caller may start one for the calls that follow); *sig, a signal that
 * interrupted the call.  Every process of the call is gone on return.
 */
int call_run(const struct call_args *c, struct result *res, struct call_save *sv,
             int *sig, bool *no_server, char *err, size_t errlen);

/* What picks the zygote for a's calls (see warm_want). */
struct warm_want call_warm_want(const struct run_args *a);

#endif
