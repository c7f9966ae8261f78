/*
 * output.c - the output contract.  Callers parse these streams, so every
 * byte here is part of the interface: see the OUTPUT section of dolsot(1).
 * The --json rendering and the text contract's image files are in call/.
 */
#include "output.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void capture_init(struct capture *c, uint64_t cap)
{
	memset(c, 0, sizeof(*c));
	c->cap = cap;
}

/* The chars the head keeps, and the tail: the cap's first and second half. */
static uint64_t head_cap(const struct capture *c)
{
	return c->cap / 2;
}

static uint64_t tail_cap(const struct capture *c)
{
	return c->cap - c->cap / 2;
}

/* Room for more bytes after len in *p (alloc bytes), doubling from 4096. */
static int reserve(char **p, size_t *alloc, size_t len, size_t more)
{
	size_t want;
	char *grown;

	if (*alloc - len >= more)
		return 0;
	want = *alloc ? *alloc : 4096;
	while (want - len < more) {
		if (want > SIZE_MAX / 2) {
			errno = ENOMEM;
			return -1;
		}
		want *= 2;
	}
	grown = realloc(*p, want);
	if (!grown)
		return -1;
	*p = grown;
	*alloc = want;
	return 0;
}

/*
 * True when byte b begins a new char.  A continuation byte (10xxxxxx)
 * belongs to the char before it only while that char's lead byte wants
 * more; any other byte, valid or not, is a char of its own, so invalid
 * UTF-8 is counted and capped too.
 */
static bool starts_char(unsigned *need, unsigned char b)
{
	if ((b & 0xc0) == 0x80 && *need > 0) {
		(*need)--;
		return false;
	}
	*need = (b & 0xe0) == 0xc0 ? 1 : (b & 0xf0) == 0xe0 ? 2 : (b & 0xf8) == 0xf0 ? 3 : 0;
	return true;
}

static uint64_t count_chars(const char *p, size_t n)
{
	unsigned need = 0;
	uint64_t chars = 0;

	for (size_t i = 0; i < n; i++)
		chars += starts_char(&need, (unsigned char)p[i]);
	return chars;
}

/* Bytes of buf that fit within the head, counted in chars. */
static size_t capture_fit(struct capture *c, const unsigned char *buf, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned need = c->need;

		if (starts_char(&c->need, buf[i])) {
			if (c->cap && c->chars == head_cap(c)) {
				c->need = need;
				break;
			}
			c->chars++;
		}
	}
	return i;
}

/* The tail's window: the last 4 * tail_cap + 4 bytes after the head,
 * which hold at least tail_cap whole chars. */
static size_t window(const struct capture *c)
{
	uint64_t w = 4 * tail_cap(c) + 4;

	return w > SIZE_MAX / 4 ? SIZE_MAX / 4 : (size_t)w;
}

static int feed_rest(struct capture *c, const char *buf, size_t n)
{
	size_t w = window(c);

	for (size_t i = 0; i < n; i++)
		c->rest_chars += starts_char(&c->need, (unsigned char)buf[i]);
	c->rest_bytes += n;
	c->truncated = c->rest_chars > tail_cap(c);
	if (n >= w) {
		buf += n - w;
		n = w;
		c->rest_len = 0;
	} else if (c->rest_len + n > 2 * w) {
		size_t keep = w - n;

		memmove(c->rest, c->rest + c->rest_len - keep, keep);
		c->rest_len = keep;
	}
	if (reserve(&c->rest, &c->rest_alloc, c->rest_len, n) < 0)
		return -1;
	memcpy(c->rest + c->rest_len, buf, n);
	c->rest_len += n;
	return 0;
}

int capture_feed(struct capture *c, const void *buf, size_t n)
{
	size_t keep = 0;

	if (c->tap && n)
		c->tap->feed(c->tap, c, buf, n);
	c->total += n;
	if (!c->head_full) {
		keep = capture_fit(c, buf, n);
		c->head_full = keep < n;
		if (keep && (reserve(&c->data, &c->alloc, c->len, keep + 1) < 0))
			return -1;
		if (keep) {
			memcpy(c->data + c->len, buf, keep);
			c->len += keep;
			c->data[c->len] = '\0';
		}
	}
	if (keep == n || c->finished)
		return 0;
	return feed_rest(c, (const char *)buf + keep, n - keep);
}

/* Past the end of a char at p (n bytes left), as starts_char counts. */
static size_t char_len(const char *p, size_t n)
{
	unsigned need = 0;
	size_t i = 1;

	starts_char(&need, (unsigned char)p[0]);
	while (i < n && need && !starts_char(&need, (unsigned char)p[i]))
		i++;
	return i;
}

/* The head's length: up to its last line break when that is in its second
 * half. */
static size_t head_end(const struct capture *c)
{
	for (size_t i = c->len; i > c->len / 2; i--)
		if (c->data[i - 1] == '\n')
			return i;
	return c->len;
}

