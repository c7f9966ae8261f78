/*
 * lsp.h - the Language Server Protocol as the warm type checker speaks it
 * with pyright-langserver: JSON-RPC 2.0 messages, each framed by a
 * "Content-Length: N" header block, and the diagnostics a server
 * publishes, turned into the text the checker's command line prints.
 *
 * Everything read here comes from another program, so it is parsed as
 * hostile bytes (fuzzed by fuzz/fuzz_lsp.c): headers and bodies are
 * bounded, and a message that is not what it claims to be is refused.
 * Nothing here does I/O; checkd_drv.c moves the bytes.
 */
#ifndef DOLSOT_LSP_H
#define DOLSOT_LSP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* The longest header block and body a frame may have. */
#define LSP_MAX_HEADER 4096
#define LSP_MAX_BODY (64u << 20)

enum lsp_frame {
	LSP_FRAME_MORE,         /* no whole frame yet: read more */
	LSP_FRAME_OK,           /* *body_off, *body_len and *used are set */
	LSP_FRAME_BAD,          /* not a frame: the stream cannot be trusted */
};

/*
 * Look for one whole frame at the start of buf[0..len): its body is
 * buf[*body_off..*body_off + *body_len), and the frame ends at buf[*used].
 * Header names are case-insensitive; headers other than Content-Length
 * are ignored.
 */
enum lsp_frame lsp_frame_find(const char *buf, size_t len, size_t *body_off,
                              size_t *body_len, size_t *used);

/* msg as a frame: malloc'd, *len its length; NULL when out of memory. */
char *lsp_frame_encode(const json_t *msg, size_t *len);

enum lsp_kind {
	LSP_RESPONSE,           /* id, and result or error */
	LSP_REQUEST,            /* id and method: the server asks us */
	LSP_NOTIFICATION,       /* method only */
};

/* A decoded message; its pointers borrow from the root it came with. */
struct lsp_msg {
	enum lsp_kind kind;
	json_t *id;             /* responses and requests */
	const char *method;     /* requests and notifications */
	json_t *params;         /* may be NULL */
	json_t *result;         /* responses: NULL when it carried an error */
	bool error;
};

/*
 * Decode body[0..len) as one JSON-RPC 2.0 message.  Returns 0 with *root
 * (json_decref it) and *m set, or -1 when it is not one.
 */
int lsp_msg_decode(const char *body, size_t len, json_t **root, struct lsp_msg *m);

/*
 * The result of a textDocument/diagnostic request (a full report): set
 * *out to its diagnostics as pyright's --outputjson prints them for file
 * path (errors, warnings and informations; hints, which the command line
 * does not print, are left out) and *errors to the number of errors.
 * Returns 0, or -1 when the result is malformed or memory ran out.  *out
 * is malloc'd, NUL-terminated.
 */
int lsp_diagnostics(const json_t *result, const char *path, char **out, size_t *errors);

#endif
