/*
 * wire.h - messages on the warm path's unix sockets (SOCK_SEQPACKET, so
 * each message arrives whole), with file descriptors passed alongside.
 *
 * A message is a fixed header followed by a payload of at most
 * WIRE_MAX_PAYLOAD bytes:
 *
 *   magic u32 "DLW1" | type u16 | nfds u16 | a u64 | b u64 | len u32 | payload
 *
 * The meaning of a and b depends on the type.  Payloads that carry several
 * strings hold "key=value" entries separated by NUL bytes.
 */
#ifndef DOLSOT_WIRE_H
#define DOLSOT_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define WIRE_MAGIC 0x31574c44u   /* "DLW1" little-endian */
#define WIRE_MAX_PAYLOAD 65536
#define WIRE_MAX_FDS 8

enum wire_type {
	/* client -> server; fds: request memfd, result memfd, stdout, stderr,
	 * the file for the new session and, unless the session is new, the
	 * session's file; a: budget in ns; payload: the key */
	WIRE_CALL = 1,
	/* server -> client: run the cold path; payload: why (for tracing) */
	WIRE_FALLBACK,
	/* worker -> client: ready to run the cell, which waits for WIRE_GO; a:
	 * the worker's pid */
	WIRE_STARTED,
	/* zygote -> client: a: wait status, b: bit 0 set when the deadline
	 * killed it, the rest (b >> 1) how many of its processes did not die
	 * when killed */
	WIRE_STATUS,
	/* client -> server: describe yourself; reply WIRE_INFO with text */
	WIRE_INFO_REQ,
	WIRE_INFO,
	/* client -> server: stop; the server replies WIRE_STOPPING, then exits */
	WIRE_STOP,
	WIRE_STOPPING,
	/* server -> zygote: run a call; fds: the client's connection, then those
	 * of WIRE_CALL; a: budget in ns */
	WIRE_RUN,
	/* zygote -> server: ready; payload: "file=PATH\tMTIME_NS\tSIZE" entries */
	WIRE_READY,
	/* zygote -> server: could not start; payload: why; a: 1 + the index of
	 * the key's preload module to blame, or 0 */
	WIRE_FAILED,
	/* DOLSOT_STORE=memory, client -> server, payload "id=ID" unless noted:
	 * LOAD (reply BLOB: a = 1 and a memfd when found), SAVE (+ a memfd, a =
	 * 1 when a sandboxed call wrote it; reply OK), ORIGIN (reply OK, a = 1
	 * when the session was last written by a sandboxed call), DEL (id may be "all"; reply OK, a = removed), LIST (no
	 * payload; reply BLOB with a memfd of "ID\tSIZE\tSEC.NSEC" lines), LOCK
	 * (reply LOCKED when granted; held until the connection closes; ERR
	 * with a = 1 when busy).
	 * Any of them may be answered ERR with the reason as payload. */
	WIRE_MEM_LOAD,
	WIRE_MEM_SAVE,
	WIRE_MEM_DEL,
	WIRE_MEM_LIST,
	WIRE_MEM_LOCK,
	WIRE_MEM_BLOB,
	WIRE_MEM_OK,
	WIRE_MEM_LOCKED,
	WIRE_MEM_ERR,
	WIRE_MEM_ORIGIN,
	/* worker -> warm checker daemon (checkd.c): check a cell; a: budget in
	 * ns; fds: a memfd with the file's text; payload: the checker's spec
	 * ("kind", "bin", "python", "config", "arg" and "env" entries) */
	WIRE_CHECK,
	/* checker daemon -> worker: a: a checkd_status, b: the exit status
	 * the checker's command line would have had; fds: a memfd with its
	 * output (CHECKD_ANSWERED only) */
	WIRE_CHECKED,
	/* client -> checker daemon: exit (it is evicted) */
	WIRE_CHECKD_QUIT,
	/* client -> worker, in answer to WIRE_STARTED: run the cell; from here
	 * on no fallback (a client that gives up before it closes instead,
	 * and the worker exits without running anything) */
	WIRE_GO,
	/* server -> zygote: fork a zygote for the key in the payload (the same
	 * environment, more of a session's modules), which talks to the server
	 * over the one fd, a socket; it reports WIRE_READY or WIRE_FAILED
	 * there as any zygote does */
	WIRE_GROW,
	/* DOLSOT_STORE=memory's units (mem_server.c), client -> server; a: the
	 * op (enum wire_mem_unit), payload "hash=HEX" unless noted: HAS (reply
	 * OK, a = 1 when kept), PUT (+ a memfd of its bytes; reply OK), READ
	 * (reply BLOB, a = 1 and a memfd when kept), DEL (+ "units=INC:TOKEN",
	 * the exclusive units lock's grant; reply OK), LIST (no payload; reply
	 * BLOB with a memfd of every hash, 32 bytes each), PACK ("id=ID" and
	 * the session's lock as LOAD's, + a memfd of its verified head: the
	 * server appends a pack entry per ref; reply OK, a = the new length).
	 * Any of them may be answered ERR with the reason as payload. */
	WIRE_MEM_UNIT,
	/* client -> server: the units lock, a = enum store_gc_lock's
	 * STORE_GC_SHARED or STORE_GC_EXCLUSIVE; reply LOCKED (a = the
	 * incarnation, b = the grant's token), held until the connection
	 * closes */
	WIRE_MEM_UNITS_LOCK,
	/* spare -> zygote, its first word: a = the pid of its memory's holder
	 * (holder.h), 0 when it has none */
	WIRE_HOLDER,
	WIRE_TYPE_MAX,
};

