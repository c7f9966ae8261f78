/*
 * fuzz.h - what every harness shares: libFuzzer's entry point and CHECK,
 * which turns a broken property into a crash libFuzzer keeps.
 */
#ifndef DOLSOT_FUZZ_H
#define DOLSOT_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
		abort(); \
	} \
} while (0)

#endif