/* Where the tail starts in rest: at a char, at most tail_cap chars from
 * the end, after a line break when one is in its first half. */
static size_t tail_start(const struct capture *c)
{
	size_t at = 0, n = c->rest_len;
	uint64_t chars;

	/* The window's first bytes may continue a char it does not hold. */
	while (c->rest_bytes > c->rest_len && at < 3 && at < n &&
	       ((unsigned char)c->rest[at] & 0xc0) == 0x80)
		at++;
	for (chars = count_chars(c->rest + at, n - at); chars > tail_cap(c); chars--)
		at += char_len(c->rest + at, n - at);
	for (size_t i = at; i < n && i - at < (n - at) / 2; i++)
		if (c->rest[i] == '\n')
			return i + 1;
	return at;
}

static int finish_cut(struct capture *c)
{
	size_t head = head_end(c), from = tail_start(c), tail = c->rest_len - from;
	uint64_t seen = c->chars + c->rest_chars;
	char mark[200];
	int m;

	c->head_chars = count_chars(c->data, head);
	c->tail_chars = count_chars(c->rest + from, tail);
	c->cut_bytes = c->total - head - tail;
	c->cut_chars = seen - c->head_chars - c->tail_chars;
	m = snprintf(mark, sizeof(mark), "%s[output truncated: kept the first %llu and the "
	             "last %llu chars; cut %llu bytes (%llu chars) here]\n",
	             head && c->data[head - 1] != '\n' ? "\n" : "",
	             (unsigned long long)c->head_chars, (unsigned long long)c->tail_chars,
	             (unsigned long long)c->cut_bytes, (unsigned long long)c->cut_chars);
	if (reserve(&c->data, &c->alloc, head, (size_t)m + tail + 1) < 0)
		return -1;
	memcpy(c->data + head, mark, (size_t)m);
	memcpy(c->data + head + (size_t)m, c->rest + from, tail);
	c->len = head + (size_t)m + tail;
	c->data[c->len] = '\0';
	c->head_len = head;
	c->mark_len = (size_t)m;
	c->chars = c->head_chars + c->tail_chars;
	return 0;
}

int capture_finish(struct capture *c)
{
	int ret = 0;

	if (c->finished)
		return 0;
	c->finished = true;
	if (c->truncated) {
		ret = finish_cut(c);
	} else if (c->rest_len) {
		ret = reserve(&c->data, &c->alloc, c->len, c->rest_len + 1);
		if (ret == 0) {
			memcpy(c->data + c->len, c->rest, c->rest_len);
			c->len += c->rest_len;
			c->data[c->len] = '\0';
			c->chars += c->rest_chars;
		}
	}
	free(c->rest);
	c->rest = NULL;
	c->rest_len = c->rest_alloc = 0;
	return ret;
}

int capture_tap_wait(const struct capture *c, int ms)
{
	return c->tap ? c->tap->wait_ms(c->tap, ms) : ms;
}

void capture_tap_tick(const struct capture *c)
{
	if (c->tap)
		c->tap->tick(c->tap);
}

void capture_release(struct capture *c)
{
	struct capture_tap *tap = c->tap;

	free(c->data);
	free(c->rest);
	capture_init(c, c->cap);
	c->tap = tap;
}

const char *const result_timing_names[N_TIMINGS] = {
	"startup", "load", "gate", "cell", "dump", "save", "total",
};

void output_describe_gate(const struct gate_state *g, FILE *out)
{
	if (!g->asked)
		return;
	if (!g->checker[0])
		fprintf(out, "type gate: off: %s\n", g->note);
	else if (g->note[0])
		fprintf(out, "type gate: %s (%s)\n", g->checker, g->note);
	else
		fprintf(out, "type gate: %s\n", g->checker);
}

void result_init(struct result *r, uint64_t max_output)
{
	memset(r, 0, sizeof(*r));
	capture_init(&r->out, max_output);
	capture_init(&r->err, max_output);
	for (int i = 0; i < N_TIMINGS; i++)
		r->timings_ms[i] = -1;
}

void result_release(struct result *r)
{
	capture_release(&r->out);
	capture_release(&r->err);
	free(r->value);
	free(r->error);
	free(r->held);
	free(r->dropped);
	free(r->kept);
	free(r->warnings);
	free(r->save_error);
	free(r->limit);
	free(r->error_info.p);
	free(r->hints.p);
	free(r->diagnostics.p);
	free(r->displays.p);
	free(r->truncated.p);
	free(r->describe.p);
	free(r->describe_json.p);
	for (size_t i = 0; i < r->n_files; i++)
		free(r->files[i].path);
	free(r->files);
	free(r->said_out.p);
	free(r->said_err.p);
	free(r->said_json.p);
	result_init(r, r->out.cap);
}

