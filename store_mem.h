/*
 * store_mem.h - MemoryStore: sessions in a table in this process, no TTL.
 * The warm server keeps DOLSOT_STORE=memory sessions in one
 * (mem_server.c); the tests run the store suite over it too.
 */
#ifndef DOLSOT_STORE_MEM_H
#define DOLSOT_STORE_MEM_H

#include "store_ops.h"

/* A new, empty table; its home is -1.  NULL when out of memory. */
struct store *store_mem_open(void);

#endif
