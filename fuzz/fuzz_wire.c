/*
 * fuzz_wire.c - libFuzzer harness for the warm path's message decoder.
 *
 * The input is a received message (header and payload, no fds).  Whatever
 * decodes has its payload (a heap copy of its own size, so ASan sees any
 * read past it) walked with wire_next for every key the server
 * and zygotes read, which must stay inside the payload.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "wire.h"

static const char *const keys[] = { "cwd", "pythonpath", "venv", "toolbox", "env",
                                    "file", "id" };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wire_msg m;

	memset(&m, 0, sizeof(m));
	if (wire_decode(data, size, &m) < 0) {
		if (m.payload || m.len)
			abort();   /* nothing may be left allocated */
		return 0;
	}
	if (m.len > WIRE_MAX_PAYLOAD || (m.len == 0) != (m.payload == NULL))
		abort();
	for (size_t k = 0; k < sizeof(keys) / sizeof(*keys); k++) {
		size_t pos = 0;
		const char *v;

		while ((v = wire_next(m.payload, m.len, keys[k], &pos))) {
			if (v < (const char *)m.payload || v >= (const char *)m.payload + m.len)
				abort();
			if (pos > m.len)
				abort();
		}
	}
	wire_msg_release(&m);
	return 0;
}
