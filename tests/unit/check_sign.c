/*
 * check_sign.c - signed sessions: HMAC-SHA256 against RFC 4231, the
 * trailer's verdicts, and the session key's sources and key file.
 *
 * Each test gets its own mkdtemp directory, removed by the teardown.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ck_run.h"
#include "sign.h"

#define RACERS 8

static char dir[PATH_MAX];
static int dirfd_;
static char err[SIGN_ERR_MAX];
#define ERR err, sizeof(err)

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static void setup(void)
{
	snprintf(dir, sizeof(dir), "%s/dolsot-sign.XXXXXX",
	         getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	dirfd_ = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(dirfd_, 0);
	err[0] = '\0';
}

static void teardown(void)
{
	close(dirfd_);
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void hex(const uint8_t *p, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
}

/* RFC 4231, section 4: test cases 1-7 (case 5 is truncated to 128 bits). */
START_TEST(test_hmac_sha256_rfc4231)
{
	static const struct {
		uint8_t key_byte;
		size_t key_len;
		const char *data;
		uint8_t data_byte;
		size_t data_len;
		const char *mac;
	} v[] = {
		{ 0x0b, 20, "Hi There", 0, 0,
		  "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7" },
		{ 0, 0, "what do ya want for nothing?", 0, 0,
		  "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843" },
		{ 0xaa, 20, NULL, 0xdd, 50,
		  "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe" },
		{ 1, 25, NULL, 0xcd, 50,
		  "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b" },
		{ 0x0c, 20, "Test With Truncation", 0, 0, "a3b6167473100ee06e0c796c2955552b" },
		{ 0xaa, 131, "Test Using Larger Than Block-Size Key - Hash Key First", 0, 0,
		  "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54" },
		{ 0xaa, 131, "This is a test using a larger than block-size key and a larger "
		  "than block-size data. The key needs to be hashed before being used by the "
		  "HMAC algorithm.", 0, 0,
		  "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2" },
	};

	for (size_t i = 0; i < sizeof(v) / sizeof(*v); i++) {
		uint8_t key[131], data[64], mac[SIGN_MAC_LEN];
		char got[2 * SIGN_MAC_LEN + 1];
		const uint8_t *k = key, *d = data;
		size_t klen = v[i].key_len, dlen = v[i].data_len;

		for (size_t j = 0; j < klen; j++)   /* case 4: 0x01, 0x02, ... */
			key[j] = v[i].key_byte == 1 ? (uint8_t)(j + 1) : v[i].key_byte;
		if (!klen) {
			k = (const uint8_t *)"Jefe";
			klen = 4;
		}
		if (v[i].data) {
			d = (const uint8_t *)v[i].data;
			dlen = strlen(v[i].data);
		} else {
			memset(data, v[i].data_byte, dlen);
		}
		sign_hmac(k, klen, d, dlen, mac);
		hex(mac, SIGN_MAC_LEN, got);
		got[strlen(v[i].mac)] = '\0';
		ck_assert_msg(strcmp(got, v[i].mac) == 0, "case %zu: %s", i + 1, got);
	}
}
END_TEST

static void inline_key(struct sign_key *k, const char *text)
{
	ck_assert_msg(sign_key_open(text, -1, k, ERR) == 0, "%s", err);
}

