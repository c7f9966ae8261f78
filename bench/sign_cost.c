/*
 * bench/sign_cost.c - what signing costs by itself (sign.c): reading the
 * key file, and signing then verifying blobs of a few sizes, each the
 * median of many runs in one process.  Built and run by bench/sign.sh.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sign.h"

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return v[n / 2];
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 1024, 65536, 1 << 20, 50000000 };
	char err[SIGN_ERR_MAX];
	struct sign_key key;
	struct sign_meta meta = { 1, false }, got;
	size_t trailer;
	double t[201];
	int dirfd;

	if (argc != 2) {
		fprintf(stderr, "usage: sign_cost DIR\n");
		return 2;
	}
	dirfd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0 || sign_key_open(NULL, dirfd, &key, err, sizeof(err)) < 0) {
		fprintf(stderr, "sign_cost: %s\n", dirfd < 0 ? "cannot open DIR" : err);
		return 1;
	}
	for (int i = 0; i < 201; i++) {
		double t0 = now();

		if (sign_key_open(NULL, dirfd, &key, err, sizeof(err)) < 0)
			return 1;
		t[i] = now() - t0;
	}
	printf("key file read: median %.4f ms\n", median(t, 201) * 1e3);
	for (size_t s = 0; s < sizeof(sizes) / sizeof(*sizes); s++) {
		size_t n = sizes[s];
		int runs = n > 10000000 ? 11 : 201;
		uint8_t *b = malloc(n + SIGN_TRAILER);
		double v[201];

		if (!b)
			return 1;
		memset(b, 'x', n);
		for (int i = 0; i < runs; i++) {
			double t0 = now();

			sign_trailer(&key, "session", b, n, &meta, b + n);
			t[i] = now() - t0;
			t0 = now();
			if (sign_verify(&key, "session", b, n + SIGN_TRAILER, &got, &trailer) !=
			    SIGN_OK)
				return 1;
			v[i] = now() - t0;
		}
		printf("%9zu bytes: sign median %.4f ms, verify median %.4f ms (%.0f MB/s)\n", n,
		       median(t, runs) * 1e3, median(v, runs) * 1e3,
		       (double)n / median(v, runs) / 1e6);
		free(b);
	}
	close(dirfd);
	return 0;
}
