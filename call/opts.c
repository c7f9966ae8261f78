/*
 * opts.c - caller input: toolbox specs, numbers and DOLSOT_* variables.
 *
 * Everything here runs before any Python, so a caller mistake is reported
 * (exit 2) without starting a worker or touching the store.
 */
#include "opts.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sign.h"

static const char *const python_keywords[] = {
	"False", "None", "True", "and", "as", "assert", "async", "await",
	"break", "class", "continue", "def", "del", "elif", "else", "except",
	"finally", "for", "from", "global", "if", "import", "in", "is",
	"lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try",
	"while", "with", "yield",
};

bool opts_is_keyword(const char *s)
{
	for (size_t i = 0; i < sizeof(python_keywords) / sizeof(*python_keywords); i++)
		if (strcmp(s, python_keywords[i]) == 0)
			return true;
	return false;
}

static bool is_ident_start(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

static bool is_ident_char(char c)
{
	return is_ident_start(c) || (c >= '0' && c <= '9');
}

/* An ASCII identifier of n bytes at s. */
static bool is_identifier(const char *s, size_t n)
{
	if (n == 0 || !is_ident_start(s[0]))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!is_ident_char(s[i]))
			return false;
	return true;
}

/* Dotted module name: identifiers joined by single dots, none a keyword. */
static bool is_module_name(const char *s)
{
	const char *part = s;

	for (;;) {
		const char *dot = strchr(part, '.');
		size_t n = dot ? (size_t)(dot - part) : strlen(part);
		char word[256];

		if (!is_identifier(part, n) || n >= sizeof(word))
			return false;
		memcpy(word, part, n);
		word[n] = '\0';
		if (opts_is_keyword(word))
			return false;
		if (!dot)
			return true;
		part = dot + 1;
	}
}

void opts_quote(char *dst, size_t dstlen, const char *s)
{
	size_t o = 0, shown = 0;

	if (dstlen == 0)
		return;
	for (; *s && o + 5 < dstlen; s++) {
		unsigned char c = (unsigned char)*s;

		if (shown == 64) {
			o += (size_t)snprintf(dst + o, dstlen - o, "...");
			break;
		}
		if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'')
			dst[o++] = (char)c;
		else
			o += (size_t)snprintf(dst + o, dstlen - o, "\\x%02x", c);
		shown++;
	}
	dst[o < dstlen ? o : dstlen - 1] = '\0';
}

int opts_parse_toolbox(const char *spec, struct toolbox_arg *out, char *err,
                       size_t errlen)
{
	char q[300];
	const char *colon = strchr(spec, ':');

	opts_quote(q, sizeof(q), spec);
	out->module = out->alias = NULL;
	if (!colon) {
		snprintf(err, errlen, "malformed --toolbox '%s': expected MODULE:ALIAS", q);
		return -1;
	}
	if (colon == spec || colon[1] == '\0') {
		snprintf(err, errlen, "malformed --toolbox '%s': %s is empty, expected MODULE:ALIAS",
		         q, colon == spec ? "the module" : "the alias");
		return -1;
	}
	out->module = strndup(spec, (size_t)(colon - spec));
	out->alias = strdup(colon + 1);
	if (!out->module || !out->alias) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (!is_module_name(out->module)) {
		snprintf(err, errlen, "malformed --toolbox '%s': the module is not a dotted Python name", q);
		goto fail;
	}
	if (!is_identifier(out->alias, strlen(out->alias))) {
		snprintf(err, errlen, "malformed --toolbox '%s': the alias is not a Python identifier", q);
		goto fail;
	}
	if (opts_is_keyword(out->alias)) {
		snprintf(err, errlen, "malformed --toolbox '%s': the alias is a Python keyword", q);
		goto fail;
	}
	return 0;
fail:
	toolbox_arg_release(out);
	return -1;
}

void toolbox_arg_release(struct toolbox_arg *t)
{
	free(t->module);
	free(t->alias);
	t->module = t->alias = NULL;
}

