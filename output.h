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
 * What sees a stream's bytes as they are read, before any cap (the
 * streaming of call/stream.h), or NULL.
 */
struct capture;
struct capture_tap {
	void (*feed)(struct capture_tap *tap, const struct capture *c, const char *buf,
	             size_t n);
	/* At most ms (-1: no limit), or the ms until tick has work. */
	int (*wait_ms)(struct capture_tap *tap, int ms);
	void (*tick)(struct capture_tap *tap);
};

/*
 * Keeps the head and the tail of a stream within a cap of characters
 * (UTF-8 code points; a byte that is not part of one counts as one): the
 * first cap/2 and the last cap - cap/2, and counts what is cut between
 * them.  cap 0 keeps everything.  Memory stays within about 12 * cap
 * bytes.  capture_finish, after the last feed, makes data the text to
 * show: the whole stream, or, when it was cut, the head (ending at a line
 * break where one is in its second half), a marker line saying what was
 * kept and cut, and the tail (starting after a line break where one is in
 * its first half), never cutting a character in two.
 */
struct capture {
	char *data;              /* the head; after capture_finish, the text */
	size_t len;
	size_t alloc;
	uint64_t cap;            /* chars kept at most, 0 = all */
	uint64_t chars;          /* chars kept (the head's until finished) */
	unsigned need;           /* continuation bytes the last lead byte wants */
	uint64_t total;          /* bytes seen */
	uint64_t cut_chars;      /* chars cut between head and tail (finished) */
	bool truncated;          /* more than cap chars came */
	bool head_full;          /* the rest goes to the tail's window */
	bool finished;
	char *rest;              /* the last bytes after the head (a window) */
	size_t rest_len, rest_alloc;
	uint64_t rest_bytes, rest_chars;  /* seen after the head */
	/* After capture_finish of a cut stream: what data holds. */
	uint64_t head_chars, tail_chars, cut_bytes;
	size_t head_len, mark_len; /* data: head_len bytes, the marker's, the tail */
	struct capture_tap *tap;
};

void capture_init(struct capture *c, uint64_t cap);
/* Returns 0, or -1 with errno ENOMEM. */
int capture_feed(struct capture *c, const void *buf, size_t n);
/* After the last feed (again: nothing); returns 0, or -1 with errno
 * ENOMEM (data is then the head alone). */
int capture_finish(struct capture *c);
void capture_release(struct capture *c);

/* For the poll loop that reads a capture's pipe: how long it may wait
 * (ms, or less when c's tap has work due), and the tap's work. */
int capture_tap_wait(const struct capture *c, int ms);
void capture_tap_tick(const struct capture *c);

/* Bytes the result owns (malloc'd), with their length. */
struct owned {
	char *p;
	size_t len;
};

/* How a call ended, in --json's words (dolsot(1), JSON OUTPUT). */
enum result_status {
	STATUS_OK,
	STATUS_ERROR,
	STATUS_TIMEOUT,
	STATUS_KILLED,                /* a limit, or the worker died */
	STATUS_REJECTED,              /* the type gate blocked the cell */
};

enum { TIMING_STARTUP, TIMING_LOAD, TIMING_GATE, TIMING_CELL, TIMING_DUMP,
       TIMING_SAVE, TIMING_TOTAL, N_TIMINGS };

/* An image file written for the text contract (display_files.h). */
struct shown_file {
	char *path;
	unsigned width, height;
};

/* The type gate as a call found it (typegate.h's typegate_choose). */
#define GATE_NOTE_MAX 256
struct gate_state {
	bool asked;              /* DOLSOT_TYPECHECK=1 */
	char checker[128];       /* what checks the cell; "": nothing (the gate is off) */
	char note[GATE_NOTE_MAX]; /* why it is off, or why another checker than the
	                          * configured one runs; "" when neither */
};

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
	/* The structured detail --json shows (frame.h says each form). */
	enum result_status status;
	bool found;              /* the session existed before the call */
	bool ran;                /* the cell began to run (or may have) */
	uint64_t count;          /* the session's cell counter; 0 = unknown */
	char *limit;             /* the limit the cell hit, or NULL */
	struct owned error_info; /* items: ename, evalue, line, traceback... */
	struct owned hints;      /* items */
	struct owned diagnostics; /* items, 4 per diagnostic */
	struct owned displays;   /* items, see frame.h */
	struct owned truncated;  /* "what\tkept\tcut" lines */
	struct owned describe;   /* --describe's text */
	struct owned describe_json;
	double timings_ms[N_TIMINGS]; /* < 0: the phase did not happen */
	struct shown_file *files; /* images written for the text contract */
	size_t n_files;
	/* A --call-id's result as recorded (recall.h): when said, the call
	 * prints these bytes (said_json under --json) instead of rendering. */
	struct owned said_out, said_err, said_json;
	bool said;
	bool replayed;           /* said repeats an earlier call: no cell ran */
	struct gate_state gate;  /* the type gate's checker, or why there is none */
};

/* The name of each timing in --json ("startup", "load", ...). */
extern const char *const result_timing_names[N_TIMINGS];

/* --describe's line for the type gate (nothing when it was not asked for). */
void output_describe_gate(const struct gate_state *g, FILE *out);

void result_init(struct result *r, uint64_t max_output);
void result_release(struct result *r);

/* Append a line to r's warnings (kept as they are when out of memory). */
void result_warn(struct result *r, const char *line);

/*
 * How every line dolsot writes on stderr starts (NULL-terminated).  A
 * line of the cell's own stderr, or of a message it wrote, that starts
 * with one of them is shown after OUTPUT_MARK, so that a host can tell
 * dolsot's lines from the cell's (issue 35).
 */
extern const char *const output_own_prefixes[];
#define OUTPUT_MARK "  "

/*
 * Write r to out and err as the output contract says; the cell's stderr
 * lines that look like dolsot's are marked (output_own_prefixes).  Returns 0, or -1
 * when a write failed (errno set).
 */
int output_render(const struct result *r, FILE *out, FILE *err);

#endif
