/*
 * pagemap.h - the bits of a /proc/PID/pagemap entry dolsot reads (see the
 * kernel's Documentation/admin-guide/mm/pagemap.rst): one little 64-bit
 * entry per virtual page, at offset (address / page size) * 8.
 */
#ifndef DOLSOT_PAGEMAP_H
#define DOLSOT_PAGEMAP_H

#include <stdint.h>

#define PM_PRESENT ((uint64_t)1 << 63)
#define PM_SWAPPED ((uint64_t)1 << 62)
#define PM_FILE ((uint64_t)1 << 61)        /* a file page (or shared anon) */
#define PM_EXCLUSIVE ((uint64_t)1 << 56)   /* mapped by this process alone */

#endif
