/*
 * checkd_drv.h - one warm type checker, kept running for the warm checker
 * daemon (checkd.c): pyright's language server, or mypy imported once in
 * an interpreter running checkd_mypy.py, over stdio (lsp.h's framing).  A
 * driver starts its checker,
 * checks one file's text at a time under a deadline, and answers as the
 * checker's command line would: the same output format, so the gate reads
 * it with typegate_parse() unchanged.
 */
#ifndef DOLSOT_CHECKD_DRV_H
#define DOLSOT_CHECKD_DRV_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

/* What the gate would run cold, which is what the warm one must match. */
struct checkd_drv_spec {
	const char *kind;           /* "pyright" (basedpyright too) or "mypy" */
	const char *bin;            /* the checker, an absolute path */
	const char *python;         /* the interpreter the cell runs in */
	const char *config;         /* pyrightconfig.json's text (pyright) */
	const char *const *args;    /* its flags, NULL-terminated: mypy's, less the file
	                             * (the language server takes none) */
	const char *const *env;     /* NAME=VALUE for its environment, NULL-terminated */
};

/* The file a driver checks, in its work directory (the gate's name). */
#define CHECKD_DRV_CELL_FILE "_dolsot_cell.py"

struct checkd_drv;

/*
 * Start the checker for s in workdir (the driver's own, private).  Does
 * not wait for it: checkd_drv_check() does.  NULL with a reason in err.
 */
struct checkd_drv *checkd_drv_start(const struct checkd_drv_spec *s, const char *workdir,
                                    char *err, size_t errlen);

enum checkd_drv_result {
	CHECKD_DRV_OK,                  /* *code and *out as the command line's */
	CHECKD_DRV_TIMEOUT,             /* no answer by the deadline */
	CHECKD_DRV_BROKEN,              /* the checker died or spoke nonsense */
};

/*
 * Check text[0..len) as the cell file.  On CHECKD_DRV_OK, *code is the exit
 * status the command line would have had and *out (malloc'd,
 * NUL-terminated, *out_len bytes) its stdout.  After CHECKD_DRV_TIMEOUT or
 * CHECKD_DRV_BROKEN the driver must be stopped.
 */
enum checkd_drv_result checkd_drv_check(struct checkd_drv *d, const char *text, size_t len,
                                    const struct timespec *deadline, int *code,
                                    char **out, size_t *out_len);

/* The fds to watch between checks (up to 2, into p); their count. */
int checkd_drv_fds(const struct checkd_drv *d, struct pollfd *p);

/* Read what the checker said between checks (and answer what it asks).
 * false when it is gone or broken: stop it. */
bool checkd_drv_idle(struct checkd_drv *d);

/* The checker's resident memory in KiB, 0 when unknown. */
long checkd_drv_rss_kib(const struct checkd_drv *d);

/* Its process id (for tests and the man page's promise of replacing it). */
int checkd_drv_pid(const struct checkd_drv *d);

/* Kill the checker's process group, reap it, free d. */
void checkd_drv_stop(struct checkd_drv *d);

#endif
