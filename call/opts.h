/*
 * opts.h - parsing what the caller hands us: toolbox specs, numbers, and
 * settings from the environment (the options themselves: options.h).
 * Pure functions: no I/O besides getenv.
 */
#ifndef DOLSOT_OPTS_H
#define DOLSOT_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "options.h"
#include "rlimits.h"
#include "sandbox_cfg.h"
#include "store.h"

#define OPTS_ERR_MAX 512
/* --toolbox options per call: what one request frame can carry. */
#define OPTS_MAX_TOOLBOXES 256

struct toolbox_arg {
	char *module;   /* dotted Python module name */
	char *alias;    /* ASCII identifier, not a keyword */
};

/* A --mount HOST:VIRTUAL[:MODE], both paths absolute and normalized. */
struct mount_arg {
	char *host;
	char *virt;
	enum mount_mode mode;
};

/*
 * Split "MODULE:ALIAS" into *out (both strings malloc'd; free with
 * toolbox_arg_release).  Returns 0, or -1 with the reason in err.
 */
int opts_parse_toolbox(const char *spec, struct toolbox_arg *out, char *err,
                       size_t errlen);
void toolbox_arg_release(struct toolbox_arg *t);

/*
 * Parse "HOST:VIRTUAL[:MODE]" (MODE ro, rw or overlay; ro by default) into
 * *out, with both paths absolute, free of "." and ".." components, and with
 * repeated and trailing slashes removed.  Nothing is checked on disk.
 * Returns 0 (free with mount_arg_release), or -1 with the reason in err.
 */
int opts_parse_mount(const char *spec, struct mount_arg *out, char *err,
                     size_t errlen);
void mount_arg_release(struct mount_arg *m);
const char *mount_mode_name(enum mount_mode m);

/* Check "NAME" or "NAME=VALUE" for --env: NAME is [A-Za-z_][A-Za-z0-9_]*. */
int opts_check_env(const char *spec, char *err, size_t errlen);

/*
 * A limit's value: a whole number > 0, with a K, M or G suffix (powers of
 * 1024) for the size limits.  what names the source in err ("--memory" or
 * "DOLSOT_MEMORY").  Returns 0, or -1 with the reason in err.
 */
int opts_parse_limit(enum limit_kind k, const char *s, const char *what,
                     uint64_t *out, char *err, size_t errlen);

/* True when s is a Python keyword (hard keywords only). */
bool opts_is_keyword(const char *s);

/* A positive, finite number of seconds ("2", "0.5", "1e3").  0 or -1. */
int opts_parse_seconds(const char *s, double *out);

/* A non-negative decimal integer that fits in uint64_t.  0 or -1. */
int opts_parse_count(const char *s, uint64_t *out);

/* A switch: "0" is false, "1" is true, anything else -1. */
int opts_parse_switch(const char *s, bool *out);

/* A non-negative, finite number ("7", "0.5").  0 or -1. */
int opts_parse_nonneg(const char *s, double *out);

/*
 * Fill *s (struct settings, options.h) from the environment and defaults,
 * row by row of options.h's table, keeping fields the caller already set
 * from flags (timeout > 0, sandbox true, a limit > 0, store_spec non-NULL
 * mean set; a store_spec of --store's is checked too).  Returns 0, or -1
 * with a reason naming the variable.
 */
int opts_settings_from_env(struct settings *s, char *err, size_t errlen);

/* Copy s into dst (NUL-terminated, at most dstlen) with bytes outside
 * printable ASCII escaped as \xNN, and cut with "..." past 64 chars. */
void opts_quote(char *dst, size_t dstlen, const char *s);

#endif
