/*
 * rlimits.h - the per-call resource limits (--memory, --max-procs,
 * --max-file-size, --cpu-seconds, --recursion-limit): their names, how they
 * are shown, and the rlimits that enforce them in the worker.
 *
 * The recursion limit is Python's own (sys.setrecursionlimit, set by
 * worker.py); everything else is a kernel rlimit set here, before Python runs.
 */
#ifndef DOLSOT_RLIMITS_H
#define DOLSOT_RLIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum limit_kind {
	LIMIT_MEMORY,           /* bytes of data (heap, anonymous memory) */
	LIMIT_MAX_PROCS,        /* processes and threads at once, the worker's included */
	LIMIT_MAX_FILE_SIZE,    /* bytes one file may grow to */
	LIMIT_CPU_SECONDS,      /* CPU seconds of the worker process */
	LIMIT_RECURSION,        /* Python frames of the cell */
	LIMIT_COUNT
};

/* Every value is 0 when that limit is not set. */
struct limits {
	uint64_t v[LIMIT_COUNT];
};

/* Smallest --memory: less than this and the interpreter cannot start. */
#define LIMIT_MEMORY_MIN ((uint64_t)32 << 20)

/* The option's name without dashes ("memory", "max-procs", ...). */
const char *limit_name(enum limit_kind k);

/* The kind whose name is name[0..len) (not NUL-terminated): true with *k
 * set, false when no limit has that name. */
bool limit_by_name(const char *name, size_t len, enum limit_kind *k);

/* The variable that sets it ("DOLSOT_MEMORY", ...). */
const char *limit_env(enum limit_kind k);

/* True for the limits given as a SIZE (K, M, G suffixes). */
bool limit_is_size(enum limit_kind k);

/* A SIZE as a user writes it (a limit's, or any other size setting's): a
 * whole number of bytes with an optional K, M or G suffix (powers of 1024,
 * either case), into *out.  0, or -1 when s is not one or does not fit in
 * 64 bits. */
int limit_parse_size(const char *s, uint64_t *out);

/* The value as a user would write it: "64M", "1536K", "20". */
void limit_format(enum limit_kind k, uint64_t v, char *buf, size_t len);

/* "--memory 64M, --cpu-seconds 2": the limits that are set, or "". */
void limits_describe(const struct limits *l, char *buf, size_t len);

/* How --max-procs is enforced, which depends on who counts the processes. */
enum procs_count {
	PROCS_BY_CGROUP,   /* a pids cgroup already holds the worker: no rlimit */
	PROCS_BY_USERNS,   /* a new user namespace: RLIMIT_NPROC counts only its
	                    * processes, the sandbox's outer process among them */
	PROCS_BY_USER,     /* RLIMIT_NPROC counts every process of the real uid */
};

/*
 * Set the rlimits for l in the calling process (inherited by everything it
 * starts): RLIMIT_DATA, RLIMIT_FSIZE (and SIGXFSZ ignored, so a write past
 * it fails with EFBIG), RLIMIT_CPU (soft at the limit, hard a second later)
 * and RLIMIT_NPROC as procs says.  Hard limits equal soft ones, so the cell
 * cannot raise them.  Returns 0, or -1 with a reason in err.
 */
int limits_apply(const struct limits *l, enum procs_count procs, char *err,
                 size_t errlen);

#endif
