/*
 * check_prefault.c - a spare copies ahead the pages a learning call wrote:
 * real forks, the kernel's own pagemap as the judge.
 */
#include <check.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ck_run.h"
#include "fdio.h"
#include "pagemap.h"
#include "prefault.h"

#define PAGES 64
#define LEARNERS_EVERY 32   /* PREFAULT_LEARN_EVERY */

static size_t page;
static uint8_t *area;       /* PAGES pages, written by the parent first */

/* Whether the page at p is this process's alone. */
static bool own(const void *p)
{
	uint64_t e = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	bool ok = fd >= 0 &&
	          fd_pread_exact(fd, &e, sizeof(e), (uintptr_t)p / page * sizeof(e)) == 0;

	if (fd >= 0)
		close(fd);
	return ok && (e & PM_PRESENT) && (e & PM_EXCLUSIVE);
}

/* Run fn in a child; its exit status. */
static int in_child(int (*fn)(void))
{
	int status = -1;
	pid_t pid = fork();

	if (pid == 0)
		_exit(fn());
	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	return WEXITSTATUS(status);
}

/* The first spare learns: it copies nothing ahead, writes the odd pages
 * as its call, then books what it owns. */
static int learner_writes_odd_pages(void)
{
	prefault_apply();
	for (size_t i = 0; i < PAGES; i++)
		if (own(area + i * page))
			return 1;
	for (size_t i = 1; i < PAGES; i += 2)
		area[i * page] ^= 1;
	prefault_learn();
	return 0;
}

/* A later spare owns the odd pages before writing anything, not the even
 * ones, and finds every byte as the parent left it. */
static int spare_owns_odd_pages(void)
{
	prefault_apply();
	for (size_t i = 0; i < PAGES; i++) {
		if (own(area + i * page) != (i % 2 == 1))
			return 1;
		if (area[i * page] != (uint8_t)i)
			return 2;
	}
	return 0;
}

/* A spare, its turn to learn taken, with nothing booked to copy. */
static int spare_owns_nothing(void)
{
	prefault_apply();
	for (size_t i = 0; i < PAGES; i++)
		if (own(area + i * page))
			return 1;
	return 0;
}

static int forgotten_spare_owns_nothing(void)
{
	prefault_forget();
	return spare_owns_nothing();
}

static void setup(void)
{
	page = (size_t)sysconf(_SC_PAGESIZE);
	area = mmap(NULL, PAGES * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(area, MAP_FAILED);
	for (size_t i = 0; i < PAGES; i++)
		area[i * page] = (uint8_t)i;
	prefault_open();
}

static void teardown(void)
{
	prefault_forget();
	munmap(area, PAGES * page);
}

START_TEST(spare_copies_what_the_learner_wrote)
{
	ck_assert_int_eq(in_child(learner_writes_odd_pages), 0);
	for (int spare = 1; spare < LEARNERS_EVERY; spare++)
		ck_assert_int_eq(in_child(spare_owns_odd_pages), 0);
	/* the next learner copies nothing ahead again */
	ck_assert_int_eq(in_child(learner_writes_odd_pages), 0);
}
END_TEST

START_TEST(an_empty_book_copies_nothing)
{
	prefault_apply();   /* the learner's turn, taken by this process */
	ck_assert_int_eq(in_child(spare_owns_nothing), 0);
}
END_TEST

START_TEST(a_process_without_the_book_copies_nothing)
{
	ck_assert_int_eq(in_child(learner_writes_odd_pages), 0);
	ck_assert_int_eq(in_child(forgotten_spare_owns_nothing), 0);
}
END_TEST

START_TEST(a_new_book_forgets_the_old)
{
	ck_assert_int_eq(in_child(learner_writes_odd_pages), 0);
	prefault_open();    /* as a grown zygote does */
	prefault_apply();
	ck_assert_int_eq(in_child(spare_owns_nothing), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("prefault");
	TCase *tc = tcase_create("prefault");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, spare_copies_what_the_learner_wrote);
	tcase_add_test(tc, an_empty_book_copies_nothing);
	tcase_add_test(tc, a_process_without_the_book_copies_nothing);
	tcase_add_test(tc, a_new_book_forgets_the_old);
	suite_add_tcase(s, tc);
	return ck_run(s);
}
