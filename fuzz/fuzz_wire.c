/*
 * fuzz_wire.c - libFuzzer harness for the warm path's message decoder.
 *
 * The input is a received message (header and payload, no fds).  Whatever
 * decodes has its payload walked with wire_next for every key the server
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
	static struct wire_msg m;

	memset(&m, 0, sizeof(m));
	if (wire_decode(data, size, &m) < 0)
		return 0;
	if (m.len > WIRE_MAX_PAYLOAD)
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
	return 0;
}
