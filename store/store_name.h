/*
 * store_name.h - session ids, the names FileStore gives the files in a
 * session directory, told apart from any other entry there.
 *
 *   ID.pkl            a session
 *   .ID.XXXXXX.tmp    a save in progress (X: [A-Za-z0-9])
 *   ID.lock           the session's lock
 *   ID.sandboxed      the session was last written by a sandboxed call
 *
 * A name is ours only when ID is a valid session id; everything else in the
 * directory is left alone.
 */
#ifndef DOLSOT_STORE_NAME_H
#define DOLSOT_STORE_NAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store_ops.h"

#define STORE_TEMP_RAND_LEN 6
/* ".ID.XXXXXX.tmp" is the longest name, plus its NUL. */
#define STORE_NAME_MAX (STORE_ID_MAX + STORE_TEMP_RAND_LEN + 8)

enum store_name_kind {
	STORE_NAME_OTHER,
	STORE_NAME_SESSION,
	STORE_NAME_TEMP,
	STORE_NAME_LOCK,
	STORE_NAME_MARK,
};

/*
 * Classify a directory entry (a NUL-terminated name).  For any kind but
 * STORE_NAME_OTHER, id (STORE_ID_MAX + 1 bytes) gets the session id.
 */
enum store_name_kind store_name_kind(const char *name, char *id);

/*
 * A stored session's name: ID (the default namespace's, every session made
 * before namespaces) or NS+ID (ID of namespace NS), at most STORE_ID_MAX
 * bytes.  ID and NS are each 1.. bytes of [A-Za-z0-9._-], not starting
 * with '.' (a name becomes a file name, ID.pkl, so it is restricted to a
 * portable, shell-safe set that cannot name a path, a dot file or "..").
 * Returns true when id is valid; else false and a reason in err.
 */
bool store_id_valid(const char *id, char *err, size_t errlen);

/* The namespace that has no prefix: today's, the CLI's default. */
#define STORE_NS_DEFAULT "default"
/* A namespace's name is at most this long. */
#define STORE_NS_MAX 32
/* What joins a namespace and an id in a stored name: no id holds it. */
#define STORE_NS_SEP '+'

/*
 * A session id or a namespace as a caller gives it (what says which in
 * err): 1..max bytes of [A-Za-z0-9._-], not starting with '.'.
 */
bool store_part_valid(const char *part, const char *what, size_t max, char *err,
                      size_t errlen);

/*
 * The stored name of session id in namespace ns (NULL or "default": id
 * itself) into out (STORE_ID_MAX + 1 bytes).  0, or -1 with err when id
 * is no valid id or the two are too long together.
 */
int store_ns_name(const char *ns, const char *id, char *out, char *err, size_t errlen);

/* Whether ns is the default namespace (NULL, "" or STORE_NS_DEFAULT). */
bool store_ns_is_default(const char *ns);

/* Whether the stored name is one of namespace ns's (NULL: the default). */
bool store_ns_holds(const char *ns, const char *stored);

/* The session id part of a stored name (what follows NS+, or all of it). */
const char *store_ns_id(const char *stored);

/* A message naming stored names rewritten in place (text: a buffer of len
 * bytes) as namespace ns's callers know them: 'NS+ID' as 'ID', and a
 * command "--reset NS+ID" as "--namespace NS --reset ID" (when it fits). */
void store_ns_unname(char *text, size_t len, const char *ns);

/*
 * A save counter recorded as text beside a session (store_ops.h's
 * store_mark.seq: FileStore's ID.lock, Redis's seq field): text[0..len),
 * decimal digits only, no more than UINT64_MAX.  Anyone who can write the
 * store writes these bytes: anything else is 0, none recorded.
 */
uint64_t store_name_seq(const char *text, size_t len);

#endif
