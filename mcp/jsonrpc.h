/*
 * jsonrpc.h - JSON-RPC 2.0 messages, one per line (the framing MCP's stdio
 * transport uses): splitting a byte stream into lines within a bound,
 * checking one line is a well-formed message, and writing responses,
 * errors and notifications as single lines.  Reads untrusted bytes;
 * fuzz/fuzz_jsonrpc.c is its harness.
 */
#ifndef DOLSOT_JSONRPC_H
#define DOLSOT_JSONRPC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* The standard error codes. */
enum {
	JSONRPC_PARSE_ERROR = -32700,
	JSONRPC_INVALID_REQUEST = -32600,
	JSONRPC_METHOD_NOT_FOUND = -32601,
	JSONRPC_INVALID_PARAMS = -32602,
	JSONRPC_INTERNAL_ERROR = -32603,
};

/*
 * The line splitter.  jsonrpc_feed() takes bytes up to the end of one line
 * at most and says how many it took; jsonrpc_next() then hands out that
 * line, or reports a line longer than max bytes, which is dropped as it
 * arrives (never held whole) and reported once.  Feed again only after
 * jsonrpc_next() said NONE: events come out in the order of the input.
 */
struct jsonrpc_reader {
	char *buf;
	size_t len, cap;
	size_t max;
	int ready;               /* the event held (enum jsonrpc_line) */
	bool handed;             /* the held line was handed out */
	bool skipping;           /* inside an oversize line, up to its newline */
};

enum jsonrpc_line { JSONRPC_LINE_NONE, JSONRPC_LINE, JSONRPC_LINE_OVERSIZE };

void jsonrpc_reader_init(struct jsonrpc_reader *r, size_t max);
void jsonrpc_reader_release(struct jsonrpc_reader *r);
/* Bytes of p[0..n) taken (0 while an event is held), or -1 with errno
 * ENOMEM. */
long jsonrpc_feed(struct jsonrpc_reader *r, const void *p, size_t n);
/* The held line, without its newline (or "\r\n"), valid until the next
 * feed; NONE when no event is held. */
enum jsonrpc_line jsonrpc_next(struct jsonrpc_reader *r, const char **line, size_t *len);
/* At end of input: the unterminated last line, as a line (NONE if none). */
enum jsonrpc_line jsonrpc_rest(struct jsonrpc_reader *r, const char **line, size_t *len);

enum jsonrpc_kind { JSONRPC_REQUEST, JSONRPC_NOTIFICATION, JSONRPC_RESPONSE,
                   JSONRPC_BATCH };

/* One parsed message.  root owns everything; the rest point into it. */
struct jsonrpc_msg {
	enum jsonrpc_kind kind;
	json_t *root;
	json_t *id;              /* a string or integer; NULL in a notification */
	const char *method;      /* NULL in a response */
	json_t *params;          /* an object or array, or NULL */
};

/* Why a line is not a message: the code, a reason, and the id when one
 * could be read (else NULL: the error goes out with "id": null). */
struct jsonrpc_fault {
	int code;
	char message[160];
	json_t *id;              /* a new reference, or NULL */
};

/*
 * Parse one line.  Returns 0 with *m filled (release with
 * jsonrpc_msg_release), or -1 with *f filled (release f->id).  A batch, a
 * non-empty array, comes back as JSONRPC_BATCH with only root set: each of
 * its elements is then parsed with jsonrpc_parse_value.
 */
int jsonrpc_parse(const char *line, size_t len, struct jsonrpc_msg *m,
                  struct jsonrpc_fault *f);
/* The same for a value already parsed (an element of a batch, where an
 * array is refused); takes v's reference. */
int jsonrpc_parse_value(json_t *v, struct jsonrpc_msg *m, struct jsonrpc_fault *f);
void jsonrpc_msg_release(struct jsonrpc_msg *m);

/*
 * Each returns one message as a malloc'd line ending in '\n' (*len bytes
 * with it), or NULL with errno ENOMEM.  id may be NULL (sent as null).
 * jsonrpc_result_raw splices result, the text of one JSON value the
 * caller vouches for, as the result.
 */
char *jsonrpc_result(const json_t *id, const json_t *result, size_t *len);
char *jsonrpc_result_raw(const json_t *id, const char *result, size_t n, size_t *len);
char *jsonrpc_error(const json_t *id, int code, const char *message, size_t *len);
char *jsonrpc_notification(const char *method, const json_t *params, size_t *len);

#endif