/* The trailer binds the bytes, the id, the key, the counter and the origin. */
START_TEST(test_trailer_verdicts)
{
	struct sign_key k, other;
	struct sign_meta meta = { 7, true }, got;
	uint8_t stored[64 + SIGN_TRAILER];
	size_t n = sizeof(stored), t;

	inline_key(&k, "0123456789abcdef0123456789abcdef");
	inline_key(&other, "0123456789abcdef0123456789abcdeF");
	memset(stored, 'p', 64);
	sign_trailer(&k, "a", stored, 64, &meta, stored + 64);
	ck_assert(memcmp(stored + 64, "\007\0\0\0\0\0\0\0\001\0\0\0\0\0\0\0", 16) == 0);
	ck_assert(memcmp(stored + 64 + 16 + SIGN_MAC_LEN, "DLSSIG\002\000", 8) == 0);
	ck_assert_int_eq(sign_verify(&k, "a", stored, n, &got, &t), SIGN_OK);
	ck_assert_uint_eq(t, SIGN_TRAILER);
	ck_assert_uint_eq(got.seq, 7);
	ck_assert(got.sandboxed);
	ck_assert_int_eq(sign_verify(&k, "b", stored, n, &got, &t), SIGN_MISMATCH);
	ck_assert_uint_eq(t, 0);
	ck_assert_uint_eq(got.seq, 0);
	ck_assert_int_eq(sign_verify(&k, "a.", stored, n, &got, &t), SIGN_MISMATCH);
	ck_assert_int_eq(sign_verify(&other, "a", stored, n, &got, &t), SIGN_MISMATCH);
	/* Every byte counts: the blob's, the counter's, the origin's, the
	 * reserved ones, the MAC's. */
	for (size_t i = 0; i < n - SIGN_MAGIC_LEN; i++) {
		stored[i] ^= 1;
		ck_assert_int_eq(sign_verify(&k, "a", stored, n, &got, &t), SIGN_MISMATCH);
		stored[i] ^= 1;
	}
	for (size_t i = n - SIGN_MAGIC_LEN; i < n; i++) {
		stored[i] ^= 1;
		ck_assert_int_ne(sign_verify(&k, "a", stored, n, &got, &t), SIGN_OK);
		stored[i] ^= 1;
	}
	/* Cut short: through the magic, or below any trailer. */
	for (size_t cut = 1; cut < SIGN_MAGIC_LEN; cut++)
		ck_assert_int_eq(sign_verify(&k, "a", stored, n - cut, &got, &t), SIGN_TRUNCATED);
	ck_assert_int_eq(sign_verify(&k, "a", stored, SIGN_TRAILER_V1 - 1, &got, &t),
	                 SIGN_TRUNCATED);
	ck_assert_int_eq(sign_verify(&k, "a", stored, 7, &got, &t), SIGN_TRUNCATED);
	ck_assert_int_eq(sign_verify(&k, "a", stored, 0, &got, &t), SIGN_TRUNCATED);
	/* Cut anywhere else it is just not signed (a pickle ends in '.'). */
	ck_assert_int_eq(sign_verify(&k, "a", stored, 64, &got, &t), SIGN_UNSIGNED);
	/* An empty blob signs too. */
	sign_trailer(&k, "e", stored, 0, &meta, stored);
	ck_assert_int_eq(sign_verify(&k, "e", stored, SIGN_TRAILER, &got, &t), SIGN_OK);
	ck_assert_str_eq(sign_verdict_reason(SIGN_UNSIGNED),
	                 "it carries no signature (it was written before dolsot signed "
	                 "sessions, or not by dolsot), so it was not loaded");
	ck_assert_str_eq(sign_verdict_reason(SIGN_TRUNCATED),
	                 "it is truncated (its stored bytes end before the end of its "
	                 "signature), so it was not loaded");
}
END_TEST

