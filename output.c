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

static int capture_reserve(struct capture *c, size_t more)
{
	size_t want;
	char *p;

	if (c->alloc - c->len >= more)
		return 0;
	want = c->alloc ? c->alloc : 4096;
	while (want - c->len < more) {
		if (want > SIZE_MAX / 2) {
			errno = ENOMEM;
			return -1;
		}
		want *= 2;
	}
	p = realloc(c->data, want);
	if (!p)
		return -1;
	c->data = p;
	c->alloc = want;
	return 0;
}

/*
 * True when byte b begins a new char.  A continuation byte (10xxxxxx)
 * belongs to the char before it only while that char's lead byte wants
 * more; any other byte, valid or not, is a char of its own, so invalid
 * UTF-8 is counted and capped too.
 */
static bool starts_char(struct capture *c, unsigned char b)
{
	if ((b & 0xc0) == 0x80 && c->need > 0) {
		c->need--;
		return false;
	}
	c->need = (b & 0xe0) == 0xc0 ? 1 : (b & 0xf0) == 0xe0 ? 2 : (b & 0xf8) == 0xf0 ? 3 : 0;
	return true;
}

/* Bytes of buf that fit within the cap, counted in chars. */
static size_t capture_fit(struct capture *c, const unsigned char *buf, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned need = c->need;

		if (starts_char(c, buf[i])) {
			if (c->cap && c->chars == c->cap) {
				c->need = need;
				break;
			}
			c->chars++;
		}
	}
	return i;
}

/* Past the cap, chars are only counted (for --json's "truncated"). */
static void count_cut(struct capture *c, const unsigned char *buf, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (starts_char(c, buf[i]))
			c->cut_chars++;
}

int capture_feed(struct capture *c, const void *buf, size_t n)
{
	size_t keep;

	c->total += n;
	if (c->truncated) {
		count_cut(c, buf, n);
		return 0;
	}
	keep = capture_fit(c, buf, n);
	if (keep < n) {
		c->truncated = true;
		count_cut(c, (const unsigned char *)buf + keep, n - keep);
	}
	if (keep == 0)
		return 0;
	if (capture_reserve(c, keep + 1) < 0)
		return -1;
	memcpy(c->data + c->len, buf, keep);
	c->len += keep;
	c->data[c->len] = '\0';
	return 0;
}

void capture_release(struct capture *c)
{
	free(c->data);
	capture_init(c, c->cap);
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

/* A captured stream (marked: its lines that look like dolsot's), then the
 * truncation marker when it was cut. */
static void render_capture(const struct capture *c, bool marked, FILE *f)
{
	if (marked)
		write_marked(c->data ? c->data : "", c->len, f);
	else
		fwrite(c->data ? c->data : "", 1, c->len, f);
	if (!c->truncated)
		return;
	if (c->data && c->len && c->data[c->len - 1] != '\n')
		fputc('\n', f);
	fprintf(f, "[output truncated: kept %llu chars of %llu bytes]\n",
	        (unsigned long long)c->chars, (unsigned long long)c->total);
}

static bool ends_open(const struct capture *c)
{
	return c->data && c->len && !c->truncated && c->data[c->len - 1] != '\n';
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
