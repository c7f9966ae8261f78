/*
 * detach.h - detached cells (issue 38 item 1): a call that outlives its
 * client, and its handle.
 *
 * A call with --detach-after forks a keeper (its own session, stdio on
 * its record's files) that runs the call exactly as an attached call
 * would, under the same lock, deadline and commit; the client waits up to
 * the given seconds for the keeper's result, else hands back the handle.
 * Each handle is a record directory, named by 128 random bits in hex, in
 * a per-user directory (0700, ours) beside the store's: meta (session,
 * namespace, start), keeper (pid, start time), out.txt and err.txt (the
 * text rendering), result.json (--json's), peek.out and peek.err (output
 * so far: a head and a tail ring each, bounded) and at the end result ("STATE CODE").  Waiting is on
 * inotify and the keeper's pidfd, never a sleep.  Records are removed a
 * session TTL after their cell ended.
 */
#ifndef DOLSOT_DETACH_H
#define DOLSOT_DETACH_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "options.h"
#include "output.h"

/* The exit code of a call that hands back a handle (EX_TEMPFAIL). */
#define DETACH_EXIT 75
#define DETACH_HANDLE_LEN 32
/* Bytes of each stream a record keeps for --peek: half its head, half
 * its tail. */
#define DETACH_PEEK_MAX ((size_t)1 << 20)

enum detach_state { DETACH_RUNNING, DETACH_DONE, DETACH_CANCELLED, DETACH_LOST };

struct detach_rec {
	char dir[PATH_MAX + 300];             /* the record's directory */
	char handle[DETACH_HANDLE_LEN + 1];
	char session[256];                    /* its session's id */
	char ns[256];                         /* and namespace ("" default) */
	long long started;                    /* unix seconds */
	enum detach_state state;
	int code;                             /* the cell's exit code once ended */
};

/* The keeper's side: where its output so far goes. */
struct detach_keeper {
	struct capture_tap tap;               /* first: the captures call it */
	const struct capture *out;            /* the call's stdout capture */
	struct capture_tap *next;             /* the tap they had, or NULL */
	int peek[2];                          /* peek.out, peek.err: the heads */
	size_t kept[2];
	int tail[2];                          /* their tails' rings */
	uint64_t ring[2];                     /* bytes given to each ring */
	FILE *json;                           /* result.json */
};

enum detach_role { DETACH_FAILED = -1, DETACH_CLIENT = 0, DETACH_KEEPER = 1 };

/* A new handle's record for a cell of session (namespace s->ns), then the
 * keeper forked, keep_fd (>= 0) the one fd of the caller's it keeps.  DETACH_KEEPER in the keeper (setsid, stdin /dev/null,
 * stdout and stderr on the record, k ready: tap the call's captures with
 * detach_keeper_tap), DETACH_CLIENT in the caller, or DETACH_FAILED with
 * err. */
enum detach_role detach_start(const struct settings *s, const char *session,
                              struct detach_rec *r, struct detach_keeper *k, int keep_fd,
                              char *err, size_t errlen);

/* Keeper: its output so far into the record as the captures are fed,
 * and on to the tap they had (the MCP progress's stream), if any. */
void detach_keeper_tap(struct detach_keeper *k, struct capture *out, struct capture *err);

/* Keeper: the call's result into the record, as text (stdout, stderr:
 * out.txt, err.txt) and as --json's object (result.json), then the
 * process ends with its exit code. */
void detach_keeper_finish(struct detach_keeper *k, const struct result *res)
	__attribute__((noreturn));

/* Keeper: the call was stopped by signal sig (--cancel): say so, record
 * it, and end the process (the session is unchanged). */
void detach_keeper_cancelled(struct detach_keeper *k, int sig) __attribute__((noreturn));

/* The record of handle (checked: 32 lowercase hex digits, in this user's
 * directory).  0, or -1 with err. */
int detach_open(const struct settings *s, const char *handle, struct detach_rec *r,
                char *err, size_t errlen);

/* Wait until r's cell ends or seconds pass (< 0: no limit), on events;
 * r->state and r->code then say how it stands.  0, or -1 with err. */
int detach_wait(struct detach_rec *r, double seconds, char *err, size_t errlen);

/* An ended cell's result as the attached call would have printed it
 * (text on out and errs, or --json's object).  0, or -1 with errno. */
int detach_print_result(const struct detach_rec *r, bool json, FILE *out, FILE *errs);

/* The one-line status of a handle whose cell still runs (stderr), or its
 * --json object on out.  0, or -1 with errno. */
int detach_print_status(const struct detach_rec *r, bool json, FILE *out, FILE *errs);

/* --peek: the output so far, cut as the output contract cuts (cap
 * characters a stream, 0: no cap).  0, or -1 with errno. */
int detach_print_peek(const struct detach_rec *r, uint64_t cap, bool json, FILE *out,
                      FILE *errs);

/* --cancel: stop the keeper's cell (it rolls back), wait for it to end.
 * 1 cancelled, 0 it had already ended (r says how), -1 with err. */
int detach_cancel(struct detach_rec *r, char *err, size_t errlen);

/* What --cancel did: cancelled (the session is unchanged), or the cell
 * had already ended (r says how).  0, or -1 with errno. */
int detach_print_cancel(const struct detach_rec *r, bool cancelled, bool json, FILE *out,
                        FILE *errs);

/* This user's handles whose cell still runs, into *out (malloc'd, *n of
 * them; the caller frees it).  0, or -1 with err. */
int detach_running(const struct settings *s, struct detach_rec **out, size_t *n, char *err,
                   size_t errlen);

/* --list-running: this user's handles whose cell still runs.  0, or -1
 * with err. */
int detach_print_running(const struct settings *s, bool json, FILE *out, char *err,
                         size_t errlen);

const char *detach_state_name(enum detach_state st);

#endif
