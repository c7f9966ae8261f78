/*
 * mem_list.h - the session list the warm server hands mem_client.c under
 * DOLSOT_STORE=memory: one "ID<TAB>SIZE<TAB>SEC.NSEC" line per session.
 * Both directions live here, so the format is written down once.
 */
#ifndef DOLSOT_MEM_LIST_H
#define DOLSOT_MEM_LIST_H

#include <stddef.h>
#include <stdio.h>

#include "store_ops.h"

/* Write n entries to f.  Returns 0, or -1 when writing failed. */
int mem_list_format(FILE *f, const struct session_info *info, size_t n);

/*
 * Parse len bytes of list text into *out (malloc'd; free it) and *n.
 * Lines that are not a valid entry (a bad id, a number out of range,
 * anything extra) are skipped.  Returns 0, or -1 (ENOMEM) with *out NULL.
 */
int mem_list_parse(const char *text, size_t len, struct session_info **out, size_t *n);

#endif
