/*
 * check_opts.c - toolbox specs, numbers and DOLSOT_* settings.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ck_run.h"
#include "options.h"
#include "opts.h"
#include "store_name.h"

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

static void limit_ok(enum limit_kind k, const char *s, uint64_t want)
{
	uint64_t v = 0;
	char err[OPTS_ERR_MAX];

	ck_assert_msg(opts_parse_limit(k, s, "--x", &v, err, sizeof(err)) == 0, "%s: %s", s, err);
	ck_assert_uint_eq(v, want);
}

static void limit_bad(enum limit_kind k, const char *s, const char *needle)
{
	uint64_t v = 7;
	char err[OPTS_ERR_MAX] = "";

	ck_assert_msg(opts_parse_limit(k, s, limit_env(k), &v, err, sizeof(err)) < 0,
	              "'%s' accepted", s);
	ck_assert_msg(strstr(err, needle), "%s: %s", s, err);
	ck_assert_uint_eq(v, 7);
}

START_TEST(limits)
{
	limit_ok(LIMIT_MEMORY, "64M", 64u << 20);
	limit_ok(LIMIT_MEMORY, "1g", 1u << 30);
	limit_ok(LIMIT_MEMORY, "40000K", 40000u << 10);
	limit_ok(LIMIT_MEMORY, "33554432", 32u << 20);
	limit_ok(LIMIT_MAX_FILE_SIZE, "1", 1);
	limit_ok(LIMIT_MAX_FILE_SIZE, "2k", 2048);
	limit_ok(LIMIT_MAX_PROCS, "20", 20);
	limit_ok(LIMIT_CPU_SECONDS, "31622400", 31622400);
	limit_ok(LIMIT_RECURSION, "100", 100);
	limit_bad(LIMIT_MEMORY, "31M", "DOLSOT_MEMORY='31M' is not valid: expected a size like 512M");
	limit_bad(LIMIT_MEMORY, "", "DOLSOT_MEMORY=''");
	limit_bad(LIMIT_MEMORY, "64MB", "at least 32M");
	limit_bad(LIMIT_MEMORY, "64T", "K, M or G");
	limit_bad(LIMIT_MEMORY, "-64M", "K, M or G");
	limit_bad(LIMIT_MEMORY, "M", "K, M or G");
	limit_bad(LIMIT_MEMORY, "99999999999999999999G", "K, M or G");
	limit_bad(LIMIT_MAX_FILE_SIZE, "0", "at least 1");
	limit_bad(LIMIT_MAX_PROCS, "0", "from 1 to 4194304");
	limit_bad(LIMIT_MAX_PROCS, "4194305", "from 1 to 4194304");
	limit_bad(LIMIT_MAX_PROCS, "2k", "DOLSOT_MAX_PROCS='2k'");
	limit_bad(LIMIT_CPU_SECONDS, "1.5", "whole number of seconds");
	limit_bad(LIMIT_RECURSION, " 5", "DOLSOT_RECURSION_LIMIT=' 5'");
	{
		char err[OPTS_ERR_MAX];
		uint64_t v;

		ck_assert_int_lt(opts_parse_limit(LIMIT_MAX_PROCS, "x", "--max-procs", &v,
		                                  err, sizeof(err)), 0);
		ck_assert_str_eq(err, "--max-procs 'x' is not valid: expected a whole number "
		                      "of processes from 1 to 4194304");
	}
}
END_TEST

/* limit_parse_size, the one parser of a size setting, and the unit
 * cache's DOLSOT_UNIT_CACHE_SIZE read with it (0 allowed: no cache). */