/* A version 1 trailer (an older dolsot's) still verifies, with no meta. */
START_TEST(test_version_1_trailers_verify)
{
	static const char key[] = "0123456789abcdef0123456789abcdef";
	static const char domain[] = "dolsot session v1";
	uint8_t msg[128], stored[64 + SIGN_TRAILER_V1];
	struct sign_key k;
	struct sign_meta got;
	size_t m = 0, t;

	inline_key(&k, key);
	memset(stored, '.', 64);
	memcpy(msg, domain, sizeof(domain));
	m += sizeof(domain);
	memcpy(msg + m, "a", 2);
	m += 2;
	memcpy(msg + m, stored, 64);
	m += 64;
	sign_hmac((const uint8_t *)key, strlen(key), msg, m, stored + 64);
	memcpy(stored + 64 + SIGN_MAC_LEN, "DLSSIG\001\000", 8);
	ck_assert_int_eq(sign_verify(&k, "a", stored, sizeof(stored), &got, &t), SIGN_OK);
	ck_assert_uint_eq(t, SIGN_TRAILER_V1);
	ck_assert_uint_eq(got.seq, 0);
	ck_assert(!got.sandboxed);
	ck_assert_int_eq(sign_verify(&k, "b", stored, sizeof(stored), &got, &t), SIGN_MISMATCH);
	stored[3] ^= 1;
	ck_assert_int_eq(sign_verify(&k, "a", stored, sizeof(stored), &got, &t), SIGN_MISMATCH);
	stored[3] ^= 1;
	/* Relabelled as version 2, it is not one. */
	stored[sizeof(stored) - 2] = 2;
	ck_assert_int_ne(sign_verify(&k, "a", stored, sizeof(stored), &got, &t), SIGN_OK);
}
END_TEST

static void write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	ck_assert_int_eq(fchmod(fd, mode), 0);
	close(fd);
}

static size_t entries(void)
{
	DIR *d = opendir(dir);
	const struct dirent *de;
	size_t n = 0;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	closedir(d);
	return n;
}

/* No spec: the key file in the directory, made 0600 with 64 hex digits,
 * and the same key read back; a key file named by path gives the same. */
START_TEST(test_key_file_made_on_first_use)
{
	char path[PATH_MAX + 32], buf[128];
	struct sign_key a, b, c, d;
	struct stat st;
	ssize_t n;
	int fd;

	ck_assert_msg(sign_key_open(NULL, dirfd_, &a, ERR) == 0, "%s", err);
	ck_assert(a.fresh);
	snprintf(path, sizeof(path), "%s/%s", dir, SIGN_KEY_FILE);
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert(a.made.tv_sec == st.st_mtim.tv_sec && a.made.tv_nsec == st.st_mtim.tv_nsec);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_uint_eq(st.st_mode & 0777, 0600);
	ck_assert_uint_eq(entries(), 1);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = read(fd, buf, sizeof(buf));
	close(fd);
	ck_assert_int_eq(n, 65);
	ck_assert_int_eq(buf[64], '\n');
	ck_assert_uint_eq(strspn(buf, "0123456789abcdef"), 64);
	ck_assert_int_eq(sign_key_open("", dirfd_, &b, ERR), 0);
	ck_assert(memcmp(a.block, b.block, sizeof(a.block)) == 0);
	ck_assert(!b.fresh);   /* found, not made */
	ck_assert(b.made.tv_sec == a.made.tv_sec && b.made.tv_nsec == a.made.tv_nsec);
	ck_assert_int_eq(sign_key_open(path, -1, &c, ERR), 0);
	ck_assert(memcmp(a.block, c.block, sizeof(a.block)) == 0);
	ck_assert(!c.fresh && c.made.tv_sec == 0);   /* the caller's own file */
	/* The file's text, given inline, is the same key. */
	buf[64] = '\0';
	ck_assert_int_eq(sign_key_open(buf, -1, &d, ERR), 0);
	ck_assert(memcmp(a.block, d.block, sizeof(a.block)) == 0);
	ck_assert(!d.fresh && d.made.tv_sec == 0);
}
END_TEST

/* Two first calls at once (here eight) end up with one key file and one
 * key, and leave no temp file behind. */
