/*
 * mem_server.h - DOLSOT_STORE=memory: sessions kept in the server's memory.
 *
 * The server holds a MemoryStore and answers WIRE_MEM_* requests from
 * mem_client.c.  A session lock belongs to a connection: granted with
 * WIRE_MEM_LOCKED, released when that connection closes (so a client killed
 * while holding it cannot wedge the session).
 */
#ifndef DOLSOT_MEM_SERVER_H
#define DOLSOT_MEM_SERVER_H

#include <stdbool.h>

#include "wire.h"

struct mem_server;

struct mem_server *mem_server_new(void);

/*
 * Handle one request on connection fd.  Returns true when the server must
 * keep watching fd (a lock held or awaited), false when fd can be closed.
 */
bool mem_server_handle(struct mem_server *sm, int fd, struct wire_msg *m);

/* Connection fd closed: release its lock or stop its wait. */
void mem_server_closed(struct mem_server *sm, int fd);

/* Number of sessions held. */
unsigned mem_server_count(struct mem_server *sm);

#endif
