/*
 * typegate.h - run an external type checker on a file under a deadline, and
 * read its diagnostics.
 *
 * Two independent halves.  typegate_run() starts a program in its own process
 * group, captures its stdout and stderr up to a cap, and kills the group
 * when the deadline passes.  typegate_parse() reads one checker's output format
 * into diagnostics; it treats every byte as hostile (it is fuzzed).  Which
 * file is checked, and what a diagnostic means for a cell, is the worker's
 * business (gate.py); nothing here knows about Python.
 */
#ifndef DOLSOT_TYPEGATE_H
#define DOLSOT_TYPEGATE_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

/* Output formats, chosen by the checker binary's name (typegate_checker_of). */
enum typegate_checker {
	TYPEGATE_TY,          /* ty check --output-format concise */
	TYPEGATE_MYPY,        /* mypy --show-column-numbers --show-error-codes */
	TYPEGATE_PYRIGHT,     /* pyright or basedpyright --outputjson */
	TYPEGATE_GENERIC,     /* any other: file:line:col: error: message */
};

enum typegate_severity {
	TYPEGATE_SEV_ERROR,
	TYPEGATE_SEV_WARNING,
	TYPEGATE_SEV_NOTE,
};

/* At most this many diagnostics are kept, and this many bytes of a text. */
#define TYPEGATE_MAX_DIAGS 256
#define TYPEGATE_MAX_TEXT 2048

struct typegate_diag {
	char *path;                 /* as the checker wrote it, never NULL */
	unsigned long line;         /* 1-based; 0 when not given */
	unsigned long col;          /* 1-based; 0 when not given */
	enum typegate_severity severity;
	char *code;                 /* rule or error code; NULL when none */
	char *message;              /* never NULL; may hold '\n' (pyright) */
};

struct typegate_diags {
	struct typegate_diag *v;
	size_t n;
	bool truncated;             /* more than TYPEGATE_MAX_DIAGS were found */
};

/* The format of the checker at path (only its last component counts). */
enum typegate_checker typegate_checker_of(const char *path);
const char *typegate_checker_name(enum typegate_checker k);

/*
 * Read out[0..len) as checker k's output.  Returns 0 with *d filled (maybe
 * empty), or -1 when the output is not in k's format at all: invalid JSON
 * for pyright, or lines that are not blank yet none is a diagnostic for the
 * line formats.  Texts are NUL-terminated, at most TYPEGATE_MAX_TEXT bytes, with
 * NULs and control bytes other than '\n' and '\t' replaced by '?'.  Release
 * *d with typegate_diags_release() after either return.
 */
int typegate_parse(enum typegate_checker k, const char *out, size_t len, struct typegate_diags *d);
void typegate_diags_release(struct typegate_diags *d);

enum typegate_run_status {
	TYPEGATE_RUN_EXITED,          /* code = exit status */
	TYPEGATE_RUN_SIGNALED,        /* code = signal number */
	TYPEGATE_RUN_TIMEOUT,         /* killed at the deadline */
	TYPEGATE_RUN_NOT_FOUND,       /* exec failed with ENOENT: not installed */
	TYPEGATE_RUN_CANNOT_START,    /* exec failed otherwise; code = errno */
};

struct typegate_run {
	enum typegate_run_status status;
	int code;
	char *out;                  /* NUL-terminated; out_len excludes it */
	size_t out_len;
	bool out_truncated;
	char *err;
	size_t err_len;
	bool err_truncated;
	double seconds;             /* from start to exit or kill */
};

/*
 * Run argv (argv[0] a path, or a name looked up in PATH) with envp (NULL:
 * ours) in cwd (NULL: ours), stdin on /dev/null, in a new process group
 * that dies with us.  Keeps the first cap bytes of stdout and of stderr and
 * discards the rest.  When deadline (CLOCK_MONOTONIC) passes, SIGKILLs the
 * group.  On return no process of the group is left.  Returns 0 with *r
 * filled (release with typegate_run_release), or -1 with a reason in err when a
 * syscall failed.
 */
int typegate_run(const char *const *argv, const char *const *envp, const char *cwd,
           const struct timespec *deadline, size_t cap, struct typegate_run *r,
           char *err, size_t errlen);
void typegate_run_release(struct typegate_run *r);

struct gate_state;

/* The checkers tried, in this order, when the configured one is missing. */
#define TYPEGATE_FALLBACKS "ty, pyright, mypy"

/*
 * The gate's checker for a call (asked: DOLSOT_TYPECHECK=1; configured:
 * DOLSOT_TY_BIN) into *g: the configured one when it is installed, else
 * the first installed of TYPEGATE_FALLBACKS (g->note saying so), else
 * none: the gate is off, and g->note says why.  A missing checker never
 * blocks a cell.
 */
void typegate_choose(bool asked, const char *configured, struct gate_state *g);

/* The absolute path of an executable name looked up in PATH; a name with a
 * '/' is taken as a path (made absolute against the current directory) if
 * it exists.  malloc'd, or NULL when there is none. */
char *typegate_which(const char *name);

#endif
