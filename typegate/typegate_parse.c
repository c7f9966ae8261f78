/*
 * typegate_parse.c - read type checkers' output into diagnostics.
 *
 * The output comes from a program we do not control, so it MUST be read as
 * hostile bytes: every index is checked against the end before use, nesting
 * is bounded, numbers saturate instead of wrapping, and what is kept is
 * capped (TYPEGATE_MAX_DIAGS diagnostics, TYPEGATE_MAX_TEXT bytes a text).  Fuzzed by
 * fuzz/fuzz_typegate.c.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "typegate.h"

#define JSON_MAX_DEPTH 64
#define NUM_MAX 100000000UL

enum typegate_checker typegate_checker_of(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	if (strcmp(base, "ty") == 0)
		return TYPEGATE_TY;
	if (strcmp(base, "mypy") == 0)
		return TYPEGATE_MYPY;
	if (strcmp(base, "pyright") == 0 || strcmp(base, "basedpyright") == 0)
		return TYPEGATE_PYRIGHT;
	return TYPEGATE_GENERIC;
}

const char *typegate_checker_name(enum typegate_checker k)
{
	switch (k) {
	case TYPEGATE_TY:
		return "ty";
	case TYPEGATE_MYPY:
		return "mypy";
	case TYPEGATE_PYRIGHT:
		return "pyright";
	case TYPEGATE_GENERIC:
	default:
		return "generic";
	}
}

/* ---- building diagnostics ---- */

/* A sanitized, capped, NUL-terminated copy; NULL only when out of memory. */
static char *text_dup(const char *s, size_t n)
{
	char *t;

	if (n > TYPEGATE_MAX_TEXT)
		n = TYPEGATE_MAX_TEXT;
	t = malloc(n + 1);
	if (!t)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		t[i] = (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f ? '?' : (char)c;
	}
	t[n] = '\0';
	return t;
}

static void diag_release(struct typegate_diag *g)
{
	free(g->path);
	free(g->code);
	free(g->message);
	g->path = g->code = g->message = NULL;
}

void typegate_diags_release(struct typegate_diags *d)
{
	for (size_t i = 0; i < d->n; i++)
		diag_release(&d->v[i]);
	free(d->v);
	memset(d, 0, sizeof(*d));
}

/* Take ownership of *g's strings; on a full list or no memory, drop them. */
static void diags_add(struct typegate_diags *d, struct typegate_diag *g)
{
	if (!d->v)
		d->v = calloc(TYPEGATE_MAX_DIAGS, sizeof(*d->v));
	if (!d->v || d->n == TYPEGATE_MAX_DIAGS || !g->path || !g->message) {
		if (d->v && d->n == TYPEGATE_MAX_DIAGS)
			d->truncated = true;
		diag_release(g);
		return;
	}
	d->v[d->n++] = *g;
	g->path = g->code = g->message = NULL;
}

static bool severity_of(const char *s, size_t n, enum typegate_severity *out)
{
	static const struct { const char *word; enum typegate_severity sev; } words[] = {
		{ "error", TYPEGATE_SEV_ERROR }, { "fatal", TYPEGATE_SEV_ERROR },
		{ "warning", TYPEGATE_SEV_WARNING }, { "warn", TYPEGATE_SEV_WARNING },
		{ "note", TYPEGATE_SEV_NOTE }, { "info", TYPEGATE_SEV_NOTE },
		{ "information", TYPEGATE_SEV_NOTE },
	};

	for (size_t i = 0; i < sizeof(words) / sizeof(*words); i++) {
		if (strlen(words[i].word) == n && memcmp(words[i].word, s, n) == 0) {
			*out = words[i].sev;
			return true;
		}
	}
	return false;
}

/* ---- line formats: ty concise, mypy, generic ---- */

struct cursor {
	const char *p;
	const char *end;
};

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Decimal digits at p, saturating at NUM_MAX; returns the count read. */
static size_t read_num(const char *p, const char *end, unsigned long *out)
{
	size_t n = 0;
	unsigned long v = 0;

	while (p + n < end && is_digit(p[n])) {
		v = v * 10 + (unsigned long)(p[n] - '0');
		if (v > NUM_MAX)
			v = NUM_MAX;
		n++;
	}
	*out = v;
	return n;
}

/*
 * Find the first ":LINE:COL: " or ":LINE: " in [s, end) that follows at
 * least one byte of path.  Returns a pointer to the ':' and fills line, col
 * and *rest (just past the ": "), or NULL.
 */
