/*
 * frame.h - the wire format between the dolsot parent and its worker.
 *
 * A frame is:
 *
 *   magic   4 bytes   "DLF1"
 *   kind    u32 LE    FRAME_REQUEST or FRAME_RESULT
 *   length  u64 LE    number of body bytes that follow
 *   body    fields, back to back, each:
 *             tag  u16 LE
 *             len  u64 LE  (bytes of data)
 *             data len bytes
 *
 * Unknown tags are rejected (both ends are the same binary).  A scalar field
 * (u64) has len 8.  The limits field holds, for each limit that is set,
 * its name (rlimits.h's limit_name) NUL and its value u64 LE (the encoder
 * writes them in kind order); an unknown, repeated or zero limit is rejected, as is an empty
 * field (no limit set means no field).  A field may appear once, except FT_TOOLBOX.  The decoder
 * never reads past the buffer, never trusts a length before checking it
 * against what is left and against FRAME_MAX, and returns -1 with a reason on
 * anything malformed: bad magic, wrong kind, truncated header or field, a
 * length that overruns, trailing bytes after the body, a repeated field, a
 * missing required field, a toolbox field without exactly one NUL separator.
 *
 * The session blob itself never travels in a frame: the worker reads it from
 * a file descriptor given next to the request (a request with REQ_SESSION
 * says how long it is, in its blob_len field) and writes the new one into
 * another (a result with RES_SAVE says how much it wrote, in blob_len).
 * A result with RES_SAVE must have a non-zero blob_len, one without must
 * have none, and likewise blob_len of a request without REQ_SESSION.
 *
 * Decoded spans point into the caller's buffer: the buffer must outlive them.
 * Nothing is NUL-terminated; use the lengths.
 */
#ifndef DOLSOT_FRAME_H
#define DOLSOT_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rlimits.h"

#define FRAME_MAGIC "DLF1"
#define FRAME_HEADER_LEN 16
/* No frame may be larger than this (header included): 4 GiB. */
#define FRAME_MAX ((uint64_t)1 << 32)
#define FRAME_MAX_TOOLBOXES 256

enum frame_kind {
	FRAME_REQUEST = 1,
	FRAME_RESULT = 2,
};

/* A view of bytes inside a frame buffer (or any buffer the caller owns). */
struct span {
	const uint8_t *p;
	size_t len;
	bool present;
};

struct toolbox_spec {
	struct span module;
	struct span alias;
};

/* What the parent asks of the worker: one cell. */
struct request {
	struct span code;                /* required */
	struct span session;             /* required: the id, for messages */
	uint64_t blob_len;               /* bytes of the session on the load fd
	                                  * (REQ_SESSION; 0 for a new session) */
	struct toolbox_spec toolboxes[FRAME_MAX_TOOLBOXES];
	size_t n_toolboxes;
	uint64_t max_output;             /* chars of value kept; 0 = no cap */
	uint64_t budget_ns;              /* time left for the worker when sent */
	uint64_t flags;                  /* REQ_* bits */
	/* The worker's whole environment, when it must not simply inherit the
	 * caller's (the warm path, a sandbox, --env): NAME=VALUE entries,
	 * NUL-separated. */
	struct span env;
	struct span cwd;                 /* the caller's working directory (warm path) */
	struct span ty_bin;              /* the type checker; absent = "ty" */
	/* Isolation (issue 5): the limits by kind (rlimits.h), 0 when not set.
	 * One field on the wire, keyed by each limit's name. */
	struct limits limits;
	struct span binds;               /* sandbox binds: host NUL path NUL mode NUL,
	                                  * repeated; mode "ro", "rw" or "overlay" */
	struct span pids_cgroup;         /* a cgroup directory the worker joins */
	struct span mem_cgroup;          /* another (memory), joined after it */
	struct span describe;            /* REQ_DESCRIBE: the --mount paths to
	                                  * list, path NUL mode NUL, repeated */
	struct span checkd;              /* the warm type checker's socket,
	                                  * DIR/NAME (checkd.h); absent: none */
	/* Where the session's units are (format v4, session.py): absent or
	 * empty, the store keeps whole sessions (the worker saves every unit
	 * with the head); "-", the store keeps units but the worker reads
	 * them only from the load's pack; else the store's objects
	 * directory, which the worker reads them from. */
	struct span units;
	/* The host tools the cell may call (issue 37): a JSON array of
	 * declarations, {"name", "description", "inputSchema",
	 * "outputSchema"}; absent: none.  Their calls go over the worker's
	 * tools fd (call_path.h), never over the cell's output. */
	struct span tools;
};

