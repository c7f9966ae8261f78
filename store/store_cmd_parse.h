/*
 * store_cmd_parse.h - what a store helper prints (store_cmd.c), parsed:
 * untrusted bytes, bounded and checked (fuzz/fuzz_store_cmd.c).
 */
#ifndef DOLSOT_STORE_CMD_PARSE_H
#define DOLSOT_STORE_CMD_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "store_ops.h"

/* The longest LAST_USED, in seconds since the epoch, taken (year ~5000). */
#define STORE_CMD_TIME_MAX 95617584000LL

/*
 * The output of "delete ID" or "delete all": a decimal count (at most
 * UINT_MAX), optionally followed by one newline, nothing else.  0 or -1.
 */
int store_cmd_parse_count(const char *out, size_t len, unsigned *count);

/*
 * The output of "list": lines "ID SIZE LAST_USED", fields apart by one or
 * more blanks, ID a valid session id, SIZE a decimal byte count,
 * LAST_USED seconds since the epoch (decimal, at most 9 digits after a
 * point); the last newline may be missing; no output is no sessions.
 * *out (malloc'd, sorted by id; caller frees) and *n.  Returns 0, or -1
 * with err saying which line is wrong and why (an id listed twice too).
 */
int store_cmd_parse_list(const char *out, size_t len, struct session_info **infos,
                         size_t *n, char *err, size_t errlen);

/* What "capabilities" may answer (store_cmd_parse_caps). */
#define STORE_CMD_CAP_UNITS 1u          /* "units": it keeps units by hash */
#define STORE_CMD_CAP_UNITS_LOCK 2u     /* "units-lock": it has the units lock */

/*
 * The output of "capabilities": words apart by blanks or newlines, each
 * of printable ASCII; those known set their STORE_CMD_CAP_ bit in *caps,
 * others are ignored (a later dolsot's).  No output: none.  0, or -1
 * when a byte is not printable ASCII, a blank or a newline.
 */
int store_cmd_parse_caps(const char *out, size_t len, unsigned *caps);

/*
 * The output of "unit-list": lines of 64 lowercase hex digits (a unit's
 * SHA-256), the last newline optional; no output is no units.  *hashes
 * (malloc'd, n * STORE_HASH_LEN bytes, sorted; NULL when none) and *n.
 * 0, or -1 with err saying which line is wrong and why (a unit listed
 * twice too).
 */
int store_cmd_parse_hashes(const char *out, size_t len, uint8_t **hashes, size_t *n,
                           char *err, size_t errlen);

#endif
