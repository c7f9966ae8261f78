/*
 * stamp.h - a unit file's stamp (session format v4, objects.h): a small
 * file beside a large unit, REST.ok, saying that the unit's bytes were
 * checked against the hash that names it while the file was this inode
 * with this size and this change time.  Any later write, truncation,
 * chmod, or rename over the file moves its change time, which no
 * unprivileged process can set back; so while the stamp matches, a
 * reader (worker/unitmap.c) may map the unit without hashing it again.
 * A missing or unmatched stamp costs a hash, never a wrong value: the
 * stamp is written after the unit is durable and is not synced itself.
 *
 * What it does not see: bytes that change under an unchanged inode with
 * no write through the kernel (media damage the filesystem does not
 * report), or someone able to set the clock.
 */
#ifndef DOLSOT_STAMP_H
#define DOLSOT_STAMP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#define STAMP_SUFFIX ".ok"
/* Units at least this large get a stamp: below it, hashing costs less
 * than reading the stamp (session.py's _MAP_MIN is the same bound). */
#define STAMP_MIN ((size_t)1 << 20)
#define STAMP_TEXT_MAX 96

/* The stamp's text for a file whose fstat is st, into buf (len at least
 * STAMP_TEXT_MAX); returns its length. */
size_t stamp_format(const struct stat *st, char *buf, size_t len);

/* Whether text[0..n) is the stamp of a file whose fstat is st. */
bool stamp_matches(const char *text, size_t n, const struct stat *st);

#endif
