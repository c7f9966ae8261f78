/*
 * check_opts.c - toolbox specs, numbers and DOLSOT_* settings.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "opts.h"
#include "store.h"

static void toolbox_ok(const char *spec, const char *module, const char *alias)
{
	struct toolbox_arg t;
	char err[OPTS_ERR_MAX];

	ck_assert_msg(opts_parse_toolbox(spec, &t, err, sizeof(err)) == 0, "%s: %s", spec, err);
	ck_assert_str_eq(t.module, module);
	ck_assert_str_eq(t.alias, alias);
	toolbox_arg_release(&t);
}

static void toolbox_bad(const char *spec, const char *needle)
{
	struct toolbox_arg t;
	char err[OPTS_ERR_MAX] = "";

	ck_assert_msg(opts_parse_toolbox(spec, &t, err, sizeof(err)) < 0, "%s accepted", spec);
	ck_assert_msg(strstr(err, needle), "%s: %s", spec, err);
	ck_assert_ptr_null(t.module);
	ck_assert_ptr_null(t.alias);
}

START_TEST(toolbox_specs)
{
	toolbox_ok("mytools:mt", "mytools", "mt");
	toolbox_ok("a.b.c:_x1", "a.b.c", "_x1");
	toolbox_ok("pkg:match", "pkg", "match");   /* soft keyword is fine */
	toolbox_bad("mytools", "expected MODULE:ALIAS");
	toolbox_bad(":mt", "the module is empty");
	toolbox_bad("m:", "the alias is empty");
	toolbox_bad("m:a:b", "not a Python identifier");
	toolbox_bad("m:a b", "not a Python identifier");
	toolbox_bad("m:9", "not a Python identifier");
	toolbox_bad("m:lambda", "keyword");
	toolbox_bad("m:None", "keyword");
	toolbox_bad("a..b:x", "dotted");
	toolbox_bad(".a:x", "dotted");
	toolbox_bad("a.:x", "dotted");
	toolbox_bad("a.class:x", "dotted");
	toolbox_bad("caf\xc3\xa9:x", "dotted");
	toolbox_bad("m\n:x", "\\x0a");
}
END_TEST

START_TEST(seconds)
{
	double v;

	ck_assert_int_eq(opts_parse_seconds("2", &v), 0);
	ck_assert(v == 2.0);
	ck_assert_int_eq(opts_parse_seconds("0.25", &v), 0);
	ck_assert(v == 0.25);
	ck_assert_int_eq(opts_parse_seconds("1e3", &v), 0);
	ck_assert(v == 1000.0);
	const char *bad[] = { "", "0", "-0", "-1", "abc", "nan", "inf", "-inf", "1e308",
	                      "1e999", " 1", "1 ", "5s", "0x", NULL };
	for (size_t i = 0; bad[i]; i++)
		ck_assert_msg(opts_parse_seconds(bad[i], &v) < 0, "'%s' accepted", bad[i]);
}
END_TEST