static const char *find_location(const char *s, const char *end, unsigned long *line,
                                 unsigned long *col, const char **rest)
{
	for (const char *p = s + 1; p < end; p++) {
		const char *q;
		size_t n;

		if (*p != ':')
			continue;
		q = p + 1;
		n = read_num(q, end, line);
		if (n == 0)
			continue;
		q += n;
		*col = 0;
		if (q < end && *q == ':' && q + 1 < end && is_digit(q[1])) {
			q++;
			q += read_num(q, end, col);
		}
		if (end - q >= 2 && q[0] == ':' && q[1] == ' ') {
			*rest = q + 2;
			return p;
		}
	}
	return NULL;
}

/* "SEV: " or "SEV[RULE] " or "SEV[RULE]: " at *s; advances *s past it. */
static bool read_severity(const char **s, const char *end, enum typegate_severity *sev,
                          const char **code, size_t *code_len)
{
	const char *p = *s, *w = p;

	while (p < end && *p >= 'a' && *p <= 'z')
		p++;
	if (!severity_of(w, (size_t)(p - w), sev))
		return false;
	*code = NULL;
	*code_len = 0;
	if (p < end && *p == '[') {
		const char *close = memchr(p, ']', (size_t)(end - p));

		if (!close)
			return false;
		*code = p + 1;
		*code_len = (size_t)(close - p - 1);
		p = close + 1;
		if (p < end && *p == ':')
			p++;
	} else if (p < end && *p == ':') {
		p++;
	} else {
		return false;
	}
	if (p < end && *p == ' ')
		p++;
	*s = p;
	return true;
}

/* mypy ends a message with "  [code]": split it off. */
static void split_trailing_code(const char *msg, size_t *len, const char **code,
                                size_t *code_len)
{
	const char *open;

	if (*len < 5 || msg[*len - 1] != ']')
		return;
	for (open = msg + *len - 2; open > msg && *open != '['; open--)
		if (*open == ' ')
			return;
	if (open - msg < 2 || open[-1] != ' ' || open[-2] != ' ' || open + 1 == msg + *len - 1)
		return;
	*code = open + 1;
	*code_len = (size_t)(msg + *len - 1 - open - 1);
	*len = (size_t)(open - 2 - msg);
}

/* "PATH:L[:C]: SEV[RULE] MSG" / "PATH:L[:C]: SEV: MSG" */
static bool parse_path_first(const char *s, const char *end, struct typegate_diag *g,
                             bool trailing_code)
{
	unsigned long line, col;
	const char *rest, *colon = find_location(s, end, &line, &col, &rest);
	const char *code = NULL;
	size_t code_len = 0, msg_len;

	if (!colon || !read_severity(&rest, end, &g->severity, &code, &code_len))
		return false;
	msg_len = (size_t)(end - rest);
	if (trailing_code && !code)
		split_trailing_code(rest, &msg_len, &code, &code_len);
	g->line = line;
	g->col = col;
	g->path = text_dup(s, (size_t)(colon - s));
	g->message = text_dup(rest, msg_len);
	g->code = code ? text_dup(code, code_len) : NULL;
	return true;
}

/* Early ty releases: "SEV[RULE] PATH:L:C: MSG". */
static bool parse_severity_first(const char *s, const char *end, struct typegate_diag *g)
{
	const char *p = s, *code, *rest, *colon;
	size_t code_len;
	unsigned long line, col;

	if (!read_severity(&p, end, &g->severity, &code, &code_len) || !code)
		return false;
	colon = find_location(p, end, &line, &col, &rest);
	if (!colon)
		return false;
	g->line = line;
	g->col = col;
	g->path = text_dup(p, (size_t)(colon - p));
	g->message = text_dup(rest, (size_t)(end - rest));
	g->code = text_dup(code, code_len);
	return true;
}

static int parse_lines(enum typegate_checker k, const char *out, size_t len, struct typegate_diags *d)
{
	const char *p = out, *end = out + len;
	bool nonblank = false, any = false;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		struct typegate_diag g;

		memset(&g, 0, sizeof(g));
		if (le > p && le[-1] == '\r')
			le--;
		for (const char *q = p; q < le; q++)
			if (*q != ' ' && *q != '\t')
				nonblank = true;
		if (parse_path_first(p, le, &g, k == TYPEGATE_MYPY) ||
		    (k == TYPEGATE_TY && parse_severity_first(p, le, &g))) {
			any = true;
			diags_add(d, &g);
		}
		p = nl ? nl + 1 : end;
	}
	return nonblank && !any ? -1 : 0;
}

/* ---- pyright --outputjson ---- */

struct json {
	const char *p;
	const char *end;
	int depth;
};

static void ws(struct json *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' ||
	                         *j->p == '\r'))
		j->p++;
}

