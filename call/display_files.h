/*
 * display_files.h - the text contract's figures: each image/png display of
 * a result becomes a file in the session's output directory, which
 * output.c then names in one stderr line.  --json carries them inline
 * instead, and writes no file.
 *
 * Their lifetime: a session's directory keeps its DISPLAY_FILES_KEEP newest
 * images (older ones go when a call writes new ones); --reset removes a
 * session's images with it (repl.c); and when the file store reaps, the
 * directory of a session it no longer holds goes once it has not changed
 * for the store's TTL (repl.c drives that pass).
 */
#ifndef DOLSOT_DISPLAY_FILES_H
#define DOLSOT_DISPLAY_FILES_H

#include <stddef.h>
#include <stdint.h>

#include "output.h"

/* The images a session's directory keeps: at least what rich.py lets one
 * cell show (8), so a call's own images are never removed. */
#define DISPLAY_FILES_KEEP 32

/*
 * The session's output directory: $DOLSOT_CACHE_DIR/output/SESSION when
 * cache_dir is set, else output/SESSION in the user's directory (user_dir.h).
 * Returns 0, or -1 when it does not fit in len.
 */
int display_dir(const char *cache_dir, const char *session, char *buf, size_t len);
/* The directory above every session's: display_dir without the SESSION. */
int display_root(const char *cache_dir, char *buf, size_t len);

/*
 * Write r's PNG displays as files under dir (made 0700 when missing, and
 * refused unless it is ours and private), each named cell-COUNT-N.png
 * (another suffix when that exists), and record them in r->files.
 * Returns 0, or -1 with a reason in err (the files written so far stay
 * recorded).  Then removes the directory's oldest images beyond
 * DISPLAY_FILES_KEEP.  The caller holds the session's lock.
 */
int display_files_write(struct result *r, const char *dir, char *err, size_t errlen);

/*
 * Remove the images of session target under root (display_root), or with
 * "all" of every session there, then each directory left empty; only the
 * names display_files_write makes are touched, and a directory that is not
 * ours and private is refused.  With older_than > 0, a session's directory
 * changed fewer than that many seconds ago is left alone.  *removed counts
 * the files.  Returns 0 (also when there was nothing), or -1 with a reason
 * in err ("all" goes on past a refused directory and reports the first).
 */
int display_files_remove(const char *root, const char *target, double older_than,
                         unsigned *removed, char *err, size_t errlen);

/*
 * The sessions under root whose directory has not changed for older_than
 * seconds: *ids (and each id) malloc'd, freed by display_files_stale_free.
 * Returns 0 (none when root is absent), or -1 with a reason in err.
 */
int display_files_stale(const char *root, double older_than, char ***ids, size_t *n,
                        char *err, size_t errlen);
void display_files_stale_free(char **ids, size_t n);

/*
 * Decode base64 text (RFC 4648, with padding, no line breaks) into out,
 * which must hold n / 4 * 3 bytes.  Returns the decoded length, or -1 when
 * the text is not strict base64.
 */
long display_files_base64_decode(const uint8_t *in, size_t n, uint8_t *out);

#endif
