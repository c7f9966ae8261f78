/*
 * fuzz_lsp.c - libFuzzer harness for lsp.c: the Content-Length framing,
 * the JSON-RPC decoding and the diagnostics turned into pyright's
 * command-line JSON, as the warm type checker reads a language server.
 *
 * The input is a byte stream as a server would write it.  Frames found
 * must lie inside it and consume it; each body that decodes as a
 * response has its result read as a diagnostic report, and what comes
 * out must be pyright --outputjson that typegate_parse() reads, with as
 * many errors as lsp_diagnostics() counted (when under its cap).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "lsp.h"
#include "typegate.h"

static void check_report(const json_t *result)
{
	char *out = NULL;
	size_t errors = 0, found = 0;
	struct typegate_diags d;

	if (lsp_diagnostics(result, "/w/_dolsot_cell.py", &out, &errors) < 0) {
		CHECK(out == NULL);
		return;
	}
	CHECK(out != NULL);
	CHECK(typegate_parse(TYPEGATE_PYRIGHT, out, strlen(out), &d) == 0);
	for (size_t i = 0; i < d.n; i++) {
		CHECK(strcmp(d.v[i].path, "/w/_dolsot_cell.py") == 0);
		if (d.v[i].severity == TYPEGATE_SEV_ERROR)
			found++;
	}
	if (!d.truncated)
		CHECK(found == errors);
	typegate_diags_release(&d);
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data;
	size_t left = size;

	for (int frames = 0; frames < 64; frames++) {
		size_t off = 0, n = 0, used = 0;
		enum lsp_frame f = lsp_frame_find(p, left, &off, &n, &used);
		json_t *root;
		struct lsp_msg m;

		if (f != LSP_FRAME_OK)
			break;
		CHECK(off <= used && n == used - off && used <= left && used > 0);
		CHECK(n <= LSP_MAX_BODY && off <= LSP_MAX_HEADER);
		if (lsp_msg_decode(p + off, n, &root, &m) == 0) {
			CHECK(root != NULL);
			CHECK((m.kind == LSP_RESPONSE) == (m.method == NULL));
			if (m.kind == LSP_RESPONSE && m.result)
				check_report(m.result);
			json_decref(root);
		} else {
			CHECK(root == NULL);
		}
		p += used;
		left -= used;
	}
	return 0;
}