void result_warn(struct result *r, const char *line)
{
	const char *w = r->warnings;
	bool sep = w && *w && w[strlen(w) - 1] != '\n';
	char *grown = NULL;

	if (asprintf(&grown, "%s%s%s", w ? w : "", sep ? "\n" : "", line) < 0)
		return;
	free(r->warnings);
	r->warnings = grown;
}

const char *const output_own_prefixes[] = {
	"dolsot:", "dolsot ", "session now holds:", "warning:", "hint:",
	"[output truncated:", "[error truncated:", "TimeoutError: cell killed",
	"SystemExit:", NULL,
};

/* Whether the line at p (n bytes) starts as one of dolsot's own. */
static bool looks_own(const char *p, size_t n)
{
	for (const char *const *o = output_own_prefixes; *o; o++) {
		size_t len = strlen(*o);

		if (n >= len && memcmp(p, *o, len) == 0)
			return true;
	}
	return false;
}

/* The cell's stderr, each line that looks like one of dolsot's marked. */
static void write_marked(const char *p, size_t n, FILE *f)
{
	while (n) {
		const char *nl = memchr(p, '\n', n);
		size_t len = nl ? (size_t)(nl - p) + 1 : n;

		if (looks_own(p, len))
			fputs(OUTPUT_MARK, f);
		fwrite(p, 1, len, f);
		p += len;
		n -= len;
	}
}

/* A captured stream (marked: its lines that look like dolsot's), with the
 * truncation marker between its head and tail when it was cut. */
static void render_capture(const struct capture *c, bool marked, FILE *f)
{
	const char *p = c->data ? c->data : "";
	size_t head = c->mark_len ? c->head_len : c->len;

	if (!marked) {
		fwrite(p, 1, c->len, f);
		return;
	}
	write_marked(p, head, f);
	fwrite(p + head, 1, c->mark_len, f);
	write_marked(p + head + c->mark_len, c->len - head - c->mark_len, f);
}

static bool ends_open(const struct capture *c)
{
	return c->data && c->len && c->data[c->len - 1] != '\n';
}

/* "name\treason" lines' names, ", "-separated. */
static void render_names(const char *lines, FILE *f)
{
	bool in_name = true;

	for (const char *p = lines; *p; p++)
		if (*p == '\n') {
			if (p[1])
				fputs(", ", f);
			in_name = true;
		} else if (*p == '\t') {
			in_name = false;
		} else if (in_name) {
			fputc(*p, f);
		}
}

static void render_held(const char *held, const char *kept, FILE *f)
{
	fputs("session now holds: ", f);
	if (!held || !*held)
		fputs("(nothing)", f);
	else
		render_names(held, f);
	if (kept && *kept) {
		fputs("; kept unloaded: ", f);
		render_names(kept, f);
	}
	fputc('\n', f);
}

/* "name\treason" lines as "name (reason), name2 (reason2)". */
static void render_dropped(const char *dropped, FILE *f)
{
	bool first = true;
	const char *line = dropped;

	fputs("warning: dropped unpicklable names (gone next call): ", f);
	while (*line) {
		const char *nl = strchr(line, '\n');
		size_t n = nl ? (size_t)(nl - line) : strlen(line);
		const char *tab = memchr(line, '\t', n);

		if (!first)
			fputs(", ", f);
		first = false;
		if (tab)
			fprintf(f, "%.*s (%.*s)", (int)(tab - line), line,
			        (int)(n - (size_t)(tab - line) - 1), tab + 1);
		else
			fprintf(f, "%.*s", (int)n, line);
		line += n + (nl != NULL);
	}
	fputc('\n', f);
}

static void render_lines(const char *text, FILE *f)
{
	size_t n = strlen(text);

	fputs(text, f);
	if (n && text[n - 1] != '\n')
		fputc('\n', f);
}

int output_render(const struct result *r, FILE *out, FILE *err)
{
	render_capture(&r->out, false, out);
	if (r->value) {
		if (ends_open(&r->out))
			fputc('\n', out);
		fwrite(r->value, 1, r->value_len, out);
		fputc('\n', out);
	}
	render_capture(&r->err, true, err);
	if (ends_open(&r->err) && (r->error || r->saved || r->dropped ||
	                          r->warnings || r->save_error || r->n_files))
		fputc('\n', err);
	if (r->error)
		render_lines(r->error, err);
	if (r->warnings)
		render_lines(r->warnings, err);
	for (size_t i = 0; i < r->n_files; i++)
		fprintf(err, "dolsot: image %zu (%ux%u PNG) written to %s\n", i + 1,
		        r->files[i].width, r->files[i].height, r->files[i].path);
	if (r->saved)
		render_held(r->held, r->kept, err);
	if (r->dropped && *r->dropped)
		render_dropped(r->dropped, err);
	if (r->save_error)
		fprintf(err, "warning: session '%s' not saved: %s\n", r->session,
		        r->save_error);
	if (fflush(out) == EOF || ferror(out) || fflush(err) == EOF)
		return -1;
	return 0;
}
