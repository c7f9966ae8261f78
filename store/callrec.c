/*
 * callrec.c - the call-id record's codec (callrec.h).  The bytes come
 * from a stored session: every length is checked against what is left
 * before it is used.
 */
#include "callrec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "le.h"

static bool id_char(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == ':' || c == '-';
}

bool callrec_id_valid(const char *id, char *err, size_t errlen)
{
	size_t n = strlen(id);

	if (n == 0 || n > CALLREC_ID_MAX) {
		snprintf(err, errlen, "a call id is 1 to %d characters (got %zu)",
		         CALLREC_ID_MAX, n);
		return false;
	}
	for (size_t i = 0; i < n; i++) {
		if (!id_char((unsigned char)id[i])) {
			snprintf(err, errlen, "a call id is made of %s only (byte %zu is 0x%02x)",
			         CALLREC_ID_CHARS, i + 1, (unsigned char)id[i]);
			return false;
		}
	}
	return true;
}

int callrec_footer(const uint8_t *tail, size_t total, size_t *len)
{
	uint32_t body;

	*len = 0;
	if (!tail || total < CALLREC_FOOTER ||
	    memcmp(tail + 4, CALLREC_MAGIC, CALLREC_FOOTER - 4) != 0)
		return 0;
	body = le_get_u32(tail);
	if ((uint64_t)body > (uint64_t)(total - CALLREC_FOOTER)) {
		errno = EBADMSG;
		return -1;
	}
	*len = (size_t)body + CALLREC_FOOTER;
	return 0;
}

void callrec_release(struct callrec *r)
{
	for (size_t i = 0; i < r->n; i++) {
		free(r->e[i].out.p);
		free(r->e[i].err.p);
		free(r->e[i].json.p);
	}
	r->n = 0;
}

/* A cursor over the entries' bytes. */
struct cursor {
	const uint8_t *p;
	size_t left;
};

static bool take(struct cursor *c, void *out, size_t n)
{
	if (n > c->left)
		return false;
	if (n)
		memcpy(out, c->p, n);
	c->p += n;
	c->left -= n;
	return true;
}

static bool take_bytes(struct cursor *c, struct callrec_bytes *b, size_t *budget)
{
	uint8_t len4[4];
	uint32_t n;

	if (!take(c, len4, 4))
		return false;
	n = le_get_u32(len4);
	if (n > c->left || n > *budget)
		return false;
	*budget -= n;
	b->len = n;
	b->p = NULL;
	if (!n)
		return true;
	b->p = malloc(n);
	return b->p && take(c, b->p, n);
}

static int parse_entry(struct cursor *c, struct callrec_entry *e, char *err,
                       size_t errlen)
{
	size_t budget = CALLREC_RESULT_MAX;
	uint8_t idlen, code;
	char why[160];

	memset(e, 0, sizeof(*e));
	if (!take(c, &idlen, 1) || idlen == 0 || idlen > CALLREC_ID_MAX ||
	    !take(c, e->id, idlen)) {
		snprintf(err, errlen, "a call id's length is out of range");
		return -1;
	}
	e->id[idlen] = '\0';
	if (strlen(e->id) != idlen || !callrec_id_valid(e->id, why, sizeof(why))) {
		snprintf(err, errlen, "a call id is not valid: %s", why);
		return -1;
	}
	if (!take(c, &code, 1) || !take_bytes(c, &e->out, &budget) ||
	    !take_bytes(c, &e->err, &budget) || !take_bytes(c, &e->json, &budget)) {
		snprintf(err, errlen, "call '%s': a result is cut short or over %u bytes",
		         e->id, CALLREC_RESULT_MAX);
		return -1;
	}
	e->exit_code = code;
	return 0;
}

