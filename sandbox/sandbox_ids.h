/*
 * sandbox_ids.h - who the sandbox is on the host.
 *
 * An ordinary caller's sandbox maps the caller's own uid and gid, each to
 * the same number inside, which needs no privilege.  A root caller's would
 * then be host root (its files, its /proc/sys, its devices), so instead its
 * uid 0 and gid 0 inside are the host's SANDBOX_ROOT_ID, an id no account
 * uses.  Writing such a map takes CAP_SETUID and CAP_SETGID in the parent
 * user namespace, which the caller no longer has once it has entered the
 * new one: a helper forked before, still root outside, writes the maps, and
 * also turns the caller's binds into idmapped mounts, on which files owned
 * by host root show as owned by the sandbox (so it can read them; writes
 * are impossible there, as those binds are read-only).  The helper is gone
 * before the sandbox's PID 1 is forked.
 */
#ifndef DOLSOT_SANDBOX_IDS_H
#define DOLSOT_SANDBOX_IDS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The host uid and gid of a root caller's sandbox: above the ranges Debian
 * gives accounts (up to 59999), systemd's dynamic users (61184-65519),
 * nobody (65534) and the subordinate ranges useradd hands out (from 100000,
 * 65536 per user), below 2^31 so every tool reads it as positive. */
#define SANDBOX_ROOT_ID 2000000000u

struct sandbox_ids {
	bool helper;            /* root caller: the helper maps */
	uid_t uid;              /* the caller's, taken before unshare */
	gid_t gid;
	pid_t pid;              /* the helper, or 0 */
	int sock;               /* to the helper, or -1 */
};

/* Before unshare: for a root caller, fork the helper.  0 or -1 with err. */
int sandbox_ids_start(struct sandbox_ids *ids, char *err, size_t errlen);

/* After unshare(CLONE_NEWUSER): write this process's uid and gid maps (the
 * helper's, for root).  0 or -1 with err. */
int sandbox_ids_map(struct sandbox_ids *ids, char *err, size_t errlen);

/* For a root caller: make each detached mount fds[i] an idmapped mount of the
 * sandbox's user namespace; a file system that cannot be idmapped keeps its
 * ids (then files are read by their "other" permissions).  Without the
 * helper nothing is done.  0 or -1 with err. */
int sandbox_ids_idmap(struct sandbox_ids *ids, const int *fds, size_t n,
                      char *err, size_t errlen);

/*
 * For a root caller, whose ids are still host root's (which the namespace
 * does not map): become the namespace's 0, the mapped id, keeping the
 * capabilities.  Until then the caller reads host root's files by their
 * owner's permissions, as sandbox_fs_take() does.  0 or -1 with err.
 */
int sandbox_ids_become(const struct sandbox_ids *ids, char *err, size_t errlen);

/* Let the helper go and reap it; safe to call twice. */
void sandbox_ids_end(struct sandbox_ids *ids);

#endif