START_TEST(counts_and_days)
{
	uint64_t n;
	double d;

	ck_assert_int_eq(opts_parse_count("0", &n), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert_int_eq(opts_parse_count("18446744073709551615", &n), 0);
	ck_assert_uint_eq(n, UINT64_MAX);
	const char *bad[] = { "", "-1", "+1", "1.5", "18446744073709551616", "1k", " 1", NULL };
	for (size_t i = 0; bad[i]; i++)
		ck_assert_msg(opts_parse_count(bad[i], &n) < 0, "'%s' accepted", bad[i]);
	ck_assert_int_eq(opts_parse_nonneg("0", &d), 0);
	ck_assert(d == 0);
	ck_assert_int_eq(opts_parse_nonneg("-0", &d), 0);
	ck_assert(d == 0);
	ck_assert_int_eq(opts_parse_nonneg("0.5", &d), 0);
	ck_assert(d == 0.5);
	ck_assert_int_lt(opts_parse_nonneg("-1", &d), 0);
	ck_assert_int_lt(opts_parse_nonneg("nan", &d), 0);
}
END_TEST

START_TEST(settings_precedence)
{
	struct settings s = { 0 };
	char err[OPTS_ERR_MAX];

	unsetenv("DOLSOT_TIMEOUT");
	unsetenv("DOLSOT_MAX_OUTPUT");
	unsetenv("DOLSOT_SESSION_TTL_DAYS");
	unsetenv("DOLSOT_CACHE_DIR");
	ck_assert_int_eq(opts_settings_from_env(&s, err, sizeof(err)), 0);
	ck_assert(s.timeout == DEFAULT_TIMEOUT);
	ck_assert_uint_eq(s.max_output, DEFAULT_MAX_OUTPUT);
	ck_assert(s.ttl_days == DEFAULT_TTL_DAYS);
	ck_assert_ptr_null(s.cache_dir);

	setenv("DOLSOT_TIMEOUT", "3.5", 1);
	setenv("DOLSOT_MAX_OUTPUT", "0", 1);
	setenv("DOLSOT_SESSION_TTL_DAYS", "0", 1);
	setenv("DOLSOT_CACHE_DIR", "/somewhere", 1);
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(opts_settings_from_env(&s, err, sizeof(err)), 0);
	ck_assert(s.timeout == 3.5);
	ck_assert_uint_eq(s.max_output, 0);
	ck_assert(s.ttl_days == 0);
	ck_assert_str_eq(s.cache_dir, "/somewhere");

	memset(&s, 0, sizeof(s));
	s.timeout = 9;   /* the flag wins */
	ck_assert_int_eq(opts_settings_from_env(&s, err, sizeof(err)), 0);
	ck_assert(s.timeout == 9);

	setenv("DOLSOT_TIMEOUT", "", 1);   /* empty means unset */
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(opts_settings_from_env(&s, err, sizeof(err)), 0);
	ck_assert(s.timeout == DEFAULT_TIMEOUT);

	setenv("DOLSOT_MAX_OUTPUT", "lots", 1);
	memset(&s, 0, sizeof(s));
	ck_assert_int_lt(opts_settings_from_env(&s, err, sizeof(err)), 0);
	ck_assert(strstr(err, "DOLSOT_MAX_OUTPUT='lots'"));
}
END_TEST

START_TEST(typegate_settings)
{
	struct settings s = { 0 };
	char err[OPTS_ERR_MAX];
	const char *bad[] = { "2", "yes", "true", "00", " 1", "1 ", NULL };

	unsetenv("DOLSOT_TIMEOUT");
	unsetenv("DOLSOT_MAX_OUTPUT");
	unsetenv("DOLSOT_SESSION_TTL_DAYS");
	unsetenv("DOLSOT_TYPECHECK");
	unsetenv("DOLSOT_TY_BIN");
	ck_assert_int_eq(opts_settings_from_env(&s, err, sizeof(err)), 0);
	ck_assert(s.typecheck);
	ck_assert_str_eq(s.ty_bin, "ty");

	setenv("DOLSOT_TYPECHECK", "0", 1);
	setenv("DOLSOT_TY_BIN", "/opt/bin/mypy", 1);
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(opts_settings_from_env(&s, err, sizeof(err)), 0);
	ck_assert(!s.typecheck);
	ck_assert_str_eq(s.ty_bin, "/opt/bin/mypy");

	setenv("DOLSOT_TYPECHECK", "1", 1);
	setenv("DOLSOT_TY_BIN", "", 1);   /* empty means unset */
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(opts_settings_from_env(&s, err, sizeof(err)), 0);
	ck_assert(s.typecheck);
	ck_assert_str_eq(s.ty_bin, "ty");

	for (size_t i = 0; bad[i]; i++) {
		setenv("DOLSOT_TYPECHECK", bad[i], 1);
		memset(&s, 0, sizeof(s));
		ck_assert_int_lt(opts_settings_from_env(&s, err, sizeof(err)), 0);
		ck_assert_msg(strstr(err, "DOLSOT_TYPECHECK='"), "%s", err);
	}
	unsetenv("DOLSOT_TYPECHECK");
	unsetenv("DOLSOT_TY_BIN");
}
END_TEST

START_TEST(carry_switch)
{
	struct settings s = { 0 };
	char err[OPTS_ERR_MAX];
	bool on = false;
	const char *bad[] = { "", "yes", "true", "01", "1 ", "2", "-0", NULL };

	ck_assert_int_eq(opts_parse_switch("1", &on), 0);
	ck_assert(on);
	ck_assert_int_eq(opts_parse_switch("0", &on), 0);
	ck_assert(!on);
	for (size_t i = 0; bad[i]; i++)
		ck_assert_msg(opts_parse_switch(bad[i], &on) < 0, "'%s' accepted", bad[i]);

	unsetenv("DOLSOT_TIMEOUT");
	unsetenv("DOLSOT_MAX_OUTPUT");
	unsetenv("DOLSOT_SESSION_TTL_DAYS");
	unsetenv("DOLSOT_CARRY");
	ck_assert_int_eq(opts_settings_from_env(&s, err, sizeof(err)), 0);
	ck_assert(s.carry);   /* on by default */
	setenv("DOLSOT_CARRY", "0", 1);
	ck_assert_int_eq(opts_settings_from_env(&s, err, sizeof(err)), 0);
	ck_assert(!s.carry);
	setenv("DOLSOT_CARRY", "", 1);   /* empty means unset */
	ck_assert_int_eq(opts_settings_from_env(&s, err, sizeof(err)), 0);
	ck_assert(s.carry);
	setenv("DOLSOT_CARRY", "off", 1);
	ck_assert_int_lt(opts_settings_from_env(&s, err, sizeof(err)), 0);
	ck_assert_str_eq(err, "DOLSOT_CARRY='off' is not valid: expected 0 (off) or 1 (on)");
	unsetenv("DOLSOT_CARRY");
}
END_TEST

START_TEST(session_ids)
{
	char err[STORE_ERR_MAX], id[200];

	ck_assert(store_id_valid("task-42", err, sizeof(err)));
	ck_assert(store_id_valid("a.b_c-D9", err, sizeof(err)));
	ck_assert(store_id_valid("-x", err, sizeof(err)));
	memset(id, 'x', 128);
	id[128] = '\0';
	ck_assert(store_id_valid(id, err, sizeof(err)));
	id[128] = 'x';
	id[129] = '\0';
	ck_assert(!store_id_valid(id, err, sizeof(err)));
	ck_assert(!store_id_valid("", err, sizeof(err)));
	ck_assert(!store_id_valid(".x", err, sizeof(err)));
	ck_assert(!store_id_valid("a/b", err, sizeof(err)));
	ck_assert(!store_id_valid("a b", err, sizeof(err)));
	ck_assert(!store_id_valid("\xff", err, sizeof(err)));
	ck_assert(strstr(err, "invalid session id"));
}
END_TEST

START_TEST(quoting)
{
	char q[64];

	opts_quote(q, sizeof(q), "a\tb'c");
	ck_assert_str_eq(q, "a\\x09b\\x27c");
	opts_quote(q, 8, "abcdefghijkl");
	ck_assert_uint_lt(strlen(q), 8);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("opts");
	TCase *tc = tcase_create("opts");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, toolbox_specs);
	tcase_add_test(tc, seconds);
	tcase_add_test(tc, counts_and_days);
	tcase_add_test(tc, settings_precedence);
	tcase_add_test(tc, typegate_settings);
	tcase_add_test(tc, carry_switch);
	tcase_add_test(tc, session_ids);
	tcase_add_test(tc, quoting);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
