/*
 * peer.h - who is at the other end of a Unix socket.
 *
 * The warm server runs code for whoever connects.  The socket lives in the
 * store directory, which a --mount could show inside a sandbox, so the uid
 * alone does not say the caller is outside: a sandboxed cell has the
 * caller's uid.  A peer is ours only when it is also in our user, mount
 * and pid namespaces.
 */
#ifndef DOLSOT_PEER_H
#define DOLSOT_PEER_H

#include <stdbool.h>

/*
 * True when the process that connected sock (SO_PEERCRED) has our
 * effective uid and shares our user, mount and pid namespaces.  A peer
 * whose pid we cannot see (another pid namespace), that is gone, or whose
 * namespaces cannot be read is refused.
 */
bool peer_is_ours(int sock);

#endif
