/*
 * store_cmd.h - DOLSOT_STORE=cmd:PROGRAM [ARGS]: sessions kept by a store
 * helper program (store_cmd.c says what it is asked and must answer).
 */
#ifndef DOLSOT_STORE_CMD_H
#define DOLSOT_STORE_CMD_H

#include <stddef.h>

#include "store_ops.h"
#include "store_spec.h"

/*
 * A store over the helper sp names (sp->kind STORE_KIND_CMD).  dir (owned
 * from now on) gives this machine's session locks and the directory for
 * the warm server's socket.  Each run of the helper may take timeout
 * seconds.  Runs the helper once, asking "capabilities" (whether it
 * keeps units: then the store has store_ops.h's obj_* but obj_dir, and a
 * worker gets every unit packed); NULL with err when that run was killed
 * or answered nonsense, or out of memory.
 */
struct store *store_cmd_open(struct store *dir, const struct store_spec *sp,
                             double timeout, char *err, size_t errlen);

#endif
