/*
 * utc.h - a wall-clock time as the text every interface shows.
 *
 * Listings, --history, --json and MCP all print when something happened
 * as ISO 8601 in UTC with an explicit offset, "2026-12-07T18:42:46+00:00":
 * one format, written here once.
 */
#ifndef DOLSOT_UTC_H
#define DOLSOT_UTC_H

#include <stddef.h>
#include <time.h>

/* The text's length with its NUL. */
#define UTC_TEXT_LEN 26

/* t as that text in buf (len >= UTC_TEXT_LEN); "" when t cannot be
 * broken down (a year past 9999). */
void utc_text(time_t t, char *buf, size_t len);

#endif