static bool eat(struct json *j, char c)
{
	ws(j);
	if (j->p < j->end && *j->p == c) {
		j->p++;
		return true;
	}
	return false;
}

static int hex4(const char *p)
{
	int v = 0;

	for (int i = 0; i < 4; i++) {
		char c = p[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return -1;
	}
	return v;
}

static size_t put_utf8(char *o, uint32_t cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | (cp >> 6));
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | (cp >> 12));
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | (cp >> 18));
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* \uXXXX at j->p (just past the backslash-u); a lone surrogate gives U+FFFD. */
static bool read_u_escape(struct json *j, uint32_t *cp)
{
	int hi, lo;

	if (j->end - j->p < 4 || (hi = hex4(j->p)) < 0)
		return false;
	j->p += 4;
	*cp = (uint32_t)hi;
	if (hi < 0xd800 || hi > 0xdfff)
		return true;
	*cp = 0xfffd;
	if (hi > 0xdbff || j->end - j->p < 6 || j->p[0] != '\\' || j->p[1] != 'u' ||
	    (lo = hex4(j->p + 2)) < 0xdc00 || lo > 0xdfff)
		return true;
	j->p += 6;
	*cp = 0x10000 + (((uint32_t)hi - 0xd800) << 10) + ((uint32_t)lo - 0xdc00);
	return true;
}

/*
 * A string at j->p.  With out, its first TYPEGATE_MAX_TEXT bytes are decoded into
 * a new sanitized string (*out; NULL on no memory); without, it is skipped.
 */
static bool read_string(struct json *j, char **out)
{
	char buf[TYPEGATE_MAX_TEXT + 4];
	size_t n = 0;

	if (!eat(j, '"'))
		return false;
	while (j->p < j->end && *j->p != '"') {
		char c = *j->p++;
		char tmp[4];
		size_t k = 1;
		uint32_t cp;

		tmp[0] = c;
		if ((unsigned char)c < 0x20)
			return false;
		if (c == '\\') {
			if (j->p >= j->end)
				return false;
			c = *j->p++;
			switch (c) {
			case '"': case '\\': case '/': tmp[0] = c; break;
			case 'b': tmp[0] = '\b'; break;
			case 'f': tmp[0] = '\f'; break;
			case 'n': tmp[0] = '\n'; break;
			case 'r': tmp[0] = '\r'; break;
			case 't': tmp[0] = '\t'; break;
			case 'u':
				if (!read_u_escape(j, &cp))
					return false;
				k = put_utf8(tmp, cp);
				break;
			default:
				return false;
			}
		}
		if (n + k <= TYPEGATE_MAX_TEXT) {
			memcpy(buf + n, tmp, k);
			n += k;
		}
	}
	if (j->p >= j->end)
		return false;
	j->p++;
	if (out)
		*out = text_dup(buf, n);
	return true;
}

static bool read_number(struct json *j, double *out)
{
	const char *s;
	char buf[64];
	size_t n;
	char *e;

	ws(j);
	s = j->p;
	while (j->p < j->end && (is_digit(*j->p) || *j->p == '-' || *j->p == '+' ||
	                         *j->p == '.' || *j->p == 'e' || *j->p == 'E'))
		j->p++;
	n = (size_t)(j->p - s);
	if (n == 0 || n >= sizeof(buf))
		return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	*out = strtod(buf, &e);
	return *e == '\0';
}

static bool skip_value(struct json *j);

static bool skip_literal(struct json *j, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(j->end - j->p) < n || memcmp(j->p, word, n) != 0)
		return false;
	j->p += n;
	return true;
}

/* Calls fn(j, key, arg) for each member of an object; fn reads the value. */
typedef bool (*member_fn)(struct json *j, const char *key, void *arg);

static bool each_member(struct json *j, member_fn fn, void *arg)
{
	bool ok = true;

	if (!eat(j, '{') || ++j->depth > JSON_MAX_DEPTH)
		return false;
	if (eat(j, '}')) {
		j->depth--;
		return true;
	}
	do {
		char *key = NULL;

		if (!read_string(j, &key) || !key || !eat(j, ':')) {
			free(key);
			return false;
		}
		ok = fn(j, key, arg);
		free(key);
		if (!ok)
			return false;
	} while (eat(j, ','));
	j->depth--;
	return eat(j, '}');
}

typedef bool (*element_fn)(struct json *j, void *arg);

static bool each_element(struct json *j, element_fn fn, void *arg)
{
	if (!eat(j, '[') || ++j->depth > JSON_MAX_DEPTH)
		return false;
	if (eat(j, ']')) {
		j->depth--;
		return true;
	}
	do {
		if (!fn(j, arg))
			return false;
	} while (eat(j, ','));
	j->depth--;
	return eat(j, ']');
}

