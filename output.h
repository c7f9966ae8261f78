/*
 * output.h - capturing a cell's streams within a cap, and rendering a call's
 * result as the output contract: stdout gets the cell's stdout then the
 * value; stderr gets the cell's stderr then dolsot's own lines.
 */
#ifndef DOLSOT_OUTPUT_H
#define DOLSOT_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum dolsot_exit {
	DOLSOT_EXIT_OK = 0,
	DOLSOT_EXIT_FAIL = 1,
	DOLSOT_EXIT_USAGE = 2,
	DOLSOT_EXIT_TIMEOUT = 124,
};

/*
 * Keeps the first cap characters (UTF-8 code points; a byte that is not part
 * of one counts as one) of a stream and counts the rest.  cap 0 keeps
 * everything.  Memory never exceeds about 4 * cap bytes.
 */
struct capture {
	char *data;
	size_t len;
	size_t alloc;
	uint64_t cap;            /* chars kept at most, 0 = all */
	uint64_t chars;          /* chars kept */
	unsigned need;           /* continuation bytes the last lead byte wants */
	uint64_t total;          /* bytes seen */
	bool truncated;
};

void capture_init(struct capture *c, uint64_t cap);
/* Returns 0, or -1 with errno ENOMEM. */
int capture_feed(struct capture *c, const void *buf, size_t n);
void capture_release(struct capture *c);

/* What one call produced; see repl.h for how it is filled. */
struct result {
	int exit_code;
	bool saved;              /* the session now holds the new state */
	struct capture out;      /* the cell's stdout */
	struct capture err;      /* the cell's stderr */
	char *value;             /* repr of the last expression, or NULL */
	size_t value_len;
	char *error;             /* error line(s), or NULL */
	char *held;              /* names, '\n'-separated */
	char *dropped;           /* "name\treason" lines, or NULL */
	char *kept;              /* "name\treason" lines of names kept
	                          * unloaded (the warnings say so), or NULL */
	char *warnings;          /* lines from the worker, or NULL */
	char *save_error;        /* why the save failed, or NULL */
	const char *session;
};

void result_init(struct result *r, uint64_t max_output);
void result_release(struct result *r);

/*
 * Write r to out and err as the output contract says.  Returns 0, or -1
 * when a write failed (errno set).
 */
int output_render(const struct result *r, FILE *out, FILE *err);

#endif
