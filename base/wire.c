/*
 * wire.c - framing and fd passing for the warm path's sockets.
 */
#include "wire.h"

#include <errno.h>
#include <stdlib.h>
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

/* Check buf as a message with m->nfds fds; 0 with the header in m and
 * *plen the payload's length, or -1 (EBADMSG). */
static int decode_header(const uint8_t *buf, size_t len, struct wire_msg *m, size_t *plen)
{
	uint32_t n;

	if (len < WIRE_HEADER_LEN || le_get(buf, 4) != WIRE_MAGIC)
		goto bad;
	m->type = (uint16_t)le_get(buf + 4, 2);
	m->a = le_get(buf + 8, 8);
	m->b = le_get(buf + 16, 8);
	n = (uint32_t)le_get(buf + 24, 4);
	if (m->type == 0 || m->type >= WIRE_TYPE_MAX || n > WIRE_MAX_PAYLOAD ||
	    n != len - WIRE_HEADER_LEN || le_get(buf + 6, 2) != m->nfds)
		goto bad;
	/* Key/value payloads end with a NUL; check it once here. */
	if (n && buf[len - 1] != '\0' && m->type != WIRE_INFO &&
	    m->type != WIRE_FALLBACK && m->type != WIRE_FAILED && m->type != WIRE_MEM_ERR)
		goto bad;
	*plen = n;
	return 0;
bad:
	errno = EBADMSG;
	return -1;
}

int wire_decode(const uint8_t *buf, size_t len, struct wire_msg *m)
{
	size_t plen;

	m->payload = NULL;
	m->len = 0;
	if (decode_header(buf, len, m, &plen) < 0)
		return -1;
	if (plen) {
		m->payload = malloc(plen);
		if (!m->payload) {
			errno = ENOMEM;
			return -1;
		}
		memcpy(m->payload, buf + WIRE_HEADER_LEN, plen);
	}
	m->len = plen;
	return 0;
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

		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS &&
		    c->cmsg_len >= CMSG_LEN(sizeof(struct ucred))) {
			struct ucred cred;

			memcpy(&cred, CMSG_DATA(c), sizeof(cred));
			m->pid = cred.pid;
			continue;
		}
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

void wire_msg_release(struct wire_msg *m)
{
	wire_close_fds(m);
	free(m->payload);
	m->payload = NULL;
	m->len = 0;
}

/*
 * A SOCK_SEQPACKET message is read whole or its rest is lost, so its size
 * is asked first (MSG_PEEK | MSG_TRUNC gives the real length) and the
 * buffer made to fit; one byte more than a message may have shows an
 * oversized one as truncated.  The payload is then moved to the front of
 * that same buffer, which becomes m->payload.
 */
int wire_recv(int sock, struct wire_msg *m)
{
	union {
		struct cmsghdr c;
		char buf[CMSG_SPACE(sizeof(int) * WIRE_MAX_FDS) +
		         CMSG_SPACE(sizeof(struct ucred))];
	} ctl;
	struct iovec iov;
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
	                      .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf) };
	ssize_t size, got;
	size_t cap, plen;
	uint8_t *buf;

	memset(m, 0, sizeof(*m));
	do
		size = recv(sock, NULL, 0, MSG_PEEK | MSG_TRUNC);
	while (size < 0 && errno == EINTR);
	if (size < 0)
		return -1;
	cap = (size_t)size < WIRE_HEADER_LEN + WIRE_MAX_PAYLOAD ? (size_t)size
	                                                        : WIRE_HEADER_LEN + WIRE_MAX_PAYLOAD;
	buf = malloc(cap + 1);
	if (!buf) {
		errno = ENOMEM;
		return -1;
	}
	iov = (struct iovec){ buf, cap + 1 };
	do
		got = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (got < 0 && errno == EINTR);
	if (got < 0) {
		free(buf);
		return -1;
	}
	take_fds(&msg, m);
	if (got == 0 && m->nfds == 0) {
		free(buf);
		return 0;
	}
	if ((msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
	    decode_header(buf, (size_t)got, m, &plen) < 0) {
		free(buf);
		wire_close_fds(m);
		errno = EBADMSG;
		return -1;
	}
	if (plen) {
		memmove(buf, buf + WIRE_HEADER_LEN, plen);
		m->payload = buf;
		m->len = plen;
	} else {
		free(buf);
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