int callrec_parse(const uint8_t *buf, size_t len, struct callrec *r, char *err,
                  size_t errlen)
{
	struct cursor c;
	size_t body;

	r->n = 0;
	if (len == 0)
		return 0;
	if (callrec_footer(len >= CALLREC_FOOTER ? buf + len - CALLREC_FOOTER : NULL, len,
	                   &body) < 0 || body != len) {
		snprintf(err, errlen, "the call-id record's footer is damaged");
		return -1;
	}
	c = (struct cursor){ buf, len - CALLREC_FOOTER };
	while (c.left > 0) {
		if (r->n == CALLREC_MAX) {
			snprintf(err, errlen, "the call-id record holds more than %d calls",
			         CALLREC_MAX);
			goto bad;
		}
		if (parse_entry(&c, &r->e[r->n], err, errlen) < 0) {
			struct callrec_entry *e = &r->e[r->n];

			free(e->out.p);
			free(e->err.p);
			free(e->json.p);
			goto bad;
		}
		if (callrec_find(r, r->e[r->n].id)) {
			snprintf(err, errlen, "call '%s' is recorded twice", r->e[r->n].id);
			r->n++;
			goto bad;
		}
		r->n++;
	}
	return 0;
bad:
	callrec_release(r);
	return -1;
}

const struct callrec_entry *callrec_find(const struct callrec *r, const char *id)
{
	for (size_t i = 0; i < r->n; i++)
		if (strcmp(r->e[i].id, id) == 0)
			return &r->e[i];
	return NULL;
}

static int copy_bytes(struct callrec_bytes *to, const struct callrec_bytes *from)
{
	to->len = from->len;
	to->p = NULL;
	if (!from->len)
		return 0;
	to->p = malloc(from->len);
	if (!to->p)
		return -1;
	memcpy(to->p, from->p, from->len);
	return 0;
}

static void forget(struct callrec *r, size_t i)
{
	free(r->e[i].out.p);
	free(r->e[i].err.p);
	free(r->e[i].json.p);
	memmove(&r->e[i], &r->e[i + 1], (r->n - i - 1) * sizeof(r->e[0]));
	r->n--;
}

int callrec_add(struct callrec *r, const char *id, int exit_code,
                const struct callrec_bytes *out, const struct callrec_bytes *err,
                const struct callrec_bytes *json)
{
	struct callrec_entry e;
	char why[160];

	if (!callrec_id_valid(id, why, sizeof(why)) || exit_code < 0 || exit_code > 255 ||
	    out->len > CALLREC_RESULT_MAX || err->len > CALLREC_RESULT_MAX - out->len ||
	    json->len > CALLREC_RESULT_MAX - out->len - err->len) {
		errno = EINVAL;
		return -1;
	}
	memset(&e, 0, sizeof(e));
	snprintf(e.id, sizeof(e.id), "%s", id);
	e.exit_code = exit_code;
	if (copy_bytes(&e.out, out) < 0 || copy_bytes(&e.err, err) < 0 ||
	    copy_bytes(&e.json, json) < 0) {
		free(e.out.p);
		free(e.err.p);
		free(e.json.p);
		errno = ENOMEM;
		return -1;
	}
	for (size_t i = 0; i < r->n; i++) {
		if (strcmp(r->e[i].id, id) == 0) {
			forget(r, i);
			break;
		}
	}
	if (r->n == CALLREC_MAX)
		forget(r, 0);
	r->e[r->n++] = e;
	return 0;
}

static uint8_t *put_bytes(uint8_t *p, const struct callrec_bytes *b)
{
	le_put_u32(p, (uint32_t)b->len);
	if (b->len)
		memcpy(p + 4, b->p, b->len);
	return p + 4 + b->len;
}

int callrec_encode(const struct callrec *r, uint8_t **buf, size_t *len)
{
	size_t body = 0;
	uint8_t *p;

	*buf = NULL;
	*len = 0;
	if (r->n == 0)
		return 0;
	for (size_t i = 0; i < r->n; i++)
		body += 2 + strlen(r->e[i].id) + 12 + r->e[i].out.len + r->e[i].err.len +
		        r->e[i].json.len;
	*buf = malloc(body + CALLREC_FOOTER);
	if (!*buf) {
		errno = ENOMEM;
		return -1;
	}
	p = *buf;
	for (size_t i = 0; i < r->n; i++) {
		size_t idlen = strlen(r->e[i].id);

		*p++ = (uint8_t)idlen;
		memcpy(p, r->e[i].id, idlen);
		p += idlen;
		*p++ = (uint8_t)r->e[i].exit_code;
		p = put_bytes(p, &r->e[i].out);
		p = put_bytes(p, &r->e[i].err);
		p = put_bytes(p, &r->e[i].json);
	}
	le_put_u32(p, (uint32_t)body);
	memcpy(p + 4, CALLREC_MAGIC, CALLREC_FOOTER - 4);
	*len = body + CALLREC_FOOTER;
	return 0;
}
