/*
 * prefault.c - the pages a warm call writes, copied before it comes
 * (prefault.h).
 *
 * A worker forked from a zygote shares the zygote's memory, and its first
 * write to each shared page (a refcount, the type cache, malloc's lists,
 * the frame stack) stops it for a copy: 700 pages for `x + 1`, 1,700 for a
 * small pandas cell, about 2 us each on our machines.  The book is a
 * MAP_SHARED mapping each zygote makes before its first spare, so its
 * spares and workers all see it.  One spare in PREFAULT_LEARN_EVERY runs
 * its call as it comes, then writes into the book the runs of its
 * writable private pages that are its own by then (pagemap's
 * exclusive bit): what that call wrote or allocated.  Every other spare,
 * while it waits for its call, copies those pages with
 * madvise(MADV_POPULATE_WRITE), so the call that takes it finds them its
 * own already.
 *
 * Populating changes no byte, so a stale or torn book costs time or
 * memory, never a result: pages no longer mapped (the learner's own later
 * mappings) fail and are skipped, and no spare copies more than
 * PREFAULT_MAX_PAGES.
 */
#include "prefault.h"

#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fdio.h"
#include "pagemap.h"

#define PREFAULT_LEARN_EVERY 32
#define PREFAULT_RUNS 2048
#define PREFAULT_MAX_PAGES 4096          /* 16 MiB of 4 KiB pages */
#define PM_CHUNK 512                     /* pagemap entries read at a time */
/* What a learner reads of pagemap: a mapping larger than this is a
 * reservation (a sanitizer's shadow, a cell's sparse map) or a buffer of
 * the call's own, never worth a look; nor more than this in all. */
#define PREFAULT_SCAN_MAP ((uint64_t)1 << 30)
#define PREFAULT_SCAN_ALL ((uint64_t)4 << 30)

struct run {
	uint64_t start;                  /* an address, page-aligned */
	uint64_t pages;
};

struct book {
	atomic_uint spares;              /* spares made from this zygote */
	atomic_uint n_runs;
	struct run runs[PREFAULT_RUNS];
};

static struct book *book;
static bool learner;                 /* this spare learns after its call */

void prefault_open(void)
{
	prefault_forget();
	book = mmap(NULL, sizeof(*book), PROT_READ | PROT_WRITE,
	            MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (book == MAP_FAILED)
		book = NULL;    /* calls fault their pages in as they go */
}

void prefault_forget(void)
{
	if (book)
		munmap(book, sizeof(*book));
	book = NULL;
	learner = false;
}

void prefault_apply(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), budget = PREFAULT_MAX_PAGES;
	unsigned n;

	if (!book)
		return;
	if (atomic_fetch_add(&book->spares, 1) % PREFAULT_LEARN_EVERY == 0) {
		learner = true;
		return;
	}
	n = atomic_load(&book->n_runs);
	for (unsigned i = 0; i < n && i < PREFAULT_RUNS && budget; i++) {
		struct run r = book->runs[i];
		size_t pages = r.pages < budget ? (size_t)r.pages : budget;

		if (madvise((void *)(uintptr_t)r.start, pages * page, MADV_POPULATE_WRITE) == 0)
			budget -= pages;
	}
}

/* Append to runs[*n] the runs of pages in [start, end) that are ours
 * alone, reading pagemap from fd; false once the book is full. */
static bool own_runs(int fd, uint64_t start, uint64_t end, size_t page,
                     struct run *runs, unsigned *n, size_t *pages_left)
{
	uint64_t entries[PM_CHUNK];
	uint64_t first = start / page, last = end / page;

	for (uint64_t at = first; at < last; at += PM_CHUNK) {
		size_t want = last - at < PM_CHUNK ? (size_t)(last - at) : PM_CHUNK;

		if (fd_pread_exact(fd, entries, want * sizeof(*entries), at * sizeof(*entries)) < 0)
			return true;    /* this mapping is unreadable: go on to the next */
		for (size_t k = 0; k < want; k++) {
			uint64_t addr = (at + k) * page;
			struct run *prev = *n ? &runs[*n - 1] : NULL;

			if (!(entries[k] & PM_PRESENT) || !(entries[k] & PM_EXCLUSIVE))
				continue;
			if (!*pages_left)
				return false;
			--*pages_left;
			if (prev && prev->start + prev->pages * page == addr) {
				prev->pages++;
				continue;
			}
			if (*n == PREFAULT_RUNS)
				return false;
			runs[(*n)++] = (struct run){ addr, 1 };
		}
	}
	return true;
}

void prefault_learn(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), pages_left = PREFAULT_MAX_PAGES;
	uint64_t scan_left = PREFAULT_SCAN_ALL;
	unsigned n = 0;
	char line[PATH_MAX + 128];
	FILE *maps;
	int fd;

	if (!book || !learner)
		return;
	learner = false;
	maps = fopen("/proc/self/maps", "re");
	fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	atomic_store(&book->n_runs, 0);
	while (maps && fd >= 0 && fgets(line, sizeof(line), maps)) {
		unsigned long start, end;
		char perms[5];

		if (sscanf(line, "%lx-%lx %4s", &start, &end, perms) != 3 ||
		    strcmp(perms, "rw-p") != 0 || end - start > PREFAULT_SCAN_MAP)
			continue;
		if (end - start > scan_left)
			break;
		scan_left -= end - start;
		if (!own_runs(fd, start, end, page, book->runs, &n, &pages_left))
			break;
	}
	atomic_store(&book->n_runs, n);
	if (fd >= 0)
		close(fd);
	if (maps)
		fclose(maps);
}
