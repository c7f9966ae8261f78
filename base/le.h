/*
 * le.h - little-endian integers in byte buffers, for the wire formats
 * (frame.c between parent and worker, wire.c on the warm path's sockets)
 * and the hashes computed over them.
 */
#ifndef DOLSOT_LE_H
#define DOLSOT_LE_H

#include <stddef.h>
#include <stdint.h>

/* Store the low n bytes of v at p, least significant first. */
static inline void le_put(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* The n bytes at p as an unsigned number, least significant first. */
static inline uint64_t le_get(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static inline void le_put_u16(uint8_t *p, uint16_t v) { le_put(p, v, 2); }
static inline void le_put_u32(uint8_t *p, uint32_t v) { le_put(p, v, 4); }
static inline void le_put_u64(uint8_t *p, uint64_t v) { le_put(p, v, 8); }
static inline uint16_t le_get_u16(const uint8_t *p) { return (uint16_t)le_get(p, 2); }
static inline uint32_t le_get_u32(const uint8_t *p) { return (uint32_t)le_get(p, 4); }
static inline uint64_t le_get_u64(const uint8_t *p) { return le_get(p, 8); }

/* 64-bit FNV-1a: start from LE_FNV_BASIS, feed bytes with le_fnv(). */
#define LE_FNV_BASIS 1469598103934665603ull

static inline uint64_t le_fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

#endif
