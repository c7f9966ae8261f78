/*
 * redis_helper.c - a real redis-server per test (redis_helper.h).
 */
#include "redis_helper.h"

#include <check.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_helpers.h"

#define READY_SECONDS 60.0      /* a loaded machine starts redis-server slowly */
#define POLL_US 50000

/* The server a failed check would leave running: stopped at exit by the
 * process that started it (Check ends a failed case's process early). */
static struct redis_test *live;
static pid_t live_owner;

static void stop_live(void)
{
	if (live && getpid() == live_owner)
		redis_test_stop(live);
}

int redis_test_free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	return ntohs(a.sin_port);
}

redisContext *redis_test_conn(const struct redis_test *rd, const char *password)
{
	struct timeval tv = { 10, 0 };
	redisContext *c = redisConnectWithTimeout("127.0.0.1", rd->port, tv);

	if (c && !c->err && password) {
		redisReply *r = redisCommand(c, "AUTH %s", password);

		if (r)
			freeReplyObject(r);
	}
	return c;
}

void redis_test_start(struct redis_test *rd, const char *const *extra, const char *password)
{
	const char *argv[40];
	char port[16];
	int n = 0;
	pid_t parent;
	double t0 = cli_now();

	if (!rd->port)
		rd->port = redis_test_free_port();
	snprintf(port, sizeof(port), "%d", rd->port);
	snprintf(rd->url, sizeof(rd->url), "redis://127.0.0.1:%d", rd->port);
	argv[n++] = "redis-server";
	argv[n++] = "--port";
	argv[n++] = port;
	argv[n++] = "--bind";
	argv[n++] = "127.0.0.1";
	argv[n++] = "--dir";
	argv[n++] = rd->dir;
	/* RDB save points that never trigger in a test: a server that keeps
	 * sessions on disk, which dolsot asks of it (a later "--save ''" in
	 * extra clears them). */
	argv[n++] = "--save";
	argv[n++] = "3600 1";
	/* Those save points make SIGTERM save first; a save that fails (the
	 * case's directory already gone) must not keep it running. */
	argv[n++] = "--shutdown-on-sigterm";
	argv[n++] = "force";
	argv[n++] = "--daemonize";
	argv[n++] = "no";
	argv[n++] = "--logfile";
	argv[n++] = "redis.log";
	for (int i = 0; extra && extra[i] && n < 38; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	if (!live_owner && atexit(stop_live) == 0)
		live_owner = getpid();
	live = rd;
	live_owner = getpid();
	parent = getpid();
	rd->pid = fork();
	ck_assert_int_ge(rd->pid, 0);
	if (rd->pid == 0) {
		/* Dies with the case that started it, even when Check kills that
		 * case at its timeout (no atexit runs then). */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
			_exit(127);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	for (;;) {
		redisContext *c = redis_test_conn(rd, password);
		redisReply *r = c && !c->err ? redisCommand(c, "PING") : NULL;
		bool up = r && (r->type == REDIS_REPLY_STATUS);

		if (r)
			freeReplyObject(r);
		if (c)
			redisFree(c);
		if (up)
			break;
		ck_assert_msg(cli_now() - t0 < READY_SECONDS && waitpid(rd->pid, NULL, WNOHANG) == 0,
		              "redis-server did not start on port %d", rd->port);
		usleep(POLL_US);
	}
}

void redis_test_start_in(struct redis_test *rd, const char *parent, const char *const *extra,
                         const char *password)
{
	snprintf(rd->dir, sizeof(rd->dir), "%s/redis", parent);
	ck_assert_int_eq(mkdir(rd->dir, 0700), 0);
	rd->port = 0;
	redis_test_start(rd, extra, password);
}

void redis_test_stop(struct redis_test *rd)
{
	double t0 = cli_now();

	if (rd->pid <= 0)
		return;
	kill(rd->pid, SIGTERM);
	while (waitpid(rd->pid, NULL, WNOHANG) == 0) {
		if (cli_now() - t0 > READY_SECONDS)
			kill(rd->pid, SIGKILL);
		usleep(POLL_US / 2);
	}
	rd->pid = -1;
}

const char *redis_test_query(const struct redis_test *rd, char *buf, size_t len,
                             const char *password, const char *fmt, const char *arg)
{
	redisContext *c = redis_test_conn(rd, password);
	redisReply *r;

	ck_assert_msg(c && !c->err, "cannot reach the test's redis-server");
	r = redisCommand(c, fmt, arg);
	ck_assert_ptr_nonnull(r);
	if (r->type == REDIS_REPLY_INTEGER)
		snprintf(buf, len, "%lld", r->integer);
	else if (r->type == REDIS_REPLY_NIL)
		snprintf(buf, len, "(nil)");
	else
		snprintf(buf, len, "%.*s", (int)r->len, r->str ? r->str : "");
	freeReplyObject(r);
	redisFree(c);
	return buf;
}
