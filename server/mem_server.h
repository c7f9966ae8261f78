/*
 * mem_server.h - DOLSOT_STORE=memory: sessions kept in the server's memory.
 *
 * The server holds a MemoryStore and answers WIRE_MEM_* requests from
 * mem_client.c.  A session lock belongs to a connection: granted with
 * WIRE_MEM_LOCKED, released when that connection closes (so a client killed
 * while holding it cannot wedge the session).
 *
 * Each mem_server is one incarnation of the memory store, with a random
 * id: a grant carries it and a token, and the requests of a call that
 * holds a lock carry both back, so a call that locked in an earlier
 * incarnation (the server died and another took its place) is refused
 * instead of writing into sessions it never locked.  The ids (never the
 * contents) of the sessions an incarnation holds are kept in
 * MEM_SERVER_IDS_FILE in the store directory; the next incarnation reads
 * them as lost, so a call on one of them is told the session is gone
 * rather than starting it empty.
 */
#ifndef DOLSOT_MEM_SERVER_H
#define DOLSOT_MEM_SERVER_H

#include <stdbool.h>
#include <stdint.h>

#include "wire.h"

/* Locks held or awaited at once; one more is refused as busy (a lock
 * connection stays open while held or awaited: the server keeps this many
 * fds for them). */
#define MEM_SERVER_MAX_LOCKS 1024
/* The ids file, next to the server's socket; lines in mem_list.h's format
 * (size 0; time 0 for a session held, else when it was lost). */
#define MEM_SERVER_IDS_FILE ".memory-sessions"
/* Lost ids remembered, the most recently lost first. */
#define MEM_SERVER_LOST_MAX 4096

struct mem_server;

/*
 * A new incarnation, keeping its ids file in dirfd (-1: none; not owned).
 * The sessions the last one held are lost as of now.  NULL when out of
 * memory.
 */
struct mem_server *mem_server_new(int dirfd);

/*
 * Handle one request on connection fd.  Returns true when the server must
 * keep watching fd (a lock held or awaited; at most MEM_SERVER_MAX_LOCKS
 * at once), false when fd can be closed.
 */
bool mem_server_handle(struct mem_server *sm, int fd, struct wire_msg *m);

/* Connection fd closed: release its lock or stop its wait. */
void mem_server_closed(struct mem_server *sm, int fd);

/* Number of sessions held. */
unsigned mem_server_count(struct mem_server *sm);

/* Number of units held (each once, for every session), and of units
 * stored since the incarnation began. */
void mem_server_units(struct mem_server *sm, unsigned *held, uint64_t *stored);

/* Free everything (the tests; the server just exits). */
void mem_server_free(struct mem_server *sm);

#endif
