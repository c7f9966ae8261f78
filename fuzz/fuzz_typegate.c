/*
 * fuzz_typegate.c - libFuzzer harness for the checker output parsers of
 * typegate_parse.c.
 *
 * The first byte picks the format (ty, mypy, pyright, generic); the rest is
 * the checker's output.  Whatever is parsed must respect the documented
 * bounds: at most TYPEGATE_MAX_DIAGS diagnostics, texts NUL-terminated, at most
 * TYPEGATE_MAX_TEXT bytes, free of NULs and of control bytes but '\n' and '\t'.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "typegate.h"

static void check_text(const char *s, bool may_be_null)
{
	size_t n;

	if (!s) {
		CHECK(may_be_null);
		return;
	}
	n = strlen(s);
	CHECK(n <= TYPEGATE_MAX_TEXT);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		CHECK(c >= 0x20 || c == '\n' || c == '\t');
		CHECK(c != 0x7f);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum typegate_checker k;
	struct typegate_diags d;

	if (size < 1)
		return 0;
	k = (enum typegate_checker)(data[0] % 4);
	/* Copy to an exact-size buffer so ASan sees any read past the end. */
	{
		char *buf = malloc(size - 1 ? size - 1 : 1);
		int rc;

		CHECK(buf != NULL);
		memcpy(buf, data + 1, size - 1);
		rc = typegate_parse(k, buf, size - 1, &d);
		CHECK(rc == 0 || rc == -1);
		CHECK(d.n <= TYPEGATE_MAX_DIAGS);
		CHECK(!d.truncated || d.n == TYPEGATE_MAX_DIAGS);
		for (size_t i = 0; i < d.n; i++) {
			check_text(d.v[i].path, false);
			check_text(d.v[i].message, false);
			check_text(d.v[i].code, true);
			CHECK(d.v[i].severity == TYPEGATE_SEV_ERROR ||
			      d.v[i].severity == TYPEGATE_SEV_WARNING ||
			      d.v[i].severity == TYPEGATE_SEV_NOTE);
		}
		typegate_diags_release(&d);
		free(buf);
	}
	return 0;
}
