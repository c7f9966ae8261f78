/*
 * wire.c - framing and fd passing for the warm path's sockets.
 */
#include "wire.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "le.h"

#define WIRE_HEADER_LEN 28

int wire_send(int sock, uint16_t type, uint64_t a, uint64_t b,
              const void *payload, size_t len, const int *fds, size_t nfds)
{
	uint8_t hdr[WIRE_HEADER_LEN];
	struct iovec iov[2] = { { hdr, sizeof(hdr) }, { (void *)payload, len } };
	union {
		struct cmsghdr c;
		char buf[CMSG_SPACE(sizeof(int) * WIRE_MAX_FDS)];
	} ctl;
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = len ? 2 : 1 };
	ssize_t sent;

	if (len > WIRE_MAX_PAYLOAD || nfds > WIRE_MAX_FDS) {
		errno = EMSGSIZE;
		return -1;
	}
	le_put_u32(hdr, WIRE_MAGIC);
	le_put_u16(hdr + 4, type);
	le_put_u16(hdr + 6, (uint16_t)nfds);
	le_put_u64(hdr + 8, a);
	le_put_u64(hdr + 16, b);
	le_put_u32(hdr + 24, (uint32_t)len);
	if (nfds) {
		memset(&ctl, 0, sizeof(ctl));
		msg.msg_control = ctl.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		ctl.c.cmsg_level = SOL_SOCKET;
		ctl.c.cmsg_type = SCM_RIGHTS;
		ctl.c.cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(&ctl.c), fds, sizeof(int) * nfds);
	}
	do
		sent = sendmsg(sock, &msg, MSG_NOSIGNAL);
	while (sent < 0 && errno == EINTR);
	if (sent < 0)
		return -1;
	if ((size_t)sent != sizeof(hdr) + len) {
		errno = EMSGSIZE;
		return -1;
	}
	return 0;
}

int wire_decode(const uint8_t *buf, size_t len, struct wire_msg *m)
{
	uint32_t plen;

	if (len < WIRE_HEADER_LEN || le_get(buf, 4) != WIRE_MAGIC)
		goto bad;
	m->type = (uint16_t)le_get(buf + 4, 2);
	m->a = le_get(buf + 8, 8);
	m->b = le_get(buf + 16, 8);
	plen = (uint32_t)le_get(buf + 24, 4);
	if (m->type == 0 || m->type >= WIRE_TYPE_MAX || plen > WIRE_MAX_PAYLOAD ||
	    plen != len - WIRE_HEADER_LEN || le_get(buf + 6, 2) != m->nfds)
		goto bad;
	/* Key/value payloads end with a NUL; check it once here. */
	if (plen && buf[len - 1] != '\0' && m->type != WIRE_INFO &&
	    m->type != WIRE_FALLBACK && m->type != WIRE_FAILED && m->type != WIRE_MEM_ERR)
		goto bad;
	memcpy(m->payload, buf + WIRE_HEADER_LEN, plen);
	m->len = plen;
	return 0;
bad:
	errno = EBADMSG;
	return -1;
}

void wire_close_fds(struct wire_msg *m)
{
	for (size_t i = 0; i < m->nfds; i++)
		if (m->fds[i] >= 0)
			close(m->fds[i]);
	m->nfds = 0;
}

static void take_fds(struct msghdr *msg, struct wire_msg *m)
{
	m->nfds = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
		size_t n;
		int *fds;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		fds = (int *)CMSG_DATA(c);
		for (size_t i = 0; i < n; i++) {
			if (m->nfds < WIRE_MAX_FDS)
				m->fds[m->nfds++] = fds[i];
			else
				close(fds[i]);
		}
	}
}

int wire_recv(int sock, struct wire_msg *m)
{
	static uint8_t buf[WIRE_HEADER_LEN + WIRE_MAX_PAYLOAD + 1];
	union {
		struct cmsghdr c;
		char buf[CMSG_SPACE(sizeof(int) * WIRE_MAX_FDS)];
	} ctl;
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
	                      .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf) };
	ssize_t got;

	do
		got = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (got < 0 && errno == EINTR);
	if (got < 0)
		return -1;
	take_fds(&msg, m);
	if (got == 0 && m->nfds == 0)
		return 0;
	if ((msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
	    wire_decode(buf, (size_t)got, m) < 0) {
		wire_close_fds(m);
		errno = EBADMSG;
		return -1;
	}
	return 1;
}

const char *wire_next(const uint8_t *payload, size_t len, const char *key, size_t *pos)
{
	size_t klen = strlen(key);

	while (*pos < len) {
		const char *entry = (const char *)payload + *pos;
		size_t n = strnlen(entry, len - *pos);

		if (n == len - *pos) {
			/* An unterminated last entry (free-text payloads): not ours. */
			*pos = len;
			return NULL;
		}
		*pos += n + 1;
		if (n > klen && memcmp(entry, key, klen) == 0 && entry[klen] == '=')
			return entry + klen + 1;
	}
	return NULL;
}

int wire_put(uint8_t *buf, size_t *len, const char *key, const char *value)
{
	size_t k = strlen(key), v = strlen(value);

	if (*len + k + v + 2 > WIRE_MAX_PAYLOAD)
		return -1;
	memcpy(buf + *len, key, k);
	buf[*len + k] = '=';
	memcpy(buf + *len + k + 1, value, v);
	buf[*len + k + 1 + v] = '\0';
	*len += k + v + 2;
	return 0;
}
