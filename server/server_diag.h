/*
 * server_diag.h - what --server-status says: the server's and each
 * zygote's figures and memory (from /proc/PID/smaps_rollup), as text.
 * Read-only: nothing here changes what the server does.
 */
#ifndef DOLSOT_SERVER_DIAG_H
#define DOLSOT_SERVER_DIAG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The server's figures. */
struct server_figures {
	double uptime;
	uint64_t warm, cold;            /* calls served warm, answered cold */
	uint64_t preloaded, nearer;     /* warm calls on a zygote holding the
	                                   session's modules, or some of them */
	unsigned sessions;              /* DOLSOT_STORE=memory sessions held */
	unsigned units;                 /* their units held, each once */
	uint64_t units_stored;          /* units stored since the server started */
	size_t zygotes;
	/* the zygotes' bounds (server.h) */
	int max_zygotes, env_zygotes, idle_seconds;
	long memory_kb;
};

/*
 * Append the server's lines to text[*n..cap): its pid (this process),
 * uptime, calls, memory, sessions held, and its zygotes against their
 * bounds.
 */
void server_diag_server(char *text, size_t *n, size_t cap, const struct server_figures *f);

/* Append the line for a module the server does not import ahead. */
void server_diag_skipped(char *text, size_t *n, size_t cap, const char *module,
                         const char *why);

/*
 * Append one zygote's lines: pid, state, idle seconds, memory, the key it
 * was started with (a WIRE_CALL payload: its toolboxes, the modules it
 * imported ahead of calls and its environment's fingerprint), the zygote
 * it was forked from (0: none), and note (why it failed or why the one
 * before it was replaced) unless empty.
 */
void server_diag_zygote(char *text, size_t *n, size_t cap, pid_t pid,
                        const char *state, double idle, const uint8_t *key,
                        size_t key_len, pid_t grown_from, const char *note);

/*
 * When the zygote of key and the zygote other (of other_key) share their
 * directory, PYTHONPATH, venv and toolboxes, append a line naming the
 * variables whose NAME=VALUE entries differ between their environments
 * (names only: values may be secrets) and return true; else append
 * nothing and return false.
 */
bool server_diag_env_diff(char *text, size_t *n, size_t cap, const uint8_t *key,
                          size_t key_len, pid_t other, const uint8_t *other_key,
                          size_t other_len);

/* Append the line of zygote's spare worker, if it has one. */
void server_diag_spare(char *text, size_t *n, size_t cap, pid_t zygote);

/* The private memory of process pid (0: this one) in kB (from
 * smaps_rollup), -1 when unknown. */
long server_diag_private_kb(pid_t pid);

/* Of that, what it wrote (Private_Dirty: its anonymous memory, which a
 * fork shares), -1 when unknown. */
long server_diag_dirty_kb(pid_t pid);

#endif
