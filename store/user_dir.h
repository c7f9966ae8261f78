/*
 * user_dir.h - the directory of a user who set no DOLSOT_CACHE_DIR, where
 * the default session directory ("sessions"), the images ("output") and
 * so the warm server's socket are made.
 *
 * The seed's default, {TMPDIR or /tmp}/dolsot-{euid}, is a name anyone can
 * make first: another local user who does would lock this one out for
 * good (issue 35).  It is used when it is ours and private; else, in this
 * order, $XDG_RUNTIME_DIR/dolsot (when that directory is ours and 0700),
 * $HOME/.cache/dolsot/store, or a mkdtemp directory of ours in TMPDIR,
 * and a note says which and why.
 */
#ifndef DOLSOT_USER_DIR_H
#define DOLSOT_USER_DIR_H

#include <stddef.h>

/* The directory, into buf: chosen (and made 0700 when missing) by the
 * first call in the process, the same for every later one.  Returns 0,
 * or -1 (ENAMETOOLONG) when it does not fit in len. */
int user_dir_path(char *buf, size_t len);

/* Why the default was passed over and where the user's files are kept
 * instead, one line without "dolsot: " or a newline; NULL when the default
 * is used.  Chooses the directory first when no call has. */
const char *user_dir_note(void);

#endif
