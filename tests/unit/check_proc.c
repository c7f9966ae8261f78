/*
 * check_proc.c - proc.h's helpers for many children in one loop (the
 * zygote's): a deadline per child, the rest of a reaped leader's group,
 * the orphans' sweep; and deadline.h's poll arithmetic.  Real processes
 * throughout; every test reaps what it starts.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ck_run.h"
#include "deadline.h"
#include "proc.h"

/* A child, leader of a group of its own, that sleeps until killed. */
static pid_t sleeper(void)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		setpgid(0, 0);
		for (;;)
			pause();
	}
	setpgid(pid, pid);
	return pid;
}

/* pid's end: killed by SIGKILL, and reaped here. */
static void assert_killed(pid_t pid)
{
	int status;

	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFSIGNALED(status));
	ck_assert_int_eq(WTERMSIG(status), SIGKILL);
}

START_TEST(poll_min_takes_the_sooner)
{
	ck_assert_int_eq(deadline_poll_min(-1, -1), -1);
	ck_assert_int_eq(deadline_poll_min(-1, 7), 7);
	ck_assert_int_eq(deadline_poll_min(7, -1), 7);
	ck_assert_int_eq(deadline_poll_min(3, 7), 3);
	ck_assert_int_eq(deadline_poll_min(7, 3), 3);
	ck_assert_int_eq(deadline_poll_min(0, 3), 0);
}
END_TEST

/* Before the deadline: a wait until it, nothing killed.  After: the
 * group killed once, and a short wait for the reaper. */
START_TEST(deadline_check_kills_once_when_due)
{
	struct proc_deadline d = { .pid = sleeper() };
	int ms;

	deadline_in(&d.deadline, 30);
	ms = proc_deadline_check(&d);
	ck_assert_int_gt(ms, 20000);
	ck_assert_int_le(ms, 30001);
	ck_assert(!d.timed_out);
	ck_assert_int_eq(kill(d.pid, 0), 0);   /* still running */
	deadline_in(&d.deadline, -1);
	ck_assert_int_eq(proc_deadline_check(&d), PROC_REAP_POLL_MS);
	ck_assert(d.timed_out);
	assert_killed(d.pid);
	ck_assert_int_eq(proc_deadline_check(&d), PROC_REAP_POLL_MS);
	ck_assert(d.timed_out);
}
END_TEST

/* The leader is gone and reaped; what it left in its group is killed. */
START_TEST(rest_of_group_is_killed)
{
	int sv[2];
	pid_t leader, member;
	int status;

	ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	ck_assert_int_eq(pipe(sv), 0);
	leader = fork();
	ck_assert_int_ge(leader, 0);
	if (leader == 0) {
		pid_t m;

		setpgid(0, 0);
		m = fork();
		if (m == 0) {
			for (;;)
				pause();
		}
		(void)!write(sv[1], &m, sizeof(m));
		_exit(0);
	}
	setpgid(leader, leader);
	ck_assert_int_eq(read(sv[0], &member, sizeof(member)), (ssize_t)sizeof(member));
	ck_assert_int_eq(waitpid(leader, &status, 0), leader);
	ck_assert_int_eq(getpgid(member), leader);
	proc_kill_rest_of_group(leader);
	assert_killed(member);   /* reparented to us, the subreaper */
	close(sv[0]);
	close(sv[1]);
}
END_TEST

static pid_t kept_pid;

static bool keep_one(pid_t pid, void *ctx)
{
	ck_assert_ptr_eq(ctx, &kept_pid);
	return pid == kept_pid;
}

/* Every child but the kept one is killed and reaped; the kept one runs on. */
START_TEST(orphans_but_the_kept_are_swept)
{
	pid_t a = sleeper(), b = sleeper(), c = sleeper();

	kept_pid = b;
	proc_kill_orphans(keep_one, &kept_pid);
	ck_assert_int_eq(waitpid(a, NULL, WNOHANG), -1);
	ck_assert_int_eq(errno, ECHILD);
	ck_assert_int_eq(waitpid(c, NULL, WNOHANG), -1);
	ck_assert_int_eq(waitpid(b, NULL, WNOHANG), 0);   /* still ours, running */
	proc_kill_group(b);
	assert_killed(b);
}
END_TEST

static void *wait_on_pipe(void *arg)
{
	char byte;

	(void)!read(*(int *)arg, &byte, 1);
	return NULL;
}

/* A thread counts while it runs, and no longer once joined. */
START_TEST(threads_are_counted)
{
	pthread_t t;
	int p[2];

	ck_assert_int_eq(proc_thread_count(), 1);
	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, wait_on_pipe, &p[0]), 0);
	ck_assert_int_eq(proc_thread_count(), 2);
	ck_assert_int_eq(write(p[1], "x", 1), 1);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_int_eq(proc_thread_count(), 1);
	close(p[0]);
	close(p[1]);
}
END_TEST

/* Every child is listed, up to the room given. */
START_TEST(children_are_listed_up_to_max)
{
	pid_t a = sleeper(), b = sleeper(), got[4];
	size_t n = proc_list_children(0, got, 4);

	ck_assert_uint_eq(n, 2);
	ck_assert((got[0] == a && got[1] == b) || (got[0] == b && got[1] == a));
	ck_assert_uint_eq(proc_list_children(0, got, 1), 1);
	ck_assert_uint_eq(proc_list_children(0, got, 0), 0);
	proc_kill_group(a);
	proc_kill_group(b);
	assert_killed(a);
	assert_killed(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("proc");
	TCase *tc = tcase_create("proc");

	tcase_add_test(tc, poll_min_takes_the_sooner);
	tcase_add_test(tc, deadline_check_kills_once_when_due);
	tcase_add_test(tc, rest_of_group_is_killed);
	tcase_add_test(tc, orphans_but_the_kept_are_swept);
	tcase_add_test(tc, threads_are_counted);
	tcase_add_test(tc, children_are_listed_up_to_max);
	suite_add_tcase(s, tc);
	return ck_run(s);
}
