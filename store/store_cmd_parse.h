/*
 * store_cmd_parse.h - what a store helper prints (store_cmd.c), parsed:
 * untrusted bytes, bounded and checked (fuzz/fuzz_store_cmd.c).
 */
#ifndef DOLSOT_STORE_CMD_PARSE_H
#define DOLSOT_STORE_CMD_PARSE_H

#include <stddef.h>

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

#endif
