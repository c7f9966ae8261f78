/*
 * fuzz_opts.c - libFuzzer harness for what a caller types: toolbox specs,
 * numbers, DOLSOT_* variables (opts.c) and session ids (store_name.c).
 *
 * The input, cut at its first NUL as argv and environ would cut it, goes
 * to every parser.  Whatever a parser accepts must satisfy the contract
 * the rest of dolsot relies on; whatever it refuses must come with a
 * one-line, printable reason.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "opts.h"
#include "store_name.h"

/* A message for the caller: NUL-terminated in len, printable, one line. */
static void check_message(const char *s, size_t len)
{
	size_t n = strnlen(s, len);

	CHECK(n < len);
	for (size_t i = 0; i < n; i++)
		CHECK((unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x7f);
}

static bool ident_char(char c, bool first)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' ||
	       (!first && c >= '0' && c <= '9');
}

static void check_identifier(const char *s, size_t n)
{
	CHECK(n > 0);
	for (size_t i = 0; i < n; i++)
		CHECK(ident_char(s[i], i == 0));
}

static void fuzz_toolbox(const char *s)
{
	struct toolbox_arg t;
	char err[OPTS_ERR_MAX];

	err[0] = '\0';
	if (opts_parse_toolbox(s, &t, err, sizeof(err)) < 0) {
		CHECK(err[0] != '\0');
		check_message(err, sizeof(err));
		CHECK(t.module == NULL && t.alias == NULL);
		return;
	}
	/* MODULE:ALIAS exactly, split at the first colon. */
	CHECK(strlen(t.module) + 1 + strlen(t.alias) == strlen(s));
	CHECK(memcmp(s, t.module, strlen(t.module)) == 0 && s[strlen(t.module)] == ':');
	check_identifier(t.alias, strlen(t.alias));
	CHECK(!opts_is_keyword(t.alias));
	for (const char *part = t.module;;) {
		const char *dot = strchr(part, '.');
		size_t n = dot ? (size_t)(dot - part) : strlen(part);
		char word[256];

		check_identifier(part, n);
		CHECK(n < sizeof(word));
		memcpy(word, part, n);
		word[n] = '\0';
		CHECK(!opts_is_keyword(word));
		if (!dot)
			break;
		part = dot + 1;
	}
	toolbox_arg_release(&t);
}

static void fuzz_numbers(const char *s)
{
	double d;
	uint64_t u;

	if (opts_parse_seconds(s, &d) == 0)
		CHECK(isfinite(d) && d > 0 && d <= 366.0 * 86400);
	if (opts_parse_nonneg(s, &d) == 0)
		CHECK(isfinite(d) && d >= 0 && !signbit(d) && d <= 1e9);
	if (opts_parse_count(s, &u) == 0) {
		char back[32];
		const char *digits = s;

		/* Only digits were accepted: they print back the same. */
		while (digits[0] == '0' && digits[1] != '\0')
			digits++;
		snprintf(back, sizeof(back), "%llu", (unsigned long long)u);
		CHECK(strcmp(back, digits) == 0);
	}
}

static void fuzz_quote(const char *s)
{
	static const size_t lens[] = { 1, 2, 5, 6, 7, 9, 64, 300 };
	char buf[300];

	opts_quote(buf, 0, s);   /* writes nothing */
	for (size_t i = 0; i < sizeof(lens) / sizeof(*lens); i++) {
		memset(buf, 'Z', sizeof(buf));
		opts_quote(buf, lens[i], s);
		check_message(buf, lens[i]);
	}
}

static void fuzz_id(const char *s)
{
	static const size_t lens[] = { 1, 7, 40, STORE_ERR_MAX };
	char err[STORE_ERR_MAX];
	size_t n = strlen(s);

	if (store_id_valid(s, NULL, 0)) {
		CHECK(n >= 1 && n <= STORE_ID_MAX && s[0] != '.');
		for (size_t i = 0; i < n; i++)
			CHECK(ident_char(s[i], false) || s[i] == '.' || s[i] == '-');
		return;
	}
	for (size_t i = 0; i < sizeof(lens) / sizeof(*lens); i++) {
		memset(err, 'Z', sizeof(err));
		CHECK(!store_id_valid(s, err, lens[i]));
		check_message(err, lens[i]);
	}
}

/* The first byte picks which DOLSOT_* variables get the rest as value. */
static void fuzz_env(uint8_t pick, const char *s)
{
	static const char *const names[] = {
		"DOLSOT_TIMEOUT", "DOLSOT_MAX_OUTPUT", "DOLSOT_SESSION_TTL_DAYS",
		"DOLSOT_CACHE_DIR", "DOLSOT_SERVER", "DOLSOT_STORE", "DOLSOT_SERVER_IDLE",
	};
	/* putenv with buffers of our own: setenv would leak a copy per run. */
	static char entries[sizeof(names) / sizeof(*names)][4200];
	struct settings st;
	char err[OPTS_ERR_MAX];

	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
		unsetenv(names[i]);
		if (pick & (1u << i)) {
			snprintf(entries[i], sizeof(entries[i]), "%s=%s", names[i], s);
			putenv(entries[i]);
		}
	}
	memset(&st, 0, sizeof(st));
	if (pick & 0x80)
		st.timeout = 5;   /* as if --timeout had been given */
	err[0] = '\0';
	if (opts_settings_from_env(&st, err, sizeof(err)) < 0) {
		CHECK(err[0] != '\0');
		check_message(err, sizeof(err));
		return;
	}
	CHECK(isfinite(st.timeout) && st.timeout > 0 && st.timeout <= 366.0 * 86400);
	CHECK(isfinite(st.ttl_days) && st.ttl_days >= 0);
	CHECK(isfinite(st.server_idle) && st.server_idle > 0);
	CHECK(st.store != STORE_KIND_MEMORY || st.server);
	CHECK(st.cache_dir == NULL || st.cache_dir[0] != '\0');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	CHECK(s != NULL);
	memcpy(s, data, size);
	s[size] = '\0';
	fuzz_toolbox(s);
	fuzz_numbers(s);
	fuzz_quote(s);
	fuzz_id(s);
	if (size > 0)
		fuzz_env(data[0], s[0] ? s + 1 : s);
	free(s);
	return 0;
}
