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
 * strings, their bytes without the NUL), and a pack entry for each unit
 * i with packed[i] (packed NULL: every unit), in the refs' order.
 */
uint8_t *units_blob(const char *index, const char *const *units, size_t n,
                    const bool *packed, size_t *len);

/* Unit text's hash as hex (65 bytes). */
void units_blob_hex(const char *text, char *hex);

#endif
