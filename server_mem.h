/*
 * server_mem.h - DOLSOT_STORE=memory: sessions kept in the server's memory.
 *
 * The server holds a MemoryStore and answers WIRE_MEM_* requests from
 * store_remote.c.  A session lock belongs to a connection: granted with
 * WIRE_MEM_LOCKED, released when that connection closes (so a client killed
 * while holding it cannot wedge the session).
 */
#ifndef DOLSOT_SERVER_MEM_H
#define DOLSOT_SERVER_MEM_H

#include <stdbool.h>

#include "wire.h"

struct server_mem;

struct server_mem *server_mem_new(void);

/*
 * Handle one request on connection fd.  Returns true when the server must
 * keep watching fd (a lock held or awaited), false when fd can be closed.
 */
bool server_mem_handle(struct server_mem *sm, int fd, struct wire_msg *m);

/* Connection fd closed: release its lock or stop its wait. */
void server_mem_closed(struct server_mem *sm, int fd);

/* Number of sessions held. */
unsigned server_mem_count(struct server_mem *sm);

#endif
