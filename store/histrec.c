/*
 * histrec.c - the history record's codec (histrec.h).  The bytes come
 * from a store anyone who can write it may have changed: every length is
 * checked against what is left before it is used.
 */
#include "histrec.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "le.h"
#include "units.h"

#define FIXED_LEN (8 + 1 + 1 + 4 + 8 + 8 + 8 + 8)
#define STATE_LEN (8 + HISTREC_HASH_LEN + 8)
#define EXTRA_LEN (HISTREC_HASH_LEN + 8 + 8)
#define ATTEMPT_FIXED (4 + 8 + 8)

int histrec_footer_tail(const uint8_t *tail, size_t total, size_t *len)
{
	uint32_t body;

	*len = 0;
	if (!tail || total < HISTREC_FOOTER ||
	    memcmp(tail + 4, HISTREC_MAGIC, HISTREC_FOOTER - 4) != 0)
		return 0;
	body = le_get_u32(tail);
	if ((uint64_t)body > (uint64_t)(total - HISTREC_FOOTER)) {
		errno = EBADMSG;
		return -1;
	}
	*len = (size_t)body + HISTREC_FOOTER;
	return 0;
}

int histrec_footer(const uint8_t *p, size_t n, size_t *len)
{
	return histrec_footer_tail(n >= HISTREC_FOOTER ? p + n - HISTREC_FOOTER : NULL, n, len);
}

void histrec_release(struct histrec *h)
{
	free(h->attempts);
	free(h->states);
	free(h->extras);
	memset(h, 0, sizeof(*h));
}

struct cursor {
	const uint8_t *p;
	size_t left;
};

static const uint8_t *take(struct cursor *c, size_t n)
{
	const uint8_t *at = c->p;

	if (n > c->left)
		return NULL;
	c->p += n;
	c->left -= n;
	return at;
}

/* A u32 length, then that many bytes (at most max). */
static int take_bytes(struct cursor *c, size_t max, const uint8_t **out, size_t *len)
{
	const uint8_t *n = take(c, 4);

	if (!n)
		return -1;
	*len = le_get_u32(n);
	if (*len > max)
		return -1;
	*out = take(c, *len);
	return *out ? 0 : -1;
}

static void parse_fixed(const uint8_t *p, struct histrec *h)
{
	h->number = le_get_u64(p);
	h->kind = p[8];
	h->sandboxed = p[9] & 1;
	h->exit_code = (int)(int32_t)le_get_u32(p + 10);
	h->time_ns = (int64_t)le_get_u64(p + 14);
	h->duration_us = le_get_u64(p + 22);
	h->from = le_get_u64(p + 30);
	h->written = le_get_u64(p + 38);
}

static int parse_attempts(struct cursor *c, struct histrec *h, const char **why)
{
	const uint8_t *n = take(c, 4), *p;

	*why = "its rolled-back cells are cut short";
	if (!n)
		return -1;
	h->nattempts = le_get_u32(n);
	if (h->nattempts > HISTREC_ATTEMPTS_MAX) {
		*why = "it names more rolled-back cells than it may keep";
		return -1;
	}
	h->attempts = h->nattempts ? calloc(h->nattempts, sizeof(*h->attempts)) : NULL;
	if (h->nattempts && !h->attempts) {
		*why = "out of memory";
		return -1;
	}
	for (size_t i = 0; i < h->nattempts; i++) {
		struct histrec_attempt *a = &h->attempts[i];

		p = take(c, ATTEMPT_FIXED);
		if (!p || take_bytes(c, HISTREC_CODE_MAX, &a->code, &a->code_len) < 0 ||
		    take_bytes(c, HISTREC_ATTEMPT_RESULT_MAX, &a->result, &a->result_len) < 0)
			return -1;
		a->exit_code = (int)(int32_t)le_get_u32(p);
		a->time_ns = (int64_t)le_get_u64(p + 4);
		a->duration_us = le_get_u64(p + 12);
	}
	return 0;
}

static int parse_states(struct cursor *c, struct histrec *h, const char **why)
{
	const uint8_t *n = take(c, 4), *p;

	*why = "its states are cut short";
	if (!n)
		return -1;
	h->nstates = le_get_u32(n);
	if (h->nstates > HISTREC_STATES_MAX || h->nstates > c->left / STATE_LEN) {
		*why = "it names more states than it holds";
		return -1;
	}
	h->states = h->nstates ? calloc(h->nstates, sizeof(*h->states)) : NULL;
	if (h->nstates && !h->states) {
		*why = "out of memory";
		return -1;
	}
	for (size_t i = 0; i < h->nstates; i++) {
		p = take(c, STATE_LEN);
		h->states[i].number = le_get_u64(p);
		memcpy(h->states[i].hash, p + 8, HISTREC_HASH_LEN);
		h->states[i].size = le_get_u64(p + 8 + HISTREC_HASH_LEN);
		if (h->states[i].number >= h->number ||
		    (i && h->states[i].number <= h->states[i - 1].number)) {
			*why = "its states are out of order";
			return -1;
		}
	}
	return 0;
}

