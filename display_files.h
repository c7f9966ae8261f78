/*
 * display_files.h - the text contract's figures: each image/png display of
 * a result becomes a file in the session's output directory, which
 * output.c then names in one stderr line.  --json carries them inline
 * instead, and writes no file.
 */
#ifndef DOLSOT_DISPLAY_FILES_H
#define DOLSOT_DISPLAY_FILES_H

#include <stddef.h>
#include <stdint.h>

#include "output.h"

/*
 * The session's output directory: $DOLSOT_CACHE_DIR/output/SESSION when
 * cache_dir is set, else {TMPDIR or /tmp}/dolsot-EUID/output/SESSION.
 * Returns 0, or -1 when it does not fit in len.
 */
int display_dir(const char *cache_dir, const char *session, char *buf, size_t len);

/*
 * Write r's PNG displays as files under dir (made 0700 when missing, and
 * refused unless it is ours and private), each named cell-COUNT-N.png
 * (another suffix when that exists), and record them in r->files.
 * Returns 0, or -1 with a reason in err (the files written so far stay
 * recorded).
 */
int display_files_write(struct result *r, const char *dir, char *err, size_t errlen);

/*
 * Decode base64 text (RFC 4648, with padding, no line breaks) into out,
 * which must hold n / 4 * 3 bytes.  Returns the decoded length, or -1 when
 * the text is not strict base64.
 */
long base64_decode(const uint8_t *in, size_t n, uint8_t *out);

#endif