START_TEST(sizes_and_the_unit_cache_size)
{
	char err[OPTS_ERR_MAX];
	uint64_t v = 0;

	ck_assert_int_eq(limit_parse_size("0", &v), 0);
	ck_assert_uint_eq(v, 0);
	ck_assert_int_eq(limit_parse_size("3k", &v), 0);
	ck_assert_uint_eq(v, 3072);
	ck_assert_int_eq(limit_parse_size("16777215G", &v), 0);
	ck_assert_uint_eq(v, (uint64_t)16777215 << 30);
	ck_assert_int_eq(limit_parse_size("18446744073709551615", &v), 0);
	ck_assert_uint_eq(v, UINT64_MAX);
	ck_assert_int_lt(limit_parse_size("18446744073709551616", &v), 0);
	ck_assert_int_lt(limit_parse_size("17179869184G", &v), 0);
	ck_assert_int_lt(limit_parse_size("", &v), 0);
	ck_assert_int_lt(limit_parse_size("G", &v), 0);
	ck_assert_int_lt(limit_parse_size("1KB", &v), 0);
	ck_assert_int_lt(limit_parse_size("1 ", &v), 0);
	unsetenv("DOLSOT_UNIT_CACHE_SIZE");
	ck_assert_int_eq(store_spec_cache_env(&v, err, sizeof(err)), 0);
	ck_assert_uint_eq(v, STORE_SPEC_UNIT_CACHE);
	setenv("DOLSOT_UNIT_CACHE_SIZE", "0", 1);
	ck_assert_int_eq(store_spec_cache_env(&v, err, sizeof(err)), 0);
	ck_assert_uint_eq(v, 0);
	setenv("DOLSOT_UNIT_CACHE_SIZE", "512m", 1);
	ck_assert_int_eq(store_spec_cache_env(&v, err, sizeof(err)), 0);
	ck_assert_uint_eq(v, 512u << 20);
	setenv("DOLSOT_UNIT_CACHE_SIZE", "-1", 1);
	ck_assert_int_lt(store_spec_cache_env(&v, err, sizeof(err)), 0);
	ck_assert_str_eq(err, "DOLSOT_UNIT_CACHE_SIZE is not valid: expected a size like 2G "
	                      "(bytes, with an optional K, M or G suffix), or 0 for no cache");
	unsetenv("DOLSOT_UNIT_CACHE_SIZE");
}
END_TEST

START_TEST(limit_names_and_formats)
{
	struct limits l = { { [LIMIT_MEMORY] = 64u << 20, [LIMIT_CPU_SECONDS] = 2,
	                      [LIMIT_MAX_FILE_SIZE] = 1536 } };
	char buf[128];

	ck_assert_str_eq(limit_name(LIMIT_MAX_FILE_SIZE), "max-file-size");
	ck_assert_str_eq(limit_env(LIMIT_RECURSION), "DOLSOT_RECURSION_LIMIT");
	limit_format(LIMIT_MEMORY, 3u << 30, buf, sizeof(buf));
	ck_assert_str_eq(buf, "3G");
	limit_format(LIMIT_MEMORY, 1000, buf, sizeof(buf));
	ck_assert_str_eq(buf, "1000");
	limit_format(LIMIT_MAX_PROCS, 1024, buf, sizeof(buf));
	ck_assert_str_eq(buf, "1024");
	limits_describe(&l, buf, sizeof(buf));
	ck_assert_str_eq(buf, "--memory 64M, --max-file-size 1536, --cpu-seconds 2");
	memset(&l, 0, sizeof(l));
	limits_describe(&l, buf, sizeof(buf));
	ck_assert_str_eq(buf, "");
}
END_TEST

static void mount_ok(const char *spec, const char *host, const char *virt,
                     enum mount_mode mode)
{
	struct mount_arg m;
	char err[OPTS_ERR_MAX];

	ck_assert_msg(opts_parse_mount(spec, &m, err, sizeof(err)) == 0, "%s: %s", spec, err);
	ck_assert_str_eq(m.host, host);
	ck_assert_str_eq(m.virt, virt);
	ck_assert_int_eq(m.mode, mode);
	mount_arg_release(&m);
}

static void mount_bad(const char *spec, const char *needle)
{
	struct mount_arg m;
	char err[OPTS_ERR_MAX] = "";

	ck_assert_msg(opts_parse_mount(spec, &m, err, sizeof(err)) < 0, "%s accepted", spec);
	ck_assert_msg(strstr(err, needle), "%s: %s", spec, err);
	ck_assert_ptr_null(m.host);
	ck_assert_ptr_null(m.virt);
}

START_TEST(mount_specs)
{
	mount_ok("/srv/data:/data", "/srv/data", "/data", MOUNT_RO);
	mount_ok("/srv/data/:/data//x/:rw", "/srv/data", "/data/x", MOUNT_RW);
	mount_ok("//a:/b:overlay", "/a", "/b", MOUNT_OVERLAY);
	mount_ok("/:/host:ro", "/", "/host", MOUNT_RO);
	ck_assert_str_eq(mount_mode_name(MOUNT_OVERLAY), "overlay");
	mount_bad("/a", "expected HOST:VIRTUAL[:MODE]");
	mount_bad(":/a", "expected HOST:VIRTUAL[:MODE]");
	mount_bad("/a:", "expected HOST:VIRTUAL[:MODE]");
	mount_bad("/a:/b:rx", "the mode must be ro, rw or overlay");
	mount_bad("/a:/b:", "the mode must be ro, rw or overlay");
	mount_bad("/a:/b:ro:x", "paths cannot contain ':'");
	mount_bad("a:/b", "the host path is not an absolute path");
	mount_bad("/a:b", "the virtual path is not an absolute path");
	mount_bad("/a/../etc:/b", "the host path has a '.' or '..' component");
	mount_bad("/a:/b/./c", "the virtual path has a '.' or '..' component");
	mount_bad("/a:/..", "'..'");
}
END_TEST

