/*
 * warm_proto.h - the warm path's protocol, shared by its client (warm.c),
 * the memory store's client and the daemon (server.c, zygote.c).
 *
 * Where the server listens and how a fresh exec of dolsot is handed its
 * store, which build a server serves, and the zygote key: what picks and
 * prepares a zygote, encoded by the client into a WIRE_CALL's payload and
 * decoded by the server, both through struct warm_key.  The messages
 * themselves are wire.c's.
 */
#ifndef DOLSOT_WARM_PROTO_H
#define DOLSOT_WARM_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* In the store directory: the socket, and the lock a server (or one that
 * is starting) holds for as long as it lives. */
#define WARM_SOCKET ".server.sock"
#define WARM_LOCK ".server.lock"

/*
 * How a client hands over to a fresh exec of dolsot as the server:
 * argv[0] is WARM_ARGV0 and argv[1] the idle seconds; the store directory
 * is open on WARM_DIR_FD, a memfd on WARM_KEY_FD holds the key to warm
 * first, and WARM_LOCK, flock'ed by the spawner, is on WARM_LOCK_FD.
 */
#define WARM_ARGV0 "dolsot-server"
#define WARM_DIR_FD 3
#define WARM_KEY_FD 4
#define WARM_LOCK_FD 5

/* A key of a WIRE_STATUS payload: the call ran in a live session's
 * process, which was killed, and the process before it holds the session
 * again (live.h). */
#define WARM_ROLLED_BACK "rolled-back"
/* Another: why a bound (DOLSOT_LIVE_MEMORY_MB, DOLSOT_LIVE_MAX,
 * DOLSOT_LIVE_IDLE) ended the session's live process since its last call
 * (live.h); one line. */
#define WARM_LIVE_ENDED "live-ended"

#define WARM_KEY_MODULES 256
#define WARM_KEY_ENV 4096
/* modrec.h's MODREC_MAX_MODULES: a session's whole module record fits. */
#define WARM_KEY_PRELOAD 256

/*
 * The zygote key: the working directory, PYTHONPATH, VIRTUAL_ENV ("" when
 * unset), the toolbox modules to import, the NAME=VALUE environment a
 * zygote is warmed with, and the modules to import after the toolboxes
 * (the session's module record, sorted).  The strings are borrowed: from
 * the caller when encoding, from the payload when decoded.
 *
 * The preload entries are encoded last, so that everything before them
 * (the key's base) names the environment, and keys of one environment
 * differ only in their tails.
 */
struct warm_key {
	const char *cwd;
	const char *pythonpath;
	const char *venv;
	const char *modules[WARM_KEY_MODULES];
	size_t n_modules;
	const char *env[WARM_KEY_ENV];
	size_t n_env;
	const char *preload[WARM_KEY_PRELOAD];
	size_t n_preload;
};

/* The running build's identity, from its content (the linker's build id):
 * a server only serves its own build, at whatever path it is. */
uint64_t warm_proto_exe_id(void);

/* "/proc/self/fd/N/.server.sock" for dirfd, into buf (at least 108 bytes). */
void warm_proto_socket_path(int dirfd, char *buf, size_t len);

/* A CLOEXEC connection to the server of the store directory dirfd, or -1
 * with errno set (ECONNREFUSED or ENOENT: none listens). */
int warm_proto_connect(int dirfd);

/* The same, never blocking: the socket is non-blocking too, and a server
 * that does not accept (its queue is full) gives EAGAIN at once. */
int warm_proto_connect_nonblock(int dirfd);

/* k as a WIRE_CALL payload into buf (WIRE_MAX_PAYLOAD bytes), *len its
 * length.  0, or -1 when it does not fit. */
int warm_key_encode(const struct warm_key *k, uint8_t *buf, size_t *len);

/*
 * Fill k from a WIRE_CALL payload (NUL-separated "name=value" entries
 * ending with a NUL, as wire_decode guarantees).  k's strings point into
 * payload; missing fields read as "/" (cwd) or "".  Entries past k's
 * arrays are ignored.  Fuzzed by fuzz/fuzz_warm_key.c.
 */
void warm_key_decode(const uint8_t *payload, size_t len, struct warm_key *k);

/*
 * The length of an encoded key's base: the bytes before its first preload
 * entry (all of it when it has none).  -1 when the key is not one
 * warm_key_encode could have written: an entry of another kind after a
 * preload entry.
 */
long warm_key_base_len(const uint8_t *payload, size_t len);

/*
 * Whether the zygote of key have can serve a call of key want: both have
 * the same base, and have's preload entries are some of want's (each
 * sorted, as modrec.h's record is; an unsorted list is never taken for a
 * subset).  *n_have gets have's count of preload entries.
 */
bool warm_key_within(const uint8_t *have, size_t have_len, const uint8_t *want,
                     size_t want_len, size_t *n_have);

/* A WIRE_READY entry naming a module the zygote has imported (the
 * payload's "file" entries come first, then these, sorted). */
#define WARM_READY_MODULE "module"

/*
 * How many of key want's preload modules a zygote's WIRE_READY payload
 * (ready) names as imported; both lists sorted, as the zygote and the
 * module record write them.
 */
size_t warm_key_covered(const uint8_t *want, size_t want_len, const uint8_t *ready,
                        size_t ready_len);

/*
 * Remove from an encoded key, in place, the preload entries whose module
 * drop(name, ctx) says to leave out; returns the key's new length.  A key
 * warm_key_base_len refuses is left as it is.
 */
size_t warm_key_drop(uint8_t *payload, size_t len,
                     bool (*drop)(const char *name, void *ctx), void *ctx);

/*
 * Split a "PATH<TAB>MTIME_NS<TAB>SIZE" entry of the module files a zygote
 * reports (the path may hold tabs; the numbers are decimal).  Returns 0
 * with path (NUL-terminated, at most pathlen bytes), *mtime_ns and *size
 * set, or -1 when the entry is malformed or the path does not fit.
 */
int warm_key_file(const char *entry, char *path, size_t pathlen,
                  long long *mtime_ns, long long *size);

#endif
