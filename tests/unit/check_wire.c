/*
 * check_wire.c - the warm path's socket messages: framing, fd passing,
 * key/value payloads, and replay of inputs the fuzzer once crashed on.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ck_run.h"
#include "warm_proto.h"
#include "wire.h"

START_TEST(round_trip_with_fds)
{
	struct wire_msg m;
	int sv[2], pipefd[2];
	uint8_t payload[WIRE_MAX_PAYLOAD];
	size_t len = 0, pos = 0;
	char buf[8] = "";

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	ck_assert_int_eq(pipe2(pipefd, O_CLOEXEC), 0);
	ck_assert_int_eq(wire_put(payload, &len, "cwd", "/tmp"), 0);
	ck_assert_int_eq(wire_put(payload, &len, "toolbox", "a"), 0);
	ck_assert_int_eq(wire_put(payload, &len, "toolbox", "b.c"), 0);
	ck_assert_int_eq(wire_send(sv[0], WIRE_CALL, 42, 7, payload, len, &pipefd[1], 1), 0);
	ck_assert_int_eq(wire_recv(sv[1], &m), 1);
	ck_assert_uint_eq(m.len, len);
	ck_assert_int_eq(memcmp(m.payload, payload, len), 0);
	ck_assert_uint_eq(m.type, WIRE_CALL);
	ck_assert_uint_eq(m.a, 42);
	ck_assert_uint_eq(m.b, 7);
	ck_assert_uint_eq(m.nfds, 1);
	ck_assert_str_eq(wire_next(m.payload, m.len, "cwd", &pos), "/tmp");
	pos = 0;
	ck_assert_str_eq(wire_next(m.payload, m.len, "toolbox", &pos), "a");
	ck_assert_str_eq(wire_next(m.payload, m.len, "toolbox", &pos), "b.c");
	ck_assert_ptr_null(wire_next(m.payload, m.len, "toolbox", &pos));
	/* The fd that arrived is a working copy of the pipe's write end. */
	ck_assert_int_eq(write(m.fds[0], "hi", 2), 2);
	ck_assert_int_eq(read(pipefd[0], buf, sizeof(buf)), 2);
	ck_assert(fcntl(m.fds[0], F_GETFD) & FD_CLOEXEC);
	wire_msg_release(&m);
	ck_assert_ptr_null(m.payload);
	ck_assert_uint_eq(m.nfds, 0);
	wire_msg_release(&m);   /* twice is harmless */
	close(pipefd[0]);
	close(pipefd[1]);
	close(sv[0]);
	ck_assert_int_eq(wire_recv(sv[1], &m), 0);   /* end of stream */
	ck_assert_ptr_null(m.payload);
	close(sv[1]);
}
END_TEST

START_TEST(rejects_malformed)
{
	static const uint8_t bad_magic[28] = "XLW1";
	uint8_t ok[28 + 4] = "DLW1";
	struct wire_msg m;

	memset(&m, 0, sizeof(m));
	ck_assert_int_eq(wire_decode(bad_magic, sizeof(bad_magic), &m), -1);
	ck_assert_int_eq(wire_decode(ok, 10, &m), -1);            /* short header */
	ok[4] = WIRE_CALL;
	ok[24] = 4;                                               /* payload length 4 */
	memcpy(ok + 28, "ab=c", 4);                               /* no final NUL */
	ck_assert_int_eq(wire_decode(ok, sizeof(ok), &m), -1);
	ok[31] = '\0';
	ck_assert_int_eq(wire_decode(ok, sizeof(ok), &m), 0);
	ck_assert_uint_eq(m.len, 4);
	ck_assert_str_eq((const char *)m.payload, "ab=");
	wire_msg_release(&m);
	ok[24] = 5;                                               /* says more than there is */
	ck_assert_int_eq(wire_decode(ok, sizeof(ok), &m), -1);
	ok[24] = 4;
	ok[4] = WIRE_TYPE_MAX;
	ck_assert_int_eq(wire_decode(ok, sizeof(ok), &m), -1);
}
END_TEST

START_TEST(next_stops_at_unterminated_entry)
{
	static const uint8_t text[] = { 'k', '=', 'v', 0, 'k', '=', 'w' };
	size_t pos = 0;

	ck_assert_str_eq(wire_next(text, sizeof(text), "k", &pos), "v");
	ck_assert_ptr_null(wire_next(text, sizeof(text), "k", &pos));
	ck_assert_uint_eq(pos, sizeof(text));
}
END_TEST

/* The payload comes on the heap at its own size, from empty to the
 * largest; a message past the largest is refused whole and its fds are
 * closed. */