static int parse_extras(struct cursor *c, struct histrec *h, const char **why)
{
	const uint8_t *n = take(c, 4), *p;

	*why = "its extra units are cut short";
	if (!n)
		return -1;
	h->nextras = le_get_u32(n);
	if (h->nextras > HISTREC_EXTRAS_MAX || h->nextras > c->left / EXTRA_LEN) {
		*why = "it names more extra units than it holds";
		return -1;
	}
	h->extras = h->nextras ? calloc(h->nextras, sizeof(*h->extras)) : NULL;
	if (h->nextras && !h->extras) {
		*why = "out of memory";
		return -1;
	}
	for (size_t i = 0; i < h->nextras; i++) {
		p = take(c, EXTRA_LEN);
		memcpy(h->extras[i].hash, p, HISTREC_HASH_LEN);
		h->extras[i].size = le_get_u64(p + HISTREC_HASH_LEN);
		h->extras[i].last = le_get_u64(p + HISTREC_HASH_LEN + 8);
		if (i && memcmp(h->extras[i - 1].hash, h->extras[i].hash, HISTREC_HASH_LEN) >= 0) {
			*why = "its extra units are out of order";
			return -1;
		}
	}
	return 0;
}

int histrec_parse(const uint8_t *buf, size_t len, struct histrec *h, char *err,
                  size_t errlen)
{
	struct cursor c = { buf, 0 };
	const uint8_t *fixed;
	const char *why = "its footer is damaged";
	size_t rec_len;

	memset(h, 0, sizeof(*h));
	if (histrec_footer(buf, len, &rec_len) < 0 || rec_len != len || len == 0)
		goto bad;
	c.left = len - HISTREC_FOOTER;
	why = "it is cut short";
	fixed = take(&c, FIXED_LEN);
	if (!fixed)
		goto bad;
	parse_fixed(fixed, h);
	why = "its state number is 0";
	if (h->number == 0)
		goto bad;
	why = "it has flags this dolsot does not know";
	if (fixed[9] & ~1u)
		goto bad;
	why = "its code is cut short";
	if (take_bytes(&c, HISTREC_CODE_MAX, &h->code, &h->code_len) < 0)
		goto bad;
	why = "its result is cut short";
	if (take_bytes(&c, HISTREC_RESULT_MAX, &h->result, &h->result_len) < 0)
		goto bad;
	if (parse_attempts(&c, h, &why) < 0 || parse_states(&c, h, &why) < 0 ||
	    parse_extras(&c, h, &why) < 0)
		goto bad;
	why = "it has bytes after its extra units";
	if (c.left)
		goto bad;
	return 0;
bad:
	histrec_release(h);
	snprintf(err, errlen, "the history record is damaged: %s", why);
	errno = EBADMSG;
	return -1;
}

static uint8_t *put_bytes(uint8_t *p, const uint8_t *b, size_t n)
{
	le_put_u32(p, (uint32_t)n);
	if (n)
		memcpy(p + 4, b, n);
	return p + 4 + n;
}

static size_t attempts_len(const struct histrec *h)
{
	size_t n = 4;

	for (size_t i = 0; i < h->nattempts; i++)
		n += ATTEMPT_FIXED + 4 + h->attempts[i].code_len + 4 + h->attempts[i].result_len;
	return n;
}

static uint8_t *put_attempts(uint8_t *at, const struct histrec *h)
{
	le_put_u32(at, (uint32_t)h->nattempts);
	at += 4;
	for (size_t i = 0; i < h->nattempts; i++) {
		const struct histrec_attempt *a = &h->attempts[i];

		le_put_u32(at, (uint32_t)a->exit_code);
		le_put_u64(at + 4, (uint64_t)a->time_ns);
		le_put_u64(at + 12, a->duration_us);
		at = put_bytes(at + ATTEMPT_FIXED, a->code, a->code_len);
		at = put_bytes(at, a->result, a->result_len);
	}
	return at;
}

