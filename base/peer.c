/*
 * peer.c - check a socket's peer against our uid and namespaces.
 *
 * The peer's namespaces are read from /proc/PID/ns by the pid SO_PEERCRED
 * gives.  That pid could be reused if the peer died before we looked, so
 * the peer is pinned first with SO_PEERPIDFD (Linux 6.5) and must still be
 * alive after the check: a process alive afterwards was the one /proc/PID
 * showed during it.  On a kernel without SO_PEERPIDFD the check stands on
 * the pid alone.
 */
#include "peer.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

static const char *const spaces[] = { "user", "mnt", "pid" };

/* Same namespace file (device and inode) under /proc/PID/ns and ours. */
static bool same_ns(int pid_dir, int self_dir, const char *name)
{
	struct stat a, b;
	char path[32];

	snprintf(path, sizeof(path), "ns/%s", name);
	return fstatat(pid_dir, path, &a, 0) == 0 && fstatat(self_dir, path, &b, 0) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

static bool still_alive(int pidfd)
{
	if (pidfd < 0)
		return true;   /* no pidfd: nothing more to check */
	return syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) == 0;
}

bool peer_is_ours(int sock)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int pidfd = -1, pid_dir = -1, self_dir = -1;
	bool ok = false;
	char path[32];

	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 ||
	    cred.uid != geteuid() || cred.pid <= 0)
		return false;
	len = sizeof(pidfd);
	if (getsockopt(sock, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) < 0) {
		/* Only a kernel without it falls back to the pid alone; a peer
		 * already gone (ESRCH) may have left its pid to another. */
		if (errno != ENOPROTOOPT && errno != EINVAL && errno != EOPNOTSUPP)
			return false;
		pidfd = -1;
	}
	snprintf(path, sizeof(path), "/proc/%d", (int)cred.pid);
	pid_dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	self_dir = open("/proc/self", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pid_dir >= 0 && self_dir >= 0) {
		ok = true;
		for (size_t i = 0; i < sizeof(spaces) / sizeof(*spaces) && ok; i++)
			ok = same_ns(pid_dir, self_dir, spaces[i]);
		ok = ok && still_alive(pidfd);
	}
	if (pid_dir >= 0)
		close(pid_dir);
	if (self_dir >= 0)
		close(self_dir);
	if (pidfd >= 0)
		close(pidfd);
	return ok;
}