START_TEST(env_specs)
{
	char err[OPTS_ERR_MAX];

	ck_assert_int_eq(opts_check_env("HOME", err, sizeof(err)), 0);
	ck_assert_int_eq(opts_check_env("_X1=a=b", err, sizeof(err)), 0);
	ck_assert_int_eq(opts_check_env("EMPTY=", err, sizeof(err)), 0);
	ck_assert_int_lt(opts_check_env("", err, sizeof(err)), 0);
	ck_assert_int_lt(opts_check_env("=x", err, sizeof(err)), 0);
	ck_assert_int_lt(opts_check_env("1A=x", err, sizeof(err)), 0);
	ck_assert_int_lt(opts_check_env("A-B", err, sizeof(err)), 0);
	ck_assert_msg(strstr(err, "malformed --env 'A-B'"), "%s", err);
}
END_TEST

START_TEST(sandbox_and_limits_from_env)
{
	struct settings s = { 0 };
	char err[OPTS_ERR_MAX];

	setenv("DOLSOT_SANDBOX", "1", 1);
	setenv("DOLSOT_MEMORY", "1G", 1);
	setenv("DOLSOT_CPU_SECONDS", "5", 1);
	unsetenv("DOLSOT_MAX_PROCS");
	ck_assert_int_eq(opts_settings_from_env(&s, err, sizeof(err)), 0);
	ck_assert(s.sandbox);
	ck_assert_uint_eq(s.limits.v[LIMIT_MEMORY], 1u << 30);
	ck_assert_uint_eq(s.limits.v[LIMIT_CPU_SECONDS], 5);
	ck_assert_uint_eq(s.limits.v[LIMIT_MAX_PROCS], 0);

	memset(&s, 0, sizeof(s));
	s.limits.v[LIMIT_MEMORY] = 64u << 20;   /* the flag wins */
	setenv("DOLSOT_SANDBOX", "0", 1);
	ck_assert_int_eq(opts_settings_from_env(&s, err, sizeof(err)), 0);
	ck_assert(!s.sandbox);
	ck_assert_uint_eq(s.limits.v[LIMIT_MEMORY], 64u << 20);

	setenv("DOLSOT_SANDBOX", "yes", 1);
	memset(&s, 0, sizeof(s));
	ck_assert_int_lt(opts_settings_from_env(&s, err, sizeof(err)), 0);
	ck_assert_str_eq(err, "DOLSOT_SANDBOX='yes' is not valid: expected 1 (on) or 0 (off)");
	unsetenv("DOLSOT_SANDBOX");

	setenv("DOLSOT_MAX_FILE_SIZE", "big", 1);
	memset(&s, 0, sizeof(s));
	ck_assert_int_lt(opts_settings_from_env(&s, err, sizeof(err)), 0);
	ck_assert(strstr(err, "DOLSOT_MAX_FILE_SIZE='big' is not valid"));
	unsetenv("DOLSOT_MAX_FILE_SIZE");
	unsetenv("DOLSOT_MEMORY");
	unsetenv("DOLSOT_CPU_SECONDS");
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

START_TEST(trust_settings)
{
	struct settings s = { 0 };
	char err[OPTS_ERR_MAX];

	unsetenv("DOLSOT_MAX_SESSION_SIZE");
	unsetenv("DOLSOT_TRUST_SANDBOXED");
	unsetenv("DOLSOT_ALLOW_RW_CODE_MOUNTS");
	ck_assert_int_eq(opts_settings_from_env(&s, err, sizeof(err)), 0);
	ck_assert_uint_eq(s.max_session, (uint64_t)1 << 30);
	ck_assert(!s.trust_sandboxed);
	ck_assert(!s.rw_code_mounts);
	setenv("DOLSOT_MAX_SESSION_SIZE", "64M", 1);
	setenv("DOLSOT_TRUST_SANDBOXED", "1", 1);
	setenv("DOLSOT_ALLOW_RW_CODE_MOUNTS", "1", 1);
	ck_assert_int_eq(opts_settings_from_env(&s, err, sizeof(err)), 0);
	ck_assert_uint_eq(s.max_session, (uint64_t)64 << 20);
	ck_assert(s.trust_sandboxed);
	ck_assert(s.rw_code_mounts);
	setenv("DOLSOT_MAX_SESSION_SIZE", "0", 1);
	ck_assert_int_lt(opts_settings_from_env(&s, err, sizeof(err)), 0);
	ck_assert_msg(strstr(err, "DOLSOT_MAX_SESSION_SIZE='0' is not valid"), "%s", err);
	unsetenv("DOLSOT_MAX_SESSION_SIZE");
	setenv("DOLSOT_TRUST_SANDBOXED", "yes", 1);
	ck_assert_int_lt(opts_settings_from_env(&s, err, sizeof(err)), 0);
	ck_assert_str_eq(err, "DOLSOT_TRUST_SANDBOXED='yes' is not valid: expected 0 (refuse) "
	                      "or 1 (load them)");
	unsetenv("DOLSOT_TRUST_SANDBOXED");
	unsetenv("DOLSOT_ALLOW_RW_CODE_MOUNTS");
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

/* Namespaces: a stored name is ID or NS+ID; an id or a namespace a caller
 * gives never holds the '+'; each namespace sees only its own names. */
START_TEST(namespaced_names)
{
	char err[STORE_ERR_MAX], out[STORE_ID_MAX + 1], id[200], msg[128];

	ck_assert_int_eq(store_ns_name(NULL, "work", out, err, sizeof(err)), 0);
	ck_assert_str_eq(out, "work");
	ck_assert_int_eq(store_ns_name("default", "work", out, err, sizeof(err)), 0);
	ck_assert_str_eq(out, "work");
	ck_assert_int_eq(store_ns_name("mcp", "work", out, err, sizeof(err)), 0);
	ck_assert_str_eq(out, "mcp+work");
	ck_assert(store_id_valid(out, err, sizeof(err)));
	ck_assert(store_ns_holds("mcp", "mcp+work"));
	ck_assert(!store_ns_holds("mc", "mcp+work"));
	ck_assert(!store_ns_holds(NULL, "mcp+work"));
	ck_assert(store_ns_holds(NULL, "work"));
	ck_assert(store_ns_holds("default", "work"));
	ck_assert(!store_ns_holds("mcp", "work"));
	ck_assert_str_eq(store_ns_id("mcp+work"), "work");
	ck_assert_str_eq(store_ns_id("work"), "work");
	ck_assert_int_eq(store_ns_name("mcp", "a+b", out, err, sizeof(err)), -1);
	ck_assert(strstr(err, "invalid session id 'a+b'"));
	ck_assert_int_eq(store_ns_name("a+b", "x", out, err, sizeof(err)), -1);
	ck_assert(strstr(err, "invalid namespace 'a+b'"));
	ck_assert(!store_part_valid("a+b", "session id", STORE_ID_MAX, err, sizeof(err)));
	ck_assert(!store_id_valid("a+b+c", err, sizeof(err)));
	ck_assert(!store_id_valid("+b", err, sizeof(err)));
	ck_assert(!store_id_valid("a+", err, sizeof(err)));
	ck_assert(!store_id_valid(".a+b", err, sizeof(err)));
	ck_assert(!store_id_valid("a+.b", err, sizeof(err)));
	/* Together at most STORE_ID_MAX: the id's room shrinks by the prefix. */
	memset(id, 'x', 124);
	id[124] = '\0';
	ck_assert_int_eq(store_ns_name("mcp", id, out, err, sizeof(err)), 0);
	id[124] = 'x';
	id[125] = '\0';
	ck_assert_int_eq(store_ns_name("mcp", id, out, err, sizeof(err)), -1);
	ck_assert(strstr(err, "at most 124 characters there"));
	memset(id, 'n', 33);
	id[33] = '\0';
	ck_assert_int_eq(store_ns_name(id, "x", out, err, sizeof(err)), -1);
	snprintf(msg, sizeof(msg), "session 'mcp+work' is busy; 'mcp+x' too; 'other+y'");
	store_ns_unname(msg, sizeof(msg), "mcp");
	ck_assert_str_eq(msg, "session 'work' is busy; 'x' too; 'other+y'");
	snprintf(msg, sizeof(msg), "run 'dolsot --reset mcp+w' to start it afresh");
	store_ns_unname(msg, sizeof(msg), "mcp");
	ck_assert_str_eq(msg, "run 'dolsot --namespace mcp --reset w' to start it afresh");
	snprintf(msg, 40, "run 'dolsot --reset mcp+w' to start");
	store_ns_unname(msg, 40, "mcp");   /* no room: the command stays */
	ck_assert_str_eq(msg, "run 'dolsot --reset mcp+w' to start");
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

/* The flags and DOLSOT_ variables man/dolsot.1 lists (the .It lines of
 * its OPTIONS and ENVIRONMENT), each as "--flag", "-h" or "DOLSOT_X", one
 * per line of out. */
static void man_lists(char *out, size_t outlen)
{
	FILE *f = fopen("man/dolsot.1", "r");
	char line[1024], section[64] = "";

	ck_assert_msg(f != NULL, "man/dolsot.1: %s", strerror(errno));
	out[0] = '\0';
	while (fgets(line, sizeof(line), f)) {
		const char *want = NULL;
		char *save = NULL;

		if (strncmp(line, ".Sh ", 4) == 0)
			snprintf(section, sizeof(section), "%.*s", (int)strcspn(line + 4, "\n"),
			         line + 4);
		if (strcmp(section, "OPTIONS") == 0 && strncmp(line, ".It Fl ", 7) == 0)
			want = "Fl";
		if (strcmp(section, "ENVIRONMENT") == 0 && strncmp(line, ".It Ev ", 7) == 0)
			want = "Ev";
		for (char *w = strtok_r(line + 4, " ,\n", &save), *prev = NULL; want && w;
		     prev = w, w = strtok_r(NULL, " ,\n", &save)) {
			if (!prev || strcmp(prev, want) != 0)
				continue;
			if (strcmp(want, "Ev") == 0 && strncmp(w, "DOLSOT_", 7) != 0)
				continue;
			snprintf(out + strlen(out), outlen - strlen(out), "%s%s\n",
			         strcmp(want, "Fl") == 0 ? "-" : "", w);
		}
	}
	fclose(f);
}

/* Whether the line at item (up to its '\n') is a line of list. */
static bool listed(const char *list, const char *item)
{
	size_t n = strcspn(item, "\n");

	for (const char *p = list; *p; p += strcspn(p, "\n") + 1)
		if (strcspn(p, "\n") == n && strncmp(p, item, n) == 0)
			return true;
	return false;
}

/* Every flag and variable of options.h's table is in the man page's
 * OPTIONS or ENVIRONMENT, and every one there is in the table. */
START_TEST(options_match_man_page)
{
	char man[8192], table[8192] = "";

	man_lists(man, sizeof(man));
	for (size_t i = 0; i < options_count; i++) {
		const struct option_row *o = &options_table[i];

		if (o->flag)
			snprintf(table + strlen(table), sizeof(table) - strlen(table), "--%s\n",
			         o->flag);
		if (o->short_flag)
			snprintf(table + strlen(table), sizeof(table) - strlen(table), "-%c\n",
			         o->short_flag);
		if (o->env)
			snprintf(table + strlen(table), sizeof(table) - strlen(table), "%s\n",
			         o->env);
	}
	for (const char *p = table; *p; p += strcspn(p, "\n") + 1)
		ck_assert_msg(listed(man, p), "%.*s is in options.h's table but not in dolsot(1)",
		              (int)strcspn(p, "\n"), p);
	for (const char *p = man; *p; p += strcspn(p, "\n") + 1)
		ck_assert_msg(listed(table, p), "%.*s is in dolsot(1) but not in options.h's table",
		              (int)strcspn(p, "\n"), p);
}
END_TEST

/* A limit's row names the flag and variable rlimits.c gives it. */
START_TEST(option_rows_of_limits)
{
	for (size_t i = 0; i < options_count; i++) {
		const struct option_row *o = &options_table[i];

		if (o->type != OPTION_T_LIMIT || !o->flag)
			continue;
		ck_assert_str_eq(o->flag, limit_name(o->limit));
		ck_assert_str_eq(o->env, limit_env(o->limit));
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("opts");
	TCase *tc = tcase_create("opts");

	tcase_add_test(tc, toolbox_specs);
	tcase_add_test(tc, seconds);
	tcase_add_test(tc, counts_and_days);
	tcase_add_test(tc, settings_precedence);
	tcase_add_test(tc, typegate_settings);
	tcase_add_test(tc, carry_switch);
	tcase_add_test(tc, trust_settings);
	tcase_add_test(tc, session_ids);
	tcase_add_test(tc, namespaced_names);
	tcase_add_test(tc, quoting);
	tcase_add_test(tc, limits);
	tcase_add_test(tc, sizes_and_the_unit_cache_size);
	tcase_add_test(tc, limit_names_and_formats);
	tcase_add_test(tc, mount_specs);
	tcase_add_test(tc, env_specs);
	tcase_add_test(tc, sandbox_and_limits_from_env);
	tcase_add_test(tc, options_match_man_page);
	tcase_add_test(tc, option_rows_of_limits);
	suite_add_tcase(s, tc);
	return ck_run(s);
}