/* strtod that accepts only a whole, finite number with no junk around it. */
static int parse_double(const char *s, double *out)
{
	char *end;
	double v;

	if (!s || !*s || s[0] == ' ' || s[0] == '\t' || s[0] == '\n')
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno == ERANGE || *end != '\0' || end == s || !isfinite(v))
		return -1;
	*out = v;
	return 0;
}

int opts_parse_seconds(const char *s, double *out)
{
	double v;

	/* More than a year is surely a typo, and keeps deadline arithmetic finite. */
	if (parse_double(s, &v) < 0 || !(v > 0) || v > 366.0 * 86400)
		return -1;
	*out = v;
	return 0;
}

int opts_parse_nonneg(const char *s, double *out)
{
	double v;

	if (parse_double(s, &v) < 0 || v < 0 || v > 1e9)
		return -1;
	*out = v == 0 ? 0 : v;  /* fold -0 */
	return 0;
}

int opts_parse_count(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE || *end != '\0')
		return -1;
	*out = v;
	return 0;
}

int opts_parse_switch(const char *s, bool *out)
{
	if (!s || (strcmp(s, "0") != 0 && strcmp(s, "1") != 0))
		return -1;
	*out = s[0] == '1';
	return 0;
}

/* Copy path normalized into a new string: absolute, no "." or "..". */
static char *normalize_path(const char *path, const char **why)
{
	size_t n = strlen(path);
	char *out = malloc(n + 2), *o = out;
	const char *p = path;

	if (!out) {
		*why = "out of memory";
		return NULL;
	}
	if (path[0] != '/') {
		*why = "is not an absolute path";
		goto bad;
	}
	while (*p) {
		size_t len;

		while (*p == '/')
			p++;
		len = strcspn(p, "/");
		if (len == 0)
			break;
		if ((len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.')) {
			*why = "has a '.' or '..' component";
			goto bad;
		}
		*o++ = '/';
		memcpy(o, p, len);
		o += len;
		p += len;
	}
	if (o == out)
		*o++ = '/';
	*o = '\0';
	return out;
bad:
	free(out);
	return NULL;
}

static const char *const mount_modes[] = {
	[MOUNT_RO] = "ro", [MOUNT_RW] = "rw", [MOUNT_OVERLAY] = "overlay",
};

const char *mount_mode_name(enum mount_mode m)
{
	return mount_modes[m];
}

int opts_parse_mount(const char *spec, struct mount_arg *out, char *err,
                     size_t errlen)
{
	char q[300], *parts[3] = { NULL }, *copy = strdup(spec);
	const char *why = NULL;
	size_t n = 0;

	opts_quote(q, sizeof(q), spec);
	memset(out, 0, sizeof(*out));
	if (!copy) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* strtok_r would merge "a::b"; count the colons ourselves. */
	parts[n++] = copy;
	for (char *c = copy; (c = strchr(c, ':')); ) {
		*c++ = '\0';
		if (n == 3) {
			snprintf(err, errlen, "malformed --mount '%s': expected HOST:VIRTUAL[:MODE] "
			         "(paths cannot contain ':')", q);
			goto fail;
		}
		parts[n++] = c;
	}
	if (n < 2 || !*parts[0] || !*parts[1]) {
		snprintf(err, errlen, "malformed --mount '%s': expected HOST:VIRTUAL[:MODE]", q);
		goto fail;
	}
	out->mode = MOUNT_RO;
	if (n == 3) {
		size_t m;

		for (m = 0; m < sizeof(mount_modes) / sizeof(*mount_modes); m++)
			if (strcmp(parts[2], mount_modes[m]) == 0)
				break;
		if (m == sizeof(mount_modes) / sizeof(*mount_modes)) {
			snprintf(err, errlen, "malformed --mount '%s': the mode must be ro, rw "
			         "or overlay", q);
			goto fail;
		}
		out->mode = (enum mount_mode)m;
	}
	if (!(out->host = normalize_path(parts[0], &why))) {
		snprintf(err, errlen, "malformed --mount '%s': the host path %s", q, why);
		goto fail;
	}
	if (!(out->virt = normalize_path(parts[1], &why))) {
		snprintf(err, errlen, "malformed --mount '%s': the virtual path %s", q, why);
		goto fail;
	}
	free(copy);
	return 0;
fail:
	free(copy);
	mount_arg_release(out);
	return -1;
}

void mount_arg_release(struct mount_arg *m)
{
	free(m->host);
	free(m->virt);
	m->host = m->virt = NULL;
}

int opts_check_env(const char *spec, char *err, size_t errlen)
{
	size_t n = strcspn(spec, "=");
	char q[300];

	if (is_identifier(spec, n))
		return 0;
	opts_quote(q, sizeof(q), spec);
	snprintf(err, errlen, "malformed --env '%s': expected NAME or NAME=VALUE, with NAME "
	         "made of letters, digits and '_', not starting with a digit", q);
	return -1;
}

static const struct {
	uint64_t min, max;
	const char *want;
} limit_ranges[LIMIT_COUNT] = {
	[LIMIT_MEMORY] = { LIMIT_MEMORY_MIN, (uint64_t)1 << 60,
		"a size like 512M (bytes, with an optional K, M or G suffix), at least 32M" },
	[LIMIT_MAX_PROCS] = { 1, 4194304, "a whole number of processes from 1 to 4194304" },
	[LIMIT_MAX_FILE_SIZE] = { 1, (uint64_t)1 << 60,
		"a size like 10M (bytes, with an optional K, M or G suffix), at least 1" },
	[LIMIT_CPU_SECONDS] = { 1, 31622400, "a whole number of seconds from 1 to 31622400" },
	[LIMIT_RECURSION] = { 1, 1000000, "a whole number of frames from 1 to 1000000" },
};

int opts_parse_limit(enum limit_kind k, const char *s, const char *what,
                     uint64_t *out, char *err, size_t errlen)
{
	char q[300];
	uint64_t v;
	int ret = limit_is_size(k) ? limit_parse_size(s, &v) : opts_parse_count(s, &v);

	if (ret == 0 && v >= limit_ranges[k].min && v <= limit_ranges[k].max) {
		*out = v;
		return 0;
	}
	opts_quote(q, sizeof(q), s);
	snprintf(err, errlen, what[0] == '-' ? "%s '%s' is not valid: expected %s"
	                                     : "%s='%s' is not valid: expected %s",
	         what, q, limit_ranges[k].want);
	return -1;
}

/* getenv, treating an empty value as unset. */
static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

static int env_error(const char *name, const char *val, const char *want,
                     char *err, size_t errlen)
{
	char q[300];

	opts_quote(q, sizeof(q), val);
	snprintf(err, errlen, "%s='%s' is not valid: expected %s", name, q, want);
	return -1;
}

/*
 * --store (already in s->store_spec) or DOLSOT_STORE: the kind, and the
 * Redis store's knobs and a remote store's unit cache size checked now,
 * so a bad value is a usage error.
 */
static int store_from_env(struct settings *s, char *err, size_t errlen)
{
	const char *what = s->store_spec ? "--store" : "DOLSOT_STORE";
	char why[OPTS_ERR_MAX], q[300];
	struct store_spec *sp = malloc(sizeof(*sp));
	uint64_t cache;
	int ret = 0;

	if (!sp) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (!s->store_spec)
		s->store_spec = env("DOLSOT_STORE");
	if (store_spec_parse(s->store_spec, sp, why, sizeof(why)) < 0) {
		/* The value may hold a password: never echo it. */
		if (s->store_spec && strncmp(s->store_spec, "redis", 5) == 0)
			snprintf(q, sizeof(q), "redis://...");
		else
			opts_quote(q, sizeof(q), s->store_spec ? s->store_spec : "");
		snprintf(err, errlen, "%s='%s' is not valid: %s", what, q, why);
		ret = -1;
	} else if ((sp->kind == STORE_KIND_REDIS && store_spec_redis_env(sp, err, errlen) < 0) ||
	           ((sp->kind == STORE_KIND_REDIS || sp->kind == STORE_KIND_CMD) &&
	            store_spec_cache_env(&cache, err, errlen) < 0)) {
		ret = -1;
	} else if (sp->kind == STORE_KIND_MEMORY && !s->server) {
		snprintf(err, errlen, "%s=memory keeps sessions in the warm "
		         "server's memory, so it cannot work with DOLSOT_SERVER=off", what);
		ret = -1;
	}
	s->store = sp->kind;
	free(sp);
	return ret;
}

/* DOLSOT_SESSION_KEY: a key, or the absolute path of a key file.  Never
 * quoted back: the value may be the key itself. */
static int key_from_env(const struct option_row *o, const char **key, char *err,
                        size_t errlen)
{
	const char *v = env(o->env);

	*key = v;
	if (v && v[0] != '/' && (strlen(v) < SIGN_KEY_MIN || strlen(v) > SIGN_KEY_MAX)) {
		snprintf(err, errlen, "%s is not valid: expected a key of %d to %d bytes, or the "
		         "absolute path of a key file", o->env, SIGN_KEY_MIN, SIGN_KEY_MAX);
		return -1;
	}
	return 0;
}

/* A switch: 0 or 1 (OPTION_T_SWITCH), or off or auto (OPTION_T_AUTO_OFF). */
static int parse_switch(const struct option_row *o, const char *v, bool *out)
{
	if (o->type == OPTION_T_SWITCH)
		return opts_parse_switch(v, out);
	if (strcmp(v, "off") != 0 && strcmp(v, "auto") != 0)
		return -1;
	*out = strcmp(v, "auto") == 0;
	return 0;
}

/*
 * One row's variable into its field of s: the default, then the value when
 * the variable is set.  A row with a flag keeps a field the flag set (any
 * value but zero).  0, or -1 with the reason in err.
 */
static int row_from_env(const struct option_row *o, struct settings *s, char *err,
                        size_t errlen)
{
	void *f = (char *)s + o->field;
	const char *v = env(o->env);
	int bad = 0;

	switch (o->type) {
	case OPTION_T_SECONDS:
	case OPTION_T_DAYS:
		if (o->flag && *(double *)f > 0)
			return 0;
		*(double *)f = o->dflt;
		bad = v && (o->type == OPTION_T_SECONDS ? opts_parse_seconds(v, f)
		                                        : opts_parse_nonneg(v, f)) < 0;
		break;
	case OPTION_T_COUNT:
		*(uint64_t *)f = (uint64_t)o->dflt;
		bad = v && (opts_parse_count(v, f) < 0 || (o->max && *(uint64_t *)f > o->max));
		break;
	case OPTION_T_SWITCH:
	case OPTION_T_AUTO_OFF:
		if (o->flag && *(bool *)f)
			return 0;
		*(bool *)f = o->dflt != 0;
		bad = v && parse_switch(o, v, f) < 0;
		break;
	case OPTION_T_LIMIT:
		if (o->flag && *(uint64_t *)f)
			return 0;
		*(uint64_t *)f = (uint64_t)o->dflt;
		return v ? opts_parse_limit(o->limit, v, o->env, f, err, errlen) : 0;
	case OPTION_T_TEXT:
		*(const char **)f = v ? v : o->dflt_text;
		break;
	case OPTION_T_KEY:
		return key_from_env(o, f, err, errlen);
	default:
		break;
	}
	return bad ? env_error(o->env, v, o->want, err, errlen) : 0;
}

int opts_settings_from_env(struct settings *s, char *err, size_t errlen)
{
	for (size_t i = 0; i < options_count; i++) {
		const struct option_row *o = &options_table[i];

		if (o->env && o->field != OPTION_NO_FIELD && o->type != OPTION_T_STORE &&
		    row_from_env(o, s, err, errlen) < 0)
			return -1;
	}
	/* Last: DOLSOT_STORE=memory needs DOLSOT_SERVER. */
	return store_from_env(s, err, errlen);
}
