/*
 * mem_client.h - DOLSOT_STORE=memory from the client: the store is the
 * warm server's memory (mem_server.c), reached over its socket.
 */
#ifndef DOLSOT_MEM_CLIENT_H
#define DOLSOT_MEM_CLIENT_H

#include <stddef.h>

#include "store_ops.h"

/*
 * A store over the server whose socket is in dir's directory; takes
 * ownership of dir (a FileStore), whose home it keeps.  It connects per
 * operation, so it opens whether or not a server runs (operations fail
 * with "the memory store is gone" while none does).  NULL with a reason in
 * err (errlen bytes) when out of memory.
 */
struct store *mem_client_open(struct store *dir, char *err, size_t errlen);

#endif