START_TEST(test_key_file_race_agrees)
{
	int go[2], out[2], fresh = 0;
	pid_t kids[RACERS];
	struct sign_key keys[RACERS];

	ck_assert_int_eq(pipe2(go, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
	for (int i = 0; i < RACERS; i++) {
		kids[i] = fork();
		ck_assert_int_ge(kids[i], 0);
		if (kids[i] == 0) {
			struct sign_key k;
			char c;

			close(go[1]);
			if (read(go[0], &c, 1) != 0)   /* EOF: all start at once */
				_exit(3);
			if (sign_key_open(NULL, dirfd_, &k, ERR) < 0)
				_exit(4);
			_exit(write(out[1], &k, sizeof(k)) == (ssize_t)sizeof(k) ? 0 : 5);
		}
	}
	close(go[0]);
	close(go[1]);
	close(out[1]);
	for (int i = 0; i < RACERS; i++) {
		int st;

		ck_assert_int_eq(waitpid(kids[i], &st, 0), kids[i]);
		ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "racer %d: %d", i, st);
	}
	for (int i = 0; i < RACERS; i++) {
		ck_assert_int_eq(read(out[0], &keys[i], sizeof(keys[i])), (ssize_t)sizeof(keys[i]));
		ck_assert(memcmp(keys[i].block, keys[0].block, sizeof(keys[0].block)) == 0);
		fresh += keys[i].fresh;
	}
	ck_assert_int_eq(fresh, 1);   /* the one whose file was linked made it */
	close(out[0]);
	ck_assert_uint_eq(entries(), 1);
}
END_TEST

START_TEST(test_key_file_refusals)
{
	char path[PATH_MAX + 32], link_path[PATH_MAX + 32];
	struct sign_key k;

	snprintf(path, sizeof(path), "%s/%s", dir, SIGN_KEY_FILE);
	write_file(path, "0123456789abcdef0123456789abcdef\n", 0644);
	ck_assert_int_eq(sign_key_open(NULL, dirfd_, &k, ERR), -1);
	ck_assert_str_eq(err, "the session key file .session.key grants group or other "
	                      "permissions (mode 644): make it 0600");
	write_file(path, "too short\n", 0600);
	ck_assert_int_eq(sign_key_open(NULL, dirfd_, &k, ERR), -1);
	ck_assert_str_eq(err, "the session key file must hold 32 to 1024 bytes of key, not 9");
	ck_assert_int_eq(unlink(path), 0);
	snprintf(link_path, sizeof(link_path), "%s/real", dir);
	write_file(link_path, "0123456789abcdef0123456789abcdef\n", 0600);
	ck_assert_int_eq(symlink(link_path, path), 0);
	ck_assert_int_eq(sign_key_open(NULL, dirfd_, &k, ERR), -1);
	ck_assert_str_eq(err, "cannot open the session key file .session.key: it is a "
	                      "symbolic link");
	/* A named key file that is missing is not made. */
	ck_assert_int_eq(sign_key_open("/nonexistent/dolsot.key", -1, &k, ERR), -1);
	ck_assert_str_eq(err, "cannot open the session key file /nonexistent/dolsot.key: "
	                      "No such file or directory");
	ck_assert_int_eq(sign_key_open("short", -1, &k, ERR), -1);
	ck_assert_str_eq(err, "DOLSOT_SESSION_KEY must hold 32 to 1024 bytes of key, not 5");
	ck_assert_int_eq(sign_key_open(NULL, -1, &k, ERR), -1);
	ck_assert_str_eq(err, "this store has no directory to keep a session key file in: "
	                      "set DOLSOT_SESSION_KEY");
	if (geteuid() == 0) {
		ck_assert_int_eq(lchown(link_path, 65534, 65534), 0);
		ck_assert_int_eq(sign_key_open(link_path, -1, &k, ERR), -1);
		ck_assert_msg(strstr(err, "is not owned by uid 0"), "%s", err);
	}
}
END_TEST

static Suite *sign_suite(void)
{
	Suite *s = suite_create("sign");
	TCase *tc = tcase_create("sign");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_hmac_sha256_rfc4231);
	tcase_add_test(tc, test_trailer_verdicts);
	tcase_add_test(tc, test_version_1_trailers_verify);
	tcase_add_test(tc, test_key_file_made_on_first_use);
	tcase_add_test(tc, test_key_file_race_agrees);
	tcase_add_test(tc, test_key_file_refusals);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run(sign_suite());
}
