/*
 * server_diag.h - what --server-status says: the server's and each
 * zygote's figures and memory (from /proc/PID/smaps_rollup), as text.
 * Read-only: nothing here changes what the server does.
 */
#ifndef DOLSOT_SERVER_DIAG_H
#define DOLSOT_SERVER_DIAG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Append the server's lines to text[*n..cap): its pid (this process),
 * uptime, calls served warm and answered cold, memory, and sessions held.
 */
void server_diag_server(char *text, size_t *n, size_t cap, double uptime,
                        uint64_t warm, uint64_t cold, unsigned sessions);

/*
 * Append one zygote's lines: pid, state, idle seconds, memory, the key it
 * was started with (a WIRE_CALL payload), note (why it failed or why the
 * one before it was replaced) unless empty, and its spare worker if any.
 */
void server_diag_zygote(char *text, size_t *n, size_t cap, pid_t pid,
                        const char *state, double idle, const uint8_t *key,
                        size_t key_len, const char *note);

/* The private memory of process pid in kB (from smaps_rollup), -1 when
 * unknown. */
long server_diag_private_kb(pid_t pid);

#endif