enum wire_mem_unit {
	WIRE_UNIT_HAS = 1,
	WIRE_UNIT_PUT,
	WIRE_UNIT_READ,
	WIRE_UNIT_DEL,
	WIRE_UNIT_LIST,
	WIRE_UNIT_PACK,
};

/*
 * A received message.  Its payload is on the heap, as long as it arrived
 * (NULL when empty); wire_msg_release() frees it and closes the fds still
 * held.  A message wire_recv() did not fill (it returned 0 or -1) holds
 * nothing, so releasing it is harmless.
 */
struct wire_msg {
	uint16_t type;
	uint64_t a, b;
	uint8_t *payload;
	size_t len;
	int fds[WIRE_MAX_FDS];
	size_t nfds;
	pid_t pid;      /* the sender's pid in this process's pid namespace,
	                 * when the socket has SO_PASSCRED; 0 otherwise */
};

/*
 * Send one message with fds (which stay open here).  Returns 0, or -1 with
 * errno set.
 */
int wire_send(int sock, uint16_t type, uint64_t a, uint64_t b,
              const void *payload, size_t len, const int *fds, size_t nfds);

/*
 * Receive one message into *m (whatever it held is overwritten, not
 * released).  Returns 1 with *m filled (received fds are CLOEXEC and owned
 * by the caller, the payload too: wire_msg_release), 0 at end of stream,
 * or -1 with errno set (EBADMSG for a malformed message, ENOMEM); after 0
 * or -1, *m holds nothing and any fds that came are closed.
 */
int wire_recv(int sock, struct wire_msg *m);

/* Decode a header+payload buffer as received (m->nfds says how many fds
 * came with it); 0 with m's payload a heap copy (wire_msg_release), or -1
 * (EBADMSG, ENOMEM) with nothing allocated. */
int wire_decode(const uint8_t *buf, size_t len, struct wire_msg *m);

/* Close every fd in m and mark them taken; the payload stays. */
void wire_close_fds(struct wire_msg *m);

/* Close m's fds and free its payload; m is then empty. */
void wire_msg_release(struct wire_msg *m);

/*
 * Find "key=" in a NUL-separated payload of len bytes, starting at *pos (0
 * for the start).  Returns the value (NUL-terminated inside the payload)
 * and advances *pos, or NULL when there is no further entry with that key.
 * The payload must end with a NUL; wire_decode guarantees it.
 */
const char *wire_next(const uint8_t *payload, size_t len, const char *key, size_t *pos);

/* Append "key=value\0" to buf (capacity WIRE_MAX_PAYLOAD); -1 if full. */
int wire_put(uint8_t *buf, size_t *len, const char *key, const char *value);

#endif
