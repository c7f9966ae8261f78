/*
 * units_blob.h - version 4 session blobs made in a test (units.h's
 * layout): a head naming given units, and a pack of some of them.
 */
#ifndef DOLSOT_TEST_UNITS_BLOB_H
#define DOLSOT_TEST_UNITS_BLOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A v4 blob (malloc'd, *len bytes): index as its index, no module
 * record, a ref per distinct unit of units[0..n) (NUL-terminated
 * texts, their bytes as units_blob_unit makes them), and a pack entry for each unit
 * i with packed[i] (packed NULL: every unit), in the refs' order.
 */
uint8_t *units_blob(const char *index, const char *const *units, size_t n,
                    const bool *packed, size_t *len);

/* A unit's bytes as units_blob makes them from its text (malloc'd, *size
 * bytes): the text padded with '.' to UNITS_INLINE_MAX bytes, so that a
 * store keeping units keeps it as one of its own; a text beginning
 * "small:" is kept as it is, small enough to stay with the head. */
uint8_t *units_blob_unit(const char *text, size_t *size);

/* The hash of text's unit (units_blob_unit) as hex (65 bytes). */
void units_blob_hex(const char *text, char *hex);

#endif
