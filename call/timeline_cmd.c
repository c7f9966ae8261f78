/*
 * timeline_cmd.c - --history, --undo and --checkout from the client's
 * side (timeline_cmd.h).
 */
#include "timeline_cmd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "repl.h"

/* The store opened and id locked, by its name there (stored, STORE_ID_MAX
 * + 1 bytes: store_ns_name); *st NULL on failure (err said). */
static int open_locked(const struct settings *s, const char *id, char *stored,
                       struct store **st, struct store_lock *lk, char *err, size_t errlen)
{
	int self;

	*st = NULL;
	if (store_ns_name(s->ns, id, stored, err, errlen) < 0)
		return -1;
	*st = repl_open_store(s, err, errlen);
	if (!*st)
		return -1;
	if (repl_lock(s, *st, stored, lk, err, errlen) < 0) {
		store_ns_unname(err, errlen, s->ns);
		store_close(*st);
		*st = NULL;
		return -1;
	}
	/* No cell runs: the work is this process's own, and a store whose
	 * locks outlive their holder (Redis's) lets go once it is dead. */
	self = (int)syscall(SYS_pidfd_open, getpid(), 0);
	if (self >= 0) {
		store_lock_watch(*st, lk, self);
		close(self);
	}
	return 0;
}

static void close_locked(struct store *st, struct store_lock *lk)
{
	store_unlock(st, lk);
	store_close(st);
}

int timeline_cmd_list(const struct settings *s, const char *id, struct timeline_state **v,
                      size_t *n, char *err, size_t errlen)
{
	char stored[STORE_ID_MAX + 1];
	struct store *st;
	struct store_lock lk;
	bool found;
	int ret;

	if (open_locked(s, id, stored, &st, &lk, err, errlen) < 0)
		return -1;
	ret = timeline_list(st, stored, v, n, &found, err, errlen);
	close_locked(st, &lk);
	if (ret < 0)
		store_ns_unname(err, errlen, s->ns);
	if (ret == 0 && !found) {
		snprintf(err, errlen, "session '%s' does not exist", id);
		return -1;
	}
	return ret;
}

int timeline_cmd_move(const struct settings *s, const char *id, uint64_t target,
                      struct timeline_move *mv, char *err, size_t errlen)
{
	char stored[STORE_ID_MAX + 1];
	struct store *st;
	struct store_lock lk;
	int ret;

	if (open_locked(s, id, stored, &st, &lk, err, errlen) < 0)
		return -1;
	ret = timeline_move(st, stored, target, stored, target ? HISTREC_CHECKOUT : HISTREC_UNDO,
	                    false, mv, err, errlen);
	close_locked(st, &lk);
	if (ret < 0)
		store_ns_unname(err, errlen, s->ns);
	return ret;
}

int timeline_parse_ref(const char *ref, char *id, uint64_t *n, char *err, size_t errlen)
{
	const char *at = strrchr(ref, '@');
	unsigned long long v;
	char *end;

	if (!at || (size_t)(at - ref) > STORE_ID_MAX || at == ref) {
		snprintf(err, errlen, "'%s': expected ID@N, a session and one of its state "
		         "numbers (see --history ID)", ref);
		return -1;
	}
	memcpy(id, ref, (size_t)(at - ref));
	id[at - ref] = '\0';
	errno = 0;
	v = strtoull(at + 1, &end, 10);
	if (at[1] < '0' || at[1] > '9' || *end || errno || v == 0) {
		snprintf(err, errlen, "'%s': the state after '@' is a number from 1 (see "
		         "--history %s)", ref, id);
		return -1;
	}
	*n = v;
	return store_part_valid(id, "session id", STORE_ID_MAX, err, errlen) ? 0 : -1;
}