START_TEST(payload_sizes_and_oversized_messages)
{
	static const size_t sizes[] = { 0, 1, 27, 28, 4096, WIRE_MAX_PAYLOAD - 1,
	                                WIRE_MAX_PAYLOAD };
	uint8_t *big = calloc(1, 28 + WIRE_MAX_PAYLOAD + 64);
	struct wire_msg m;
	int sv[2], pipefd[2];

	ck_assert_ptr_nonnull(big);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	ck_assert_int_eq(pipe2(pipefd, O_CLOEXEC), 0);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(*sizes); i++) {
		memset(big, 'x', sizes[i]);
		if (sizes[i])
			big[sizes[i] - 1] = '\0';
		ck_assert_int_eq(wire_send(sv[0], WIRE_INFO, i, 0, big, sizes[i], NULL, 0), 0);
		ck_assert_int_eq(wire_recv(sv[1], &m), 1);
		ck_assert_uint_eq(m.a, i);
		ck_assert_uint_eq(m.len, sizes[i]);
		if (sizes[i])
			ck_assert_int_eq(memcmp(m.payload, big, sizes[i]), 0);
		else
			ck_assert_ptr_null(m.payload);
		wire_msg_release(&m);
	}
	/* Longer than any message may be: a raw datagram with a valid header
	 * and an fd, which must come back closed. */
	memset(big, 0, 28);
	memcpy(big, "DLW1", 4);
	big[4] = WIRE_INFO;
	big[6] = 1;
	big[24] = 0x40;   /* 0x10040 bytes of payload */
	big[26] = 0x01;
	{
		union {
			struct cmsghdr c;
			char buf[CMSG_SPACE(sizeof(int))];
		} ctl;
		struct iovec iov = { big, 28 + WIRE_MAX_PAYLOAD + 64 };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
		                      .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf) };

		memset(&ctl, 0, sizeof(ctl));
		ctl.c.cmsg_level = SOL_SOCKET;
		ctl.c.cmsg_type = SCM_RIGHTS;
		ctl.c.cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(&ctl.c), &pipefd[1], sizeof(int));
		ck_assert_int_eq(sendmsg(sv[0], &msg, 0), (ssize_t)iov.iov_len);
	}
	ck_assert_int_eq(wire_recv(sv[1], &m), -1);
	ck_assert_int_eq(errno, EBADMSG);
	ck_assert_ptr_null(m.payload);
	ck_assert_uint_eq(m.nfds, 0);
	/* The copy of the pipe's write end was closed: ours is the last. */
	close(pipefd[1]);
	{
		char c;

		ck_assert_int_eq(read(pipefd[0], &c, 1), 0);
	}
	close(pipefd[0]);
	close(sv[0]);
	close(sv[1]);
	free(big);
}
END_TEST

/* Inputs that once crashed the fuzz harness must now be handled. */
START_TEST(replays_regressions)
{
	DIR *d = opendir("tests/regress/wire");
	struct dirent *e;
	struct wire_msg m;
	int seen = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d))) {
		char path[512], buf[WIRE_MAX_PAYLOAD + 64];
		FILE *f;
		size_t n, pos = 0;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "tests/regress/wire/%s", e->d_name);
		f = fopen(path, "rb");
		ck_assert_ptr_nonnull(f);
		n = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		memset(&m, 0, sizeof(m));
		if (wire_decode((const uint8_t *)buf, n, &m) == 0)
			while (wire_next(m.payload, m.len, "toolbox", &pos))
				ck_assert_uint_le(pos, m.len);
		ck_assert_uint_le(pos, m.len);
		wire_msg_release(&m);
		seen++;
	}
	closedir(d);
	ck_assert_int_gt(seen, 0);
}
END_TEST

/* ---- the zygote key's preload entries (warm_proto.h) ---- */

/* A key of base "cwd=/w" and "env=A=1" with the given preload modules. */
static size_t key_with(uint8_t *buf, const char *const *preload, size_t n)
{
	static struct warm_key k;
	size_t len;

	memset(&k, 0, sizeof(k));
	k.cwd = "/w";
	k.pythonpath = "";
	k.venv = "";
	k.env[0] = "A=1";
	k.n_env = 1;
	for (size_t i = 0; i < n; i++)
		k.preload[k.n_preload++] = preload[i];
	ck_assert_int_eq(warm_key_encode(&k, buf, &len), 0);
	return len;
}

static bool drop_b(const char *name, void *ctx)
{
	(void)ctx;
	return strcmp(name, "b") == 0;
}