static bool skip_member(struct json *j, const char *key, void *arg)
{
	(void)key;
	(void)arg;
	return skip_value(j);
}

static bool skip_element(struct json *j, void *arg)
{
	(void)arg;
	return skip_value(j);
}

static bool skip_value(struct json *j)
{
	double num;

	ws(j);
	if (j->p >= j->end)
		return false;
	switch (*j->p) {
	case '{':
		return each_member(j, skip_member, NULL);
	case '[':
		return each_element(j, skip_element, NULL);
	case '"':
		return read_string(j, NULL);
	case 't':
		return skip_literal(j, "true");
	case 'f':
		return skip_literal(j, "false");
	case 'n':
		return skip_literal(j, "null");
	default:
		return read_number(j, &num);
	}
}

/* A string member value into *slot (replacing any earlier one). */
static bool take_string(struct json *j, char **slot)
{
	char *s = NULL;

	ws(j);
	if (j->p < j->end && *j->p != '"')
		return skip_value(j);
	if (!read_string(j, &s))
		return false;
	free(*slot);
	*slot = s;
	return true;
}

static unsigned long clamp_line(double v)
{
	if (!(v >= 0))
		return 0;
	return v >= (double)NUM_MAX ? NUM_MAX : (unsigned long)v;
}

static bool position_member(struct json *j, const char *key, void *arg)
{
	struct typegate_diag *g = arg;
	double v;

	if (strcmp(key, "line") != 0 && strcmp(key, "character") != 0)
		return skip_value(j);
	ws(j);
	if (j->p < j->end && (*j->p == '-' || is_digit(*j->p))) {
		if (!read_number(j, &v))
			return false;
	} else {
		return skip_value(j);
	}
	/* pyright counts both from 0; ours count from 1. */
	if (strcmp(key, "line") == 0)
		g->line = clamp_line(v) + 1;
	else
		g->col = clamp_line(v) + 1;
	return true;
}

static bool range_member(struct json *j, const char *key, void *arg)
{
	ws(j);
	if (strcmp(key, "start") == 0 && j->p < j->end && *j->p == '{')
		return each_member(j, position_member, arg);
	return skip_value(j);
}

struct pyright_diag {
	struct typegate_diag g;
	char *severity;
};

static bool diag_member(struct json *j, const char *key, void *arg)
{
	struct pyright_diag *pd = arg;

	if (strcmp(key, "file") == 0)
		return take_string(j, &pd->g.path);
	if (strcmp(key, "message") == 0)
		return take_string(j, &pd->g.message);
	if (strcmp(key, "rule") == 0)
		return take_string(j, &pd->g.code);
	if (strcmp(key, "severity") == 0)
		return take_string(j, &pd->severity);
	ws(j);
	if (strcmp(key, "range") == 0 && j->p < j->end && *j->p == '{')
		return each_member(j, range_member, &pd->g);
	return skip_value(j);
}

static bool diag_element(struct json *j, void *arg)
{
	struct typegate_diags *d = arg;
	struct pyright_diag pd;
	bool ok;

	memset(&pd, 0, sizeof(pd));
	ws(j);
	if (j->p < j->end && *j->p != '{')
		return skip_value(j);
	ok = each_member(j, diag_member, &pd);
	if (ok && pd.severity && pd.g.message &&
	    severity_of(pd.severity, strlen(pd.severity), &pd.g.severity)) {
		if (!pd.g.path)
			pd.g.path = text_dup("", 0);
		diags_add(d, &pd.g);    /* takes the strings, or frees them */
	} else {
		diag_release(&pd.g);
	}
	free(pd.severity);
	return ok;
}

struct pyright_top {
	struct typegate_diags *d;
	bool seen;
};

static bool top_member(struct json *j, const char *key, void *arg)
{
	struct pyright_top *t = arg;

	ws(j);
	if (strcmp(key, "generalDiagnostics") == 0 && j->p < j->end && *j->p == '[') {
		t->seen = true;
		return each_element(j, diag_element, t->d);
	}
	return skip_value(j);
}

static int parse_pyright(const char *out, size_t len, struct typegate_diags *d)
{
	struct json j = { out, out + len, 0 };
	struct pyright_top t = { d, false };

	if (!each_member(&j, top_member, &t) || !t.seen)
		return -1;
	ws(&j);
	return j.p == j.end ? 0 : -1;
}

int typegate_parse(enum typegate_checker k, const char *out, size_t len, struct typegate_diags *d)
{
	memset(d, 0, sizeof(*d));
	if (k == TYPEGATE_PYRIGHT)
		return parse_pyright(out, len, d);
	return parse_lines(k, out, len, d);
}