static bool within_bounds(const struct histrec *h)
{
	if (h->code_len > HISTREC_CODE_MAX || h->result_len > HISTREC_RESULT_MAX ||
	    h->nattempts > HISTREC_ATTEMPTS_MAX || h->nstates > HISTREC_STATES_MAX ||
	    h->nextras > HISTREC_EXTRAS_MAX)
		return false;
	for (size_t i = 0; i < h->nattempts; i++)
		if (h->attempts[i].code_len > HISTREC_CODE_MAX ||
		    h->attempts[i].result_len > HISTREC_ATTEMPT_RESULT_MAX)
			return false;
	return true;
}

int histrec_encode(const struct histrec *h, uint8_t **out, size_t *len)
{
	size_t body = FIXED_LEN + 4 + h->code_len + 4 + h->result_len + attempts_len(h) + 4 +
	              h->nstates * STATE_LEN + 4 + h->nextras * EXTRA_LEN;
	uint8_t *p, *at;

	*out = NULL;
	*len = 0;
	if (!within_bounds(h) || body > UINT32_MAX) {
		errno = EINVAL;
		return -1;
	}
	p = malloc(body + HISTREC_FOOTER);
	if (!p)
		return -1;
	le_put_u64(p, h->number);
	p[8] = h->kind;
	p[9] = h->sandboxed ? 1 : 0;
	le_put_u32(p + 10, (uint32_t)h->exit_code);
	le_put_u64(p + 14, (uint64_t)h->time_ns);
	le_put_u64(p + 22, h->duration_us);
	le_put_u64(p + 30, h->from);
	le_put_u64(p + 38, h->written);
	at = put_bytes(p + FIXED_LEN, h->code, h->code_len);
	at = put_bytes(at, h->result, h->result_len);
	at = put_attempts(at, h);
	le_put_u32(at, (uint32_t)h->nstates);
	at += 4;
	for (size_t i = 0; i < h->nstates; i++, at += STATE_LEN) {
		le_put_u64(at, h->states[i].number);
		memcpy(at + 8, h->states[i].hash, HISTREC_HASH_LEN);
		le_put_u64(at + 8 + HISTREC_HASH_LEN, h->states[i].size);
	}
	le_put_u32(at, (uint32_t)h->nextras);
	at += 4;
	for (size_t i = 0; i < h->nextras; i++, at += EXTRA_LEN) {
		memcpy(at, h->extras[i].hash, HISTREC_HASH_LEN);
		le_put_u64(at + HISTREC_HASH_LEN, h->extras[i].size);
		le_put_u64(at + HISTREC_HASH_LEN + 8, h->extras[i].last);
	}
	le_put_u32(at, (uint32_t)body);
	memcpy(at + 4, HISTREC_MAGIC, HISTREC_FOOTER - 4);
	*out = p;
	*len = body + HISTREC_FOOTER;
	return 0;
}

int histrec_encode_with_attempt(const struct histrec *h, const struct histrec_attempt *a,
                                uint8_t **out, size_t *len)
{
	size_t keep = h->nattempts < HISTREC_ATTEMPTS_MAX ? h->nattempts
	              : HISTREC_ATTEMPTS_MAX - 1;
	struct histrec with = *h;
	struct histrec_attempt *v = malloc((keep + 1) * sizeof(*v));
	int ret;

	if (!v)
		return -1;
	if (keep)
		memcpy(v, h->attempts + (h->nattempts - keep), keep * sizeof(*v));
	v[keep] = *a;
	if (v[keep].code_len > HISTREC_CODE_MAX)
		v[keep].code_len = HISTREC_CODE_MAX;
	if (v[keep].result_len > HISTREC_ATTEMPT_RESULT_MAX)
		v[keep].result_len = 0;
	with.attempts = v;
	with.nattempts = keep + 1;
	ret = histrec_encode(&with, out, len);
	free(v);
	return ret;
}

long histrec_find_extra(const struct histrec *h, const uint8_t *hash)
{
	return units_search(h->extras, h->nextras, sizeof(*h->extras), hash);
}

const struct histrec_state *histrec_state_of(const struct histrec *h, uint64_t number)
{
	for (size_t i = 0; i < h->nstates; i++)
		if (h->states[i].number == number)
			return &h->states[i];
	return NULL;
}

const char *histrec_kind_name(uint8_t kind)
{
	switch (kind) {
	case HISTREC_CELL: return "cell";
	case HISTREC_UNDO: return "undo";
	case HISTREC_CHECKOUT: return "checkout";
	case HISTREC_FORK: return "fork";
	case HISTREC_EARLIER: return "earlier";
	default: return "unknown";
	}
}