START_TEST(warm_key_preload_is_the_tail)
{
	static uint8_t base[WIRE_MAX_PAYLOAD], ab[WIRE_MAX_PAYLOAD], abc[WIRE_MAX_PAYLOAD];
	static struct warm_key k;
	const char *names[] = { "a", "b", "c" };
	size_t nb = key_with(base, NULL, 0), nab = key_with(ab, names, 2);
	size_t nabc = key_with(abc, names, 3), n;

	ck_assert_int_eq(warm_key_base_len(base, nb), (long)nb);
	ck_assert_int_eq(warm_key_base_len(ab, nab), (long)nb);
	ck_assert(memcmp(ab, base, nb) == 0);
	warm_key_decode(abc, nabc, &k);
	ck_assert_uint_eq(k.n_preload, 3);
	ck_assert_str_eq(k.preload[2], "c");
	ck_assert_str_eq(k.env[0], "A=1");
	/* Within: same base, a subset of the tail. */
	ck_assert(warm_key_within(base, nb, abc, nabc, &n) && n == 0);
	ck_assert(warm_key_within(ab, nab, abc, nabc, &n) && n == 2);
	ck_assert(warm_key_within(abc, nabc, abc, nabc, &n) && n == 3);
	ck_assert(!warm_key_within(abc, nabc, ab, nab, &n));
	{
		const char *other[] = { "a", "d" };
		uint8_t *ad = malloc(WIRE_MAX_PAYLOAD);
		size_t nad = key_with(ad, other, 2);

		ck_assert(!warm_key_within(ad, nad, abc, nabc, &n));
		free(ad);
	}
	/* Another base is never within, whatever the tails. */
	{
		uint8_t *moved = malloc(WIRE_MAX_PAYLOAD);

		memcpy(moved, base, nb);
		moved[5] = 'x';   /* "cwd=/x" */
		ck_assert(!warm_key_within(moved, nb, ab, nab, &n));
		free(moved);
	}
	/* An entry of another kind after a preload entry: not a key we write. */
	{
		uint8_t *bad = malloc(WIRE_MAX_PAYLOAD);
		size_t len = nab;

		memcpy(bad, ab, nab);
		ck_assert_int_eq(wire_put(bad, &len, "env", "B=2"), 0);
		ck_assert_int_eq(warm_key_base_len(bad, len), -1);
		ck_assert(!warm_key_within(base, nb, bad, len, &n));
		ck_assert_uint_eq(warm_key_drop(bad, len, drop_b, NULL), len);
		free(bad);
	}
}
END_TEST

START_TEST(warm_key_drop_and_cover)
{
	static uint8_t abc[WIRE_MAX_PAYLOAD], ac[WIRE_MAX_PAYLOAD], ready[WIRE_MAX_PAYLOAD];
	const char *names[] = { "a", "b", "c" }, *two[] = { "a", "c" };
	size_t nabc = key_with(abc, names, 3), nac = key_with(ac, two, 2), nr = 0;

	nabc = warm_key_drop(abc, nabc, drop_b, NULL);
	ck_assert_uint_eq(nabc, nac);
	ck_assert(memcmp(abc, ac, nac) == 0);
	/* A zygote's READY payload: files, then the modules it imported. */
	ck_assert_int_eq(wire_put(ready, &nr, "file", "/w/a.py\t1\t2"), 0);
	ck_assert_uint_eq(warm_key_covered(ac, nac, ready, nr), 0);
	ck_assert_int_eq(wire_put(ready, &nr, WARM_READY_MODULE, "a"), 0);
	ck_assert_uint_eq(warm_key_covered(ac, nac, ready, nr), 1);
	ck_assert_int_eq(wire_put(ready, &nr, WARM_READY_MODULE, "b"), 0);
	ck_assert_int_eq(wire_put(ready, &nr, WARM_READY_MODULE, "c"), 0);
	ck_assert_uint_eq(warm_key_covered(ac, nac, ready, nr), 2);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("wire");
	TCase *tc = tcase_create("wire");

	tcase_add_test(tc, round_trip_with_fds);
	tcase_add_test(tc, rejects_malformed);
	tcase_add_test(tc, next_stops_at_unterminated_entry);
	tcase_add_test(tc, payload_sizes_and_oversized_messages);
	tcase_add_test(tc, replays_regressions);
	tcase_add_test(tc, warm_key_preload_is_the_tail);
	tcase_add_test(tc, warm_key_drop_and_cover);
	suite_add_tcase(s, tc);
	return ck_run(s);
}
