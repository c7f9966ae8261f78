/*
 * sandbox_init.h - an init for a sandbox that outlives the process it was
 * made for.
 *
 * A sandbox's PID 1 takes everything in its PID namespace with it when it
 * dies.  A live session (live.h) kills its live process on a rollback and
 * goes on in that process's snapshot, inside the same sandbox: so with
 * sandbox_cfg.init_fd set, sandbox_enter keeps PID 1 as this small init,
 * and the process that goes on is its child.  A process whose parent dies
 * (the snapshot, once the live process is killed) is the init's then; the
 * init reaps it when it ends, and says so on its socket, since its owner
 * outside cannot wait for a process of another PID namespace.
 */
#ifndef DOLSOT_SANDBOX_INIT_H
#define DOLSOT_SANDBOX_INIT_H

#define SANDBOX_INIT_NAME "dolsot-init"

/*
 * Be the init, in PID 1 of a sandbox just built: every fd but report is
 * closed (0-2 on /dev/null); each child that ends is reaped and reported
 * on report (a SOCK_SEQPACKET socket) as WIRE_STATUS with a = its wait
 * status and b = its pid in the sandbox.  The owner may send WIRE_GO with
 * a = the pid (in the sandbox) of the one process to keep: every other
 * one but its descendants is killed.  Returns never: it exits when
 * report reaches its end (the owner is done with the sandbox), and the
 * whole sandbox ends with it.
 */
void sandbox_init_main(int report) __attribute__((noreturn));

#endif