#define REQ_TYPECHECK  (1u << 0)
#define REQ_CARRY      (1u << 1)
#define REQ_SANDBOX    (1u << 2)
#define REQ_SESSION    (1u << 3)   /* the session exists: read blob_len bytes */
#define REQ_JSON       (1u << 4)   /* --json: fill the structured fields too */
#define REQ_DESCRIBE   (1u << 5)   /* --describe: run no cell, save nothing */
#define REQ_LIVE       (1u << 6)   /* --live: run in the session's live process (live.h) */

/* What the worker answers.  exit_code follows the dolsot contract. */
struct worker_result {
	int64_t exit_code;
	uint64_t flags;                  /* RES_* bits */
	struct span value;               /* repr of the last expression, if any */
	struct span error;               /* error line(s), no trailing newline */
	struct span held;                /* names, '\n'-separated, sorted */
	struct span dropped;             /* "name\treason" lines */
	struct span warnings;            /* extra stderr lines from the worker */
	uint64_t blob_len;               /* bytes of the new session written to
	                                  * the save fd; non-zero iff RES_SAVE */
	uint64_t save_errno;             /* non-zero: writing it failed with this */
	struct span limit;               /* the limit the cell hit ("memory", ...) */
	/* Structured detail (issue 12).  "Items" are NUL-terminated strings
	 * (span_next_item() walks them); "lines" are '\n'-separated. */
	uint64_t count;                  /* the session's cell counter, this cell's */
	struct span error_info;          /* items: ename, evalue, cell line or "",
	                                  * then traceback lines (REQ_JSON) */
	struct span hints;               /* items: hint lines of the error */
	struct span diagnostics;         /* items, 4 per diagnostic of a blocked
	                                  * cell: line, column, code, message */
	struct span displays;            /* items: per display "W\tH\tN", then N
	                                  * pairs of MIME type and payload */
	struct span timings;             /* lines "phase\tns"; "start" is the
	                                  * CLOCK_MONOTONIC time the worker began */
	struct span truncated;           /* lines "what\tkept\tcut" (chars) */
	struct span describe;            /* REQ_DESCRIBE: the text */
	struct span describe_json;       /* REQ_DESCRIBE: the same, as JSON */
	struct span kept;                /* "name\treason" lines: names the
	                                  * call could not load, kept unloaded */
};

#define RES_OK   (1u << 0)           /* the cell ran without raising */
#define RES_SAVE (1u << 1)           /* the save fd holds the new session state */
#define RES_RAN  (1u << 2)           /* the cell began to run */
#define RES_REJECTED (1u << 3)       /* the type gate blocked the cell */
#define RES_PROVISIONAL (1u << 4)    /* no answer: only held, what the session
                                      * held when the cell began, left for a
                                      * call that ends without one (a timeout,
                                      * a killed worker) */

/* A growable output buffer; frame_buf_release() frees it. */
struct frame_buf {
	uint8_t *data;
	size_t len;
	size_t cap;
};

/*
 * Encode r (or res) as one frame appended to an empty buf.  Returns 0, or -1
 * with errno set (ENOMEM, or EMSGSIZE when the frame would exceed FRAME_MAX).
 */
int frame_encode_request(struct frame_buf *buf, const struct request *r);
int frame_encode_result(struct frame_buf *buf, const struct worker_result *res);

/*
 * The i-th text field of a result, in the order of frame.c's table: its
 * span in *r, and *name, the name the worker's answer uses for it (see
 * worker.py's answer()).  NULL past the last.  worker.c fills a result by
 * these names, so a new text field needs no code there.
 */
struct span *frame_result_text(struct worker_result *r, size_t i, const char **name);

/*
 * Decode exactly one frame of the given kind occupying all of buf[0..len).
 * Returns 0 and fills *out, or -1 and writes a one-line reason (no newline)
 * into err.  *out's spans point into buf.
 */
int frame_decode_request(const uint8_t *buf, size_t len, struct request *out,
                         char *err, size_t errlen);
int frame_decode_result(const uint8_t *buf, size_t len,
                        struct worker_result *out, char *err, size_t errlen);

/*
 * Given the first bytes of a frame (at least FRAME_HEADER_LEN), return the
 * whole frame's length, or 0 when the header is invalid or claims more than
 * FRAME_MAX.  Lets a reader know when a frame is complete.
 */
uint64_t frame_total_len(const uint8_t *hdr, size_t len);

/*
 * Walk a list of NUL-terminated items (binds, env): *item gets the next one
 * (without its NUL) and *rest moves past it.  False at the end, and at a
 * last item without its NUL.
 */
bool span_next_item(struct span *rest, struct span *item);

/* Build a span over a NUL-terminated string (present = true). */
struct span span_str(const char *s);

void frame_buf_release(struct frame_buf *buf);

#endif
