/*
 * http_route.h - what `dolsot mcp --http` reads of a request itself,
 * beside libmicrohttpd's parsing: the listen address, the Accept and
 * Content-Type values it decides on, the Origin it allows, and the
 * session ids it issues and takes.  Reads untrusted bytes;
 * fuzz/fuzz_http.c is its harness.
 */
#ifndef DOLSOT_HTTP_ROUTE_H
#define DOLSOT_HTTP_ROUTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define HTTP_SESSION_HEADER "Mcp-Session-Id"
#define HTTP_VERSION_HEADER "MCP-Protocol-Version"
/* A session id: 64 random bits and 64 of a keyed SHA-256 of them and the
 * tenant, in hex, so that every server with the same key (all of one
 * deployment: the same token file) knows an id for the tenant's as its
 * own, and no other tenant's. */
#define HTTP_SESSION_ID_LEN 32
#define HTTP_KEY_LEN 32

struct http_addr {
	struct sockaddr_storage sa;
	socklen_t len;
	bool loopback;              /* 127.0.0.0/8, ::1, or a unix socket */
};

/* HOST:PORT (numeric IPv4), [IPv6]:PORT, or a unix socket's path (starts
 * with '/'); "localhost" is 127.0.0.1.  0, or -1 with why in err. */
int http_parse_listen(const char *s, struct http_addr *a, char *err, size_t errlen);
/* Whether an Accept value (NULL: none) names type, or a wildcard for it. */
bool http_accepts(const char *accept, const char *type);
/* Whether a Content-Type value is application/json (parameters aside). */
bool http_is_json(const char *content_type);
/* Whether an Origin value is a loopback one (http or https, any port):
 * a page elsewhere must not reach a local server (DNS rebinding). */
bool http_origin_allowed(const char *origin);
/* Whether s is a session id made with key for tenant (NULL: none). */
bool http_session_id_valid(const char *s, const unsigned char *key, const char *tenant);
/* An SSE event's id: TAG-STREAM-SEQ, TAG the HTTP_EVENT_TAG_LEN hex
 * digits a session's streams share (random: another session's ids are
 * not its), STREAM the stream's number in the session, SEQ the event's
 * in the stream (both from 1, decimal). */
#define HTTP_EVENT_TAG_LEN 16
#define HTTP_EVENT_ID_MAX (HTTP_EVENT_TAG_LEN + 2 + 10 + 20 + 1)

struct http_event_id {
	char tag[HTTP_EVENT_TAG_LEN + 1];
	unsigned stream;
	uint64_t seq;
};

/* A new random tag into tag.  0, or -1 with errno set. */
int http_event_tag(char tag[HTTP_EVENT_TAG_LEN + 1]);
/* A Last-Event-ID value read into *e: false when it is not such an id. */
bool http_event_id_parse(const char *s, struct http_event_id *e);
/* A new session id for tenant into buf (at least HTTP_SESSION_ID_LEN + 1
 * bytes).  0, or -1 with errno set. */
int http_session_id(char *buf, size_t size, const unsigned char *key, const char *tenant);

#endif
