/*
 * check_modrec.c - a session's module record (session.py writes it,
 * modrec.c reads it): the real binary's sessions name the modules their
 * values and carried pieces need and nothing of their own; a session
 * carrying its own environment, directory or sys.path records none; a
 * version 2 session loads and gains a record at its next save; and the
 * reader refuses every damaged or out-of-bounds record.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ck_run.h"
#include "cli_check.h"
#include "cli_helpers.h"
#include "modrec.h"

#define PY "/usr/bin/python3.11"

static struct cli_test fx;

static void setup(void)
{
	char err[4096];

	cli_test_begin(&fx, cli_usual_env);
	ck_assert_msg(cli_test_warm(&fx, err, sizeof(err)) == 0, "--server-start: %s", err);
}

static void teardown(void)
{
	cli_test_end(&fx);
}

/* modrec_read over len bytes of blob, in a memfd. */
static int read_bytes(const void *blob, size_t len, struct modrec *r)
{
	int fd = memfd_create("blob", MFD_CLOEXEC), rc;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, blob, len), (ssize_t)len);
	rc = modrec_read(fd, r);
	close(fd);
	return rc;
}

/* The stored session id's record, which must be there. */
static void stored_record(const char *id, struct modrec *r)
{
	size_t len;
	char *blob = cli_read_session(fx.store, id, &len);

	ck_assert_ptr_nonnull(blob);
	ck_assert_int_eq(read_bytes(blob, len, r), 1);
	free(blob);
}

static bool has(const struct modrec *r, const char *name)
{
	for (size_t i = 0; i < r->n; i++)
		if (strcmp(r->names[i], name) == 0)
			return true;
	return false;
}

/* The record's names on one line, for a failure's message. */
static const char *listed(const struct modrec *r)
{
	static char line[MODREC_MAX_BYTES + 1];
	size_t at = 0;

	line[0] = '\0';
	for (size_t i = 0; i < r->n; i++)
		at += (size_t)snprintf(line + at, sizeof(line) - at, "%s ", r->names[i]);
	return line;
}

static void cell(const char *id, const char *code)
{
	struct cli_run r;

	RUN_IN(&r, fx.tmp, NULL, "--session", id, code);
	ck_code(&r, 0);
	cli_run_release(&r);
}

START_TEST(names_what_values_need)
{
	static struct modrec r;

	cell("s", "import collections, decimal, json, fractions\n"
	          "d = collections.OrderedDict(a=decimal.Decimal(1))\n"
	          "j = json\n"
	          "f = [fractions.Fraction]\n"
	          "class Mine: pass\n"
	          "m = Mine()\n"
	          "n = 1");
	stored_record("s", &r);
	ck_assert_msg(has(&r, "collections") && has(&r, "decimal") && has(&r, "json") &&
	              has(&r, "fractions"), "record: %s", listed(&r));
	ck_assert(!has(&r, "__main__") && !has(&r, "builtins"));
	for (size_t i = 0; i < r.n; i++)
		ck_assert_msg(strncmp(r.names[i], "_dolsot", 7) != 0, "own module %s", r.names[i]);
	/* The next save records what the session still needs, no more. */
	cell("s", "del d, j, f, decimal, json, fractions");
	stored_record("s", &r);
	ck_assert_msg(!has(&r, "decimal") && !has(&r, "json") && !has(&r, "fractions"),
	              "record: %s", listed(&r));
}
END_TEST

START_TEST(names_carried_pieces)
{
	static struct modrec r;

	cell("s", "import random\nrandom.seed(7)\nx = 1");
	stored_record("s", &r);
	ck_assert_msg(has(&r, "random"), "record: %s", listed(&r));
}
END_TEST

START_TEST(own_settings_record_nothing)
{
	static const char *const cells[] = {
		"import os, decimal\nos.environ['MODREC_T'] = '1'\nd = decimal.Decimal(2)",
		"import os, decimal\nos.chdir('/')\nd = decimal.Decimal(2)",
		"import sys, decimal\nsys.path.append('/nonexistent')\nd = decimal.Decimal(2)",
	};
	static struct modrec r;

	for (size_t i = 0; i < sizeof(cells) / sizeof(*cells); i++) {
		char id[16];

		snprintf(id, sizeof(id), "own%zu", i);
		cell(id, cells[i]);
		stored_record(id, &r);
		ck_assert_msg(r.n == 0, "%s recorded: %s", id, listed(&r));
	}
}
END_TEST

START_TEST(version2_loads_and_gains_a_record)
{
	char cmd[9000], *path = cli_path(fx.tmp, "v2.blob");
	static struct modrec r;
	struct cli_run run;
	size_t n;
	char *blob;

	snprintf(cmd, sizeof(cmd), PY " -c '"
	         "import _pickle, decimal, sys\n"
	         "body = _pickle.dumps(decimal.Decimal(5), protocol=5)\n"
	         "index = _pickle.dumps({\"units\": [((\"d\",), len(body))], \"carry\": [],"
	         " \"count\": 1}, protocol=5)\n"
	         "open(sys.argv[1], \"wb\").write(b\"DLSS\\x02\" + len(index).to_bytes(8, "
	         "\"little\") + index + body)\n' '%s'", path);
	ck_assert_int_eq(system(cmd), 0);
	blob = cli_read_file(path, &n);
	ck_assert_ptr_nonnull(blob);
	ck_assert_int_eq(read_bytes(blob, n, &r), 0);
	ck_assert_uint_eq(r.n, 0);
	cell("first", "1");   /* makes the store */
	cli_put_session(fx.store, "old", blob, n);
	free(blob);
	RUN_IN(&run, fx.tmp, NULL, "--session", "old", "d + 1");
	ck_code(&run, 0);
	ck_out(&run, "Decimal('6')\n");
	cli_run_release(&run);
	stored_record("old", &r);
	ck_assert_msg(has(&r, "decimal"), "record: %s", listed(&r));
}
END_TEST

