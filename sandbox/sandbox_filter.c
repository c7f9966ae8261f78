/*
 * sandbox_filter.c - build and load the seccomp filter of sandbox_filter.h.
 *
 * Calls that need a capability the sandbox no longer has would fail anyway;
 * they are listed too, so a kernel bug in their permission checks cannot be
 * reached from a cell.  Other architectures' system call numbers (i386, x32)
 * kill the process: that is libseccomp's default for a foreign architecture.
 *
 * Sockets: only AF_UNIX, AF_INET and AF_INET6, all a cell needs on its
 * loopback (Python's socket, asyncio, multiprocessing); every other family
 * fails with EAFNOSUPPORT, as on a kernel without it.  AF_VSOCK above all,
 * the channel to a hypervisor, which no network namespace confines; and
 * netlink too: the loopback is brought up (by ioctl) before the filter, and
 * glibc's getaddrinfo does without it.
 *
 * Setuid files: a cell cannot set S_ISUID (chmod, or the mode of a file it
 * creates), so no file it leaves in an rw mount runs as its owner on the
 * host; inside, every mount is nosuid anyway.
 */
#include "sandbox_filter.h"

#include <errno.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>

static const int denied[] = {
	/* other processes' memory and file descriptors */
	SCMP_SYS(ptrace), SCMP_SYS(process_vm_readv), SCMP_SYS(process_vm_writev),
	SCMP_SYS(kcmp), SCMP_SYS(pidfd_getfd),
	/* mounts and namespaces */
	SCMP_SYS(mount), SCMP_SYS(umount2), SCMP_SYS(pivot_root), SCMP_SYS(chroot),
	SCMP_SYS(unshare), SCMP_SYS(setns), SCMP_SYS(open_tree), SCMP_SYS(move_mount),
	SCMP_SYS(fsopen), SCMP_SYS(fsconfig), SCMP_SYS(fsmount), SCMP_SYS(fspick),
	SCMP_SYS(mount_setattr),
	/* keyring, BPF, perf, userfaultfd, io_uring, fanotify */
	SCMP_SYS(keyctl), SCMP_SYS(add_key), SCMP_SYS(request_key), SCMP_SYS(bpf),
	SCMP_SYS(perf_event_open), SCMP_SYS(userfaultfd), SCMP_SYS(io_uring_setup),
	SCMP_SYS(io_uring_enter), SCMP_SYS(io_uring_register), SCMP_SYS(fanotify_init),
	/* the kernel itself */
	SCMP_SYS(kexec_load), SCMP_SYS(kexec_file_load), SCMP_SYS(init_module),
	SCMP_SYS(finit_module), SCMP_SYS(delete_module), SCMP_SYS(reboot),
	SCMP_SYS(swapon), SCMP_SYS(swapoff), SCMP_SYS(syslog), SCMP_SYS(acct),
	SCMP_SYS(quotactl), SCMP_SYS(iopl), SCMP_SYS(ioperm), SCMP_SYS(uselib),
	SCMP_SYS(lookup_dcookie), SCMP_SYS(vhangup),
	/* file handles bypass the mount tree */
	SCMP_SYS(open_by_handle_at), SCMP_SYS(name_to_handle_at),
	/* clocks and names of the machine */
	SCMP_SYS(settimeofday), SCMP_SYS(clock_settime), SCMP_SYS(clock_adjtime),
	SCMP_SYS(adjtimex), SCMP_SYS(sethostname), SCMP_SYS(setdomainname),
};

/* clone flags that make a namespace. */
static const unsigned long ns_flags[] = {
	CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID,
	CLONE_NEWNET, CLONE_NEWCGROUP,
};

/* Families up to AF_INET6 that are not allowed (the rest are above it). */
static const int denied_families[] = {
	AF_UNSPEC, 3 /* AX25 */, 4 /* IPX */, 5 /* APPLETALK */, 6 /* NETROM */,
	7 /* BRIDGE */, 8 /* ATMPVC */, 9 /* X25 */,
};

/* Calls that take a file mode, and which argument it is. */
static const struct { int nr; unsigned arg; } mode_calls[] = {
	{ SCMP_SYS(chmod), 1 }, { SCMP_SYS(fchmod), 1 }, { SCMP_SYS(fchmodat), 2 },
	{ SCMP_SYS(creat), 1 }, { SCMP_SYS(open), 2 }, { SCMP_SYS(openat), 3 },
	{ SCMP_SYS(mknod), 1 }, { SCMP_SYS(mknodat), 2 },
};

static int add_socket_rules(scmp_filter_ctx ctx)
{
	const int calls[] = { SCMP_SYS(socket), SCMP_SYS(socketpair) };
	int rc;

	for (size_t c = 0; c < sizeof(calls) / sizeof(*calls); c++) {
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), calls[c], 1,
		                      SCMP_A0(SCMP_CMP_GT, AF_INET6));
		for (size_t i = 0; rc == 0 && i < sizeof(denied_families) / sizeof(int); i++)
			rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), calls[c], 1,
			                      SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)denied_families[i]));
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int add_setuid_rules(scmp_filter_ctx ctx)
{
	for (size_t i = 0; i < sizeof(mode_calls) / sizeof(*mode_calls); i++) {
		struct scmp_arg_cmp suid = { mode_calls[i].arg, SCMP_CMP_MASKED_EQ,
		                             S_ISUID, S_ISUID };
		int rc;

		if (mode_calls[i].nr < 0)
			continue;
		rc = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EPERM), mode_calls[i].nr, 1,
		                            &suid);
		if (rc < 0)
			return rc;
	}
	/* It takes the mode inside a struct the filter cannot read; glibc and
	 * Python use openat. */
	return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(openat2), 0);
}

static int add_rules(scmp_filter_ctx ctx, const char **what)
{
	int rc;

	*what = "socket";
	if ((rc = add_socket_rules(ctx)) < 0)
		return rc;
	*what = "the setuid bit";
	if ((rc = add_setuid_rules(ctx)) < 0)
		return rc;

	*what = "a denied call";
	for (size_t i = 0; i < sizeof(denied) / sizeof(*denied); i++) {
		/* A call this architecture lacks has a negative number: skip it. */
		if (denied[i] < 0)
			continue;
		if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), denied[i], 0)) < 0)
			return rc;
	}
	*what = "clone";
	for (size_t i = 0; i < sizeof(ns_flags) / sizeof(*ns_flags); i++) {
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
		                      SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]));
		if (rc < 0)
			return rc;
	}
	*what = "clone3";
	return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
}

int sandbox_filter_load(char *err, size_t errlen)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	const char *what = "seccomp_init";
	int rc = -ENOMEM;

	if (!ctx)
		goto fail;
	/* libseccomp sets no_new_privs itself before loading (the default). */
	what = "seccomp_attr_set";
	if ((rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 1)) < 0)
		goto fail;
	if ((rc = add_rules(ctx, &what)) < 0)
		goto fail;
	what = "seccomp_load";
	if ((rc = seccomp_load(ctx)) < 0)
		goto fail;
	seccomp_release(ctx);
	return 0;
fail:
	snprintf(err, errlen, "cannot load the seccomp filter (%s): %s", what,
	         strerror(-rc));
	if (ctx)
		seccomp_release(ctx);
	return -1;
}
