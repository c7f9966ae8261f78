/*
 * fuzz_modrec.c - libFuzzer harness for a session blob's module record
 * (modrec.c), the input being a whole blob.
 *
 * A record that reads holds at most MODREC_MAX_MODULES names, each a
 * dotted ASCII identifier, sorted and distinct, together within
 * MODREC_MAX_BYTES; anything else reads as no names.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "modrec.h"

static struct modrec r;

static int identifier(const char *s)
{
	int start = 1;

	for (; *s; s++) {
		int alpha = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_';
		int digit = *s >= '0' && *s <= '9';

		if (*s == '.') {
			if (start)
				return 0;
			start = 1;
		} else if (alpha || (digit && !start)) {
			start = 0;
		} else {
			return 0;
		}
	}
	return !start;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("blob", MFD_CLOEXEC), rc;
	size_t total = 0;

	CHECK(fd >= 0);
	CHECK(size == 0 || write(fd, data, size) == (ssize_t)size);
	rc = modrec_read(fd, &r);
	close(fd);
	CHECK(rc == -1 || rc == 0 || rc == 1);
	if (rc != 1) {
		CHECK(r.n == 0);
		CHECK(rc == 0 || errno == EINVAL);
		return 0;
	}
	CHECK(size >= 17);
	CHECK(r.n <= MODREC_MAX_MODULES);
	for (size_t i = 0; i < r.n; i++) {
		CHECK(identifier(r.names[i]));
		CHECK(i == 0 || strcmp(r.names[i - 1], r.names[i]) < 0);
		total += strlen(r.names[i]) + 1;
	}
	CHECK(total <= MODREC_MAX_BYTES);
	return 0;
}