/* A version 3 blob whose record is the len bytes of text. */
static size_t make_blob(uint8_t *buf, const char *text, size_t len)
{
	static const uint8_t index[] = { 0x80, 0x05, '}', 0x94, '.' };
	size_t at = 0;

	memcpy(buf, "DLSS\003", 5);
	at = 5;
	for (int i = 0; i < 8; i++)
		buf[at++] = (uint8_t)(i == 0 ? sizeof(index) : 0);
	memcpy(buf + at, index, sizeof(index));
	at += sizeof(index);
	for (int i = 0; i < 4; i++)
		buf[at++] = (uint8_t)(len >> (8 * i));
	memcpy(buf + at, text, len);
	return at + len;
}

static int read_text(const char *text, size_t len, struct modrec *r)
{
	static uint8_t buf[MODREC_MAX_BYTES * 2 + 64];

	return read_bytes(buf, make_blob(buf, text, len), r);
}

START_TEST(reader_takes_good_records)
{
	static struct modrec r;
	static char many[MODREC_MAX_BYTES + 1];
	size_t at = 0;

	ck_assert_int_eq(read_text("", 0, &r), 1);
	ck_assert_uint_eq(r.n, 0);
	ck_assert_int_eq(read_text("a\nb._c.d9\nz\n", 12, &r), 1);
	ck_assert_uint_eq(r.n, 3);
	ck_assert_str_eq(r.names[1], "b._c.d9");
	for (int i = 0; i < MODREC_MAX_MODULES; i++)
		at += (size_t)sprintf(many + at, "m%03d\n", i);
	ck_assert_int_eq(read_text(many, at, &r), 1);
	ck_assert_uint_eq(r.n, MODREC_MAX_MODULES);
	ck_assert_int_eq(read_bytes("DLSS\001junk", 9, &r), 0);
	ck_assert_int_eq(read_bytes("DLS", 3, &r), 0);

	ck_assert_int_eq(read_bytes("", 0, &r), 0);
}
END_TEST

/* A version 4 head has its record where version 3 has it (units.h). */
START_TEST(reader_takes_a_version4_head)
{
	static struct modrec r;
	static uint8_t v4[64];
	size_t n = make_blob(v4, "json\nos.path\n", 13);

	v4[4] = 4;
	memcpy(v4 + n, "\0\0\0\0", 4);   /* no refs */
	ck_assert_int_eq(read_bytes(v4, n + 4, &r), 1);
	ck_assert_uint_eq(r.n, 2);
	ck_assert_str_eq(r.names[1], "os.path");
}
END_TEST

START_TEST(reader_refuses_damage)
{
	static const char *const bad[] = {
		"b\na\n", "a\na\n", "a", "a\n\n", "\n", "1a\n", "a..b\n", ".a\n", "a.\n",
		"a-b\n", "a b\n", "caf\xc3\xa9\n", "a\0b\n",
	};
	static const size_t bad_len[] = { 4, 4, 1, 3, 1, 3, 5, 3, 3, 4, 4, 6, 4 };
	static struct modrec r;
	static char many[MODREC_MAX_BYTES + 64];
	static uint8_t buf[MODREC_MAX_BYTES * 2 + 64];
	size_t at = 0, n;

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		errno = 0;
		ck_assert_msg(read_text(bad[i], bad_len[i], &r) == -1 && errno == EINVAL,
		              "record %zu taken", i);
		ck_assert_uint_eq(r.n, 0);
	}
	for (int i = 0; i <= MODREC_MAX_MODULES; i++)
		at += (size_t)sprintf(many + at, "m%03d\n", i);
	ck_assert_int_eq(read_text(many, at, &r), -1);
	memset(many, 'a', MODREC_MAX_BYTES);
	many[MODREC_MAX_BYTES] = '\n';
	ck_assert_int_eq(read_text(many, MODREC_MAX_BYTES + 1, &r), -1);
	/* Truncated anywhere: in the index's length, the index, the record's
	 * length or the record. */
	n = make_blob(buf, "abc\n", 4);
	for (size_t cut = 5; cut < n; cut++)
		ck_assert_msg(read_bytes(buf, cut, &r) == -1, "cut at %zu taken", cut);
	/* An index length past the end, and one that would overflow. */
	memset(buf + 5, 0xff, 8);
	ck_assert_int_eq(read_bytes(buf, n, &r), -1);
	memset(buf + 5, 0, 8);
	buf[5] = 0xf0;
	ck_assert_int_eq(read_bytes(buf, n, &r), -1);
}
END_TEST

static void add_cases(TCase *tc)
{
	tcase_add_test(tc, names_what_values_need);
	tcase_add_test(tc, names_carried_pieces);
	tcase_add_test(tc, own_settings_record_nothing);
	tcase_add_test(tc, version2_loads_and_gains_a_record);
	tcase_add_test(tc, reader_takes_good_records);
	tcase_add_test(tc, reader_takes_a_version4_head);
	tcase_add_test(tc, reader_refuses_damage);
}

int main(void)
{
	Suite *s = suite_create("modrec");
	TCase *tc = tcase_create("modrec");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	add_cases(tc);
	suite_add_tcase(s, tc);
	return ck_run(s);
}
