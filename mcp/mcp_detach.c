/*
 * mcp_detach.c - detached cells over MCP: the answers of the python tool
 * with detach_after and of the wait, peek and cancel tools, each the
 * text and the object the CLI would print for it (see mcp_detach.h).
 */
#include "mcp_detach.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What fn printed (its text stream and its error stream both) into *text,
 * and with json its object into *obj.  0, or -1 on a lack of memory. */
typedef int (*print_fn)(const struct detach_rec *r, bool json, FILE *out, FILE *errs,
                        const void *arg);

static int printed(const struct detach_rec *r, bool json, print_fn fn, const void *arg,
                   char **text, size_t *len)
{
	FILE *f = open_memstream(text, len);
	int rc;

	if (!f)
		return -1;
	rc = fn(r, json, f, f, arg);
	if (fclose(f) != 0 || rc < 0) {
		free(*text);
		*text = NULL;
		return -1;
	}
	return 0;
}

static int print_result(const struct detach_rec *r, bool json, FILE *out, FILE *errs,
                        const void *arg)
{
	(void)arg;
	return detach_print_result(r, json, out, errs);
}

static int print_status(const struct detach_rec *r, bool json, FILE *out, FILE *errs,
                        const void *arg)
{
	(void)arg;
	if (json)
		return detach_print_status(r, true, out, errs);
	fprintf(out, "dolsot: the cell is still running, detached as handle %s (session '%s'): "
	        "call wait with {\"handle\": \"%s\"} for its result, peek for its output so "
	        "far, or cancel to stop it (its session is then unchanged)\n", r->handle,
	        r->session, r->handle);
	return 0;
}

static int print_peek(const struct detach_rec *r, bool json, FILE *out, FILE *errs,
                      const void *arg)
{
	return detach_print_peek(r, *(const uint64_t *)arg, json, out, errs);
}

static int print_cancel(const struct detach_rec *r, bool json, FILE *out, FILE *errs,
                        const void *arg)
{
	return detach_print_cancel(r, *(const bool *)arg, json, out, errs);
}

/* p from fn: its text, and its object when it printed one. */
static int fill(const struct detach_rec *r, print_fn fn, const void *arg,
                struct mcp_detach_parts *p, char *err, size_t errlen)
{
	char *json = NULL;
	size_t n = 0;

	memset(p, 0, sizeof(*p));
	if (printed(r, false, fn, arg, &p->text, &p->len) < 0 ||
	    printed(r, true, fn, arg, &json, &n) < 0) {
		snprintf(err, errlen, "cannot read the handle's record: %s", strerror(errno));
		mcp_detach_parts_release(p);
		return -1;
	}
	p->obj = json_loadb(json, n, 0, NULL);
	free(json);
	return 0;
}

int mcp_detach_answer(struct detach_rec *r, double seconds, struct mcp_detach_parts *p,
                      char *err, size_t errlen)
{
	if (detach_wait(r, seconds, err, errlen) < 0)
		return -1;
	if (fill(r, r->state == DETACH_RUNNING ? print_status : print_result, NULL, p, err,
	         errlen) < 0)
		return -1;
	/* a call that failed before it had a result printed only its reason */
	p->error = r->state != DETACH_RUNNING && (r->code != 0 || !p->obj);
	return 0;
}

int mcp_detach_verb(const struct settings *s, enum mcp_detach_verb verb, const char *handle,
                    double seconds, struct mcp_detach_parts *p, char *err, size_t errlen)
{
	struct detach_rec r;
	uint64_t cap = s->max_output;
	bool cancelled;
	int got;

	if (detach_open(s, handle, &r, err, errlen) < 0)
		return -1;
	if (verb == MCP_DETACH_WAIT)
		return mcp_detach_answer(&r, seconds, p, err, errlen);
	if (verb == MCP_DETACH_PEEK)
		return fill(&r, print_peek, &cap, p, err, errlen);
	got = detach_cancel(&r, err, errlen);
	if (got < 0)
		return -1;
	cancelled = got == 1;
	if (fill(&r, print_cancel, &cancelled, p, err, errlen) < 0)
		return -1;
	p->error = !cancelled;
	return 0;
}

void mcp_detach_parts_release(struct mcp_detach_parts *p)
{
	free(p->text);
	json_decref(p->obj);
	memset(p, 0, sizeof(*p));
}
