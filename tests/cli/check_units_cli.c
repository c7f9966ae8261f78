/*
 * check_units_cli.c - session format v4 (issue 36) through the real
 * binary: a FileStore keeps each unit as DIR/objects/HH/REST, shared by
 * every session, and a call reads the units its cell reaches from there.
 *
 * A unit file damaged, cut short, swapped or gone drops only its names,
 * saying why; a changed head is refused whole (its signature).  --fork
 * shares units, --reset collects them; a cell writes only the units that
 * changed; a version 3 session loads and is saved as version 4; a
 * sandboxed call gets its units packed into its blob; a save that cannot
 * write a unit keeps the previous state; the type gate (mypy, when
 * installed) still knows a held name's type; every store gives the same
 * answers.  Objects are counted and compared by name, inode and mtime.
 *
 * A numpy array's buffer is stored as parts (units of 4 MiB, the last
 * up to twice that), each large unit with a stamp beside it (HEX.ok); a
 * write to one element writes one part again; a damaged or missing part
 * drops only its array; a stamp gone or no longer matching costs a hash,
 * never a value; views of an array two names share keep sharing it.
 *
 * The memory store keeps its units in its server, counted by
 * --server-status: shared by a fork, collected by a reset, one stored per
 * changed value; a head changed there is refused too.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ck_run.h"
#include "cli_check.h"
#include "cli_helpers.h"
#include "redis_helper.h"
#include "store.h"
#include "typegate.h"

#define PY "/usr/bin/python3.11"
#define UNITS_MAX 64

static struct cli_test fx;

/* Units counted here are the cells' own: no earlier state is kept as one
 * (check_history.c has those). */
static void setup(void)
{
	cli_test_begin_usual(&fx);
	cli_test_add_env(&fx, "DOLSOT_HISTORY=0");
}

static void teardown(void)
{
	cli_test_end(&fx);
}

/* ---- the objects directory ---- */

struct unit_files {
	struct cli_unit_file f[UNITS_MAX];
	int n;
};

/* Every unit file of the store's objects directory. */
static void list_units(struct unit_files *u)
{
	u->n = cli_list_units(cli_path(fx.store, "objects"), u->f, UNITS_MAX);
}

static const struct cli_unit_file *find_unit(const struct unit_files *u, const char *hex)
{
	for (int i = 0; i < u->n; i++)
		if (strcmp(u->f[i].hex, hex) == 0)
			return &u->f[i];
	return NULL;
}

/* How many files of b are not in a; the last of them into hex (if any). */
static int units_added(const struct unit_files *a, const struct unit_files *b, char *hex)
{
	int n = 0;

	for (int i = 0; i < b->n; i++)
		if (!find_unit(a, b->f[i].hex)) {
			n++;
			if (hex)
				memcpy(hex, b->f[i].hex, 65);
		}
	return n;
}

/* The path of unit hex in the store. */
static char *unit_path(const char *hex)
{
	static char path[4600];

	snprintf(path, sizeof(path), "%s/objects/%.2s/%s", fx.store, hex, hex + 2);
	return path;
}

/* A cell that must exit 0; its one new unit file into hex. */
static void cell_new_unit(const char *session, const char *code, char *hex)
{
	struct unit_files before, after;

	list_units(&before);
	ok_call(session, code);
	list_units(&after);
	ck_assert_msg(units_added(&before, &after, hex) == 1, "'%s' made %d unit files",
	              code, units_added(&before, &after, NULL));
}

/* One cell, with exactly this exit status, stdout and stderr (NULL: any). */
static void exact(const char *session, const char *code, int status, const char *out,
                  const char *err)
{
	struct cli_run r;

	CLI(&r, "--session", session, code);
	ck_code(&r, status);
	ck_out(&r, out);
	if (err)
		ck_err(&r, err);
	cli_run_release(&r);
}

static void write_bytes(const char *path, const char *b, size_t n)
{
	FILE *f = fopen(path, "wb");

	ck_assert_msg(f && fwrite(b, 1, n, f) == n && fclose(f) == 0, "%s", path);
}

/* ---- damaged units ---- */

enum damage { FLIPPED, TRUNCATED, SWAPPED, DELETED, REPLACED, DAMAGES };

/* t holds a, b and c, each in a unit of its own, whose files go to ha, hb
 * and hc. */
static void seed_three(char *ha, char *hb, char *hc)
{
	/* Each over 4 KiB, a unit of its own (smaller ones stay with the head). */
	cell_new_unit("t", "a = [1] * 5000", ha);
	cell_new_unit("t", "b = 'hello' + '.' * 5000", hb);
	cell_new_unit("t", "c = {'k': 2, 'pad': '.' * 5000}", hc);
}

static void damage_unit(enum damage d, const char *ha, const char *hb)
{
	char *pa = strdup(unit_path(ha)), *pb = strdup(unit_path(hb)), *text, *other;
	size_t n, m;

	text = cli_read_file(pa, &n);
	ck_assert_ptr_nonnull(text);
	switch (d) {
	case FLIPPED:
		text[n / 2] ^= 1;
		write_bytes(pa, text, n);
		break;
	case TRUNCATED:
		write_bytes(pa, text, n / 2);
		break;
	case SWAPPED:
	case REPLACED:
		other = cli_read_file(pb, &m);
		ck_assert_ptr_nonnull(other);
		write_bytes(pa, other, m);
		if (d == SWAPPED)
			write_bytes(pb, text, n);
		free(other);
		break;
	case DELETED:
		ck_assert_int_eq(unlink(pa), 0);
		break;
	default:
		break;
	}
	free(text);
	free(pa);
	free(pb);
}

#define DROPPED "warning: dropped names that could not be loaded: "

/* The reason a dropped name's unit gives: gone, or not what its hash says. */
static void why_dropped(char *buf, size_t len, const char *name, const char *hex, bool gone)
{
	if (gone)
		snprintf(buf, len, "%s (its stored bytes are missing (unit %.12s))", name, hex);
	else
		snprintf(buf, len, "%s (its stored bytes do not match their hash (damaged or "
		         "replaced: unit %.12s))", name, hex);
}

/*
 * A cell reaching every name (globals()) drops only the damaged unit's
 * names, with the reason; the others load, exit 0; the next call holds
 * the rest.
 */
START_TEST(a_damaged_unit_drops_only_its_names)
{
	enum damage d = (enum damage)_i;
	char ha[65], hb[65], hc[65], wa[200], wb[200], want[600];

	seed_three(ha, hb, hc);
	damage_unit(d, ha, hb);
	why_dropped(wa, sizeof(wa), "a", ha, d == DELETED);
	why_dropped(wb, sizeof(wb), "b", hb, false);
	if (d == SWAPPED) {   /* both dropped, in no order of ours */
		struct cli_run r;

		CLI(&r, "--session", "t", "sorted(k for k in globals() if not k.startswith('_'))");
		ck_code(&r, 0);
		ck_out(&r, "['c']\n");
		ck_assert_msg(strncmp(r.err, DROPPED, strlen(DROPPED)) == 0, "%s", r.err);
		ck_err_has(&r, wa);
		ck_err_has(&r, wb);
		ck_assert_msg(strlen(r.err) == strlen(DROPPED) + strlen(wa) + 2 + strlen(wb) +
		              strlen("\nsession now holds: c\n"), "%s", r.err);
		ck_err_has(&r, ")\nsession now holds: c\n");
		cli_run_release(&r);
		exact("t", "c['k']", 0, "2\n", "session now holds: c\n");
		return;
	}
	snprintf(want, sizeof(want), DROPPED "%s\n"
	         "session now holds: b, c\n", wa);
	exact("t", "sorted(k for k in globals() if not k.startswith('_'))", 0, "['b', 'c']\n",
	      want);
	exact("t", "b[:5], c['k']", 0, "('hello', 2)\n", "session now holds: b, c\n");
}
END_TEST

/*
 * A unit file deleted, then a cell that does not reach its name: the name
 * is dropped with "its stored bytes are missing" and the save succeeds
 * (before the fix, the worker kept the unit's ref and every such save was
 * refused: "unit HASH missing").
 */
START_TEST(a_deleted_unit_not_reached_is_dropped_and_the_save_works)
{
	char ha[65], hb[65], hc[65], wa[200], want[600];

	seed_three(ha, hb, hc);
	damage_unit(DELETED, ha, hb);
	why_dropped(wa, sizeof(wa), "a", ha, true);
	snprintf(want, sizeof(want), DROPPED "%s\n"
	         "session now holds: b, c, d\n", wa);
	exact("t", "d = b[:5] + '!'", 0, "", want);
	exact("t", "d", 0, "'hello!'\n", "session now holds: b, c, d\n");
}
END_TEST

/* A flipped byte in the head: its signature refuses the whole session. */
/* t, its head changed, is refused whole: its signature. */
static void ck_t_refused(void)
{
	struct cli_run r;

	CLI(&r, "--session", "t", "b");
	ck_code(&r, 1);
	ck_out(&r, "");
	ck_err_has(&r, "dolsot: session 't' cannot be loaded: its signature does not match");
	ck_err_has(&r, "; run 'dolsot --reset t' to start it afresh\n");
	cli_run_release(&r);
}

START_TEST(a_changed_byte_in_the_head_refuses_the_session)
{
	char ha[65], hb[65], hc[65], *pkl = cli_path(fx.store, "t.pkl"), *text;
	size_t n;

	seed_three(ha, hb, hc);
	text = cli_read_file(pkl, &n);
	ck_assert_ptr_nonnull(text);
	ck_assert(n > 5 && memcmp(text, "DLSS\004", 5) == 0);
	text[n / 3] ^= 0x10;
	write_bytes(pkl, text, n);
	free(text);
	ck_t_refused();
}
END_TEST

/* ---- sharing and collecting ---- */

START_TEST(fork_shares_units_and_reset_collects_them)
{
	struct unit_files before, after;
	char ha[65], hb[65], hc[65];
	struct cli_run r;

	seed_three(ha, hb, hc);
	list_units(&before);
	ck_assert_int_eq(before.n, 3);
	CLI(&r, "--session", "f", "--fork", "t");
	ck_code(&r, 0);
	ck_out(&r, "forked t into f\n");
	cli_run_release(&r);
	list_units(&after);
	ck_assert_int_eq(after.n, before.n);
	ck_assert_int_eq(units_added(&before, &after, NULL), 0);
	CLI(&r, "--reset", "t");
	ck_code(&r, 0);
	cli_run_release(&r);
	list_units(&after);
	ck_assert_int_eq(after.n, 3);
	exact("f", "a[0], b[:5], c['k']", 0, "(1, 'hello', 2)\n",
	      "session now holds: a, b, c\n");
	CLI(&r, "--reset", "f");
	ck_code(&r, 0);
	cli_run_release(&r);
	list_units(&after);
	ck_assert_msg(after.n == 0, "%d unit files left, the first %s", after.n, after.f[0].hex);
	ck_assert(cli_exists(cli_path(fx.store, "objects/.gc")));
}
END_TEST

/* The size of DIR/objects/NAME, -1 when absent. */
static off_t objects_file_size(const char *name)
{
	char path[4600];
	struct stat st;

	snprintf(path, sizeof(path), "%s/objects/%s", fx.store, name);
	return stat(path, &st) == 0 ? st.st_size : -1;
}

/* In a store of PENDING_HEADS_MIN sessions or more, a commit's dropped
 * unit waits in objects/.pending while the last collection is recent; the
 * next collection due takes it with its own. */
START_TEST(a_large_store_collects_dropped_units_in_batches)
{
	char ha[65], hb[65], hc[65], hd[65], path[4600], stamp[4600];
	struct timespec old[2] = { { 0, UTIME_OMIT }, { 0, 0 } };
	size_t len;
	char *head;

	cell_new_unit("s", "b = b'a' * 100_000", ha);
	head = cli_read_file(cli_path(fx.store, "s.pkl"), &len);
	for (int i = 0; i < 300; i++) {   /* copies of the head: they name unit a */
		snprintf(path, sizeof(path), "%s/copy%d.pkl", fx.store, i);
		write_bytes(path, head, len);
	}
	free(head);
	cell_new_unit("s", "b = b'b' * 100_000", hb);   /* collects now: the first */
	ck_assert(cli_exists(unit_path(ha)));
	snprintf(stamp, sizeof(stamp), "%s/objects/.collected", fx.store);
	write_bytes(stamp, "301 10000000\n", 13);      /* read 301 heads in 10 s */
	cell_new_unit("s", "b = b'c' * 100_000", hc);   /* b waits */
	ck_assert(cli_exists(unit_path(hb)));
	ck_assert_int_eq(objects_file_size(".pending"), 40);
	old[1].tv_sec = time(NULL) - 61;
	ck_assert_int_eq(utimensat(AT_FDCWD, stamp, old, 0), 0);
	cell_new_unit("s", "b = b'd' * 100_000", hd);   /* due: b and c go */
	ck_assert(!cli_exists(unit_path(hb)));
	ck_assert(!cli_exists(unit_path(hc)));
	ck_assert(cli_exists(unit_path(ha)));
	ck_assert(cli_exists(unit_path(hd)));
	ck_assert_int_eq(objects_file_size(".pending"), 0);
	exact("s", "b[:2], len(b)", 0, "(b'dd', 100000)\n", "session now holds: b\n");
}
END_TEST

/* A cell changing one of two big values writes one unit; the other's file
 * is never rewritten, whether the cell reaches it or not. */
START_TEST(a_cell_changing_one_of_two_big_values_writes_one_unit)
{
	static const char *const cells[] = { "q.append(-1)", "q.append(len(p))" };
	struct unit_files before, after;
	char hp[65], hq[65], hnew[65];
	const struct cli_unit_file *p0, *p1;

	cell_new_unit("big", "p = list(range(200000))", hp);
	cell_new_unit("big", "q = list(range(200000, 400000))", hq);
	for (size_t i = 0; i < sizeof(cells) / sizeof(*cells); i++) {
		list_units(&before);
		ok_call("big", cells[i]);
		list_units(&after);
		ck_assert_msg(units_added(&before, &after, hnew) == 1, "%s: %d new unit files",
		              cells[i], units_added(&before, &after, NULL));
		ck_assert_msg(!find_unit(&after, hq), "%s: q's old unit was not collected",
		              cells[i]);
		p0 = find_unit(&before, hp);
		p1 = find_unit(&after, hp);
		ck_assert_msg(p0 && p1, "%s: p's unit is gone", cells[i]);
		ck_assert_msg(p0->ino == p1->ino && p0->mtime.tv_sec == p1->mtime.tv_sec &&
		              p0->mtime.tv_nsec == p1->mtime.tv_nsec,
		              "%s: p's unit file was rewritten", cells[i]);
		memcpy(hq, hnew, sizeof(hq));
	}
	ck_state("big", "len(p), q[-2:]", "(200000, [-1, 200000])\n");
}
END_TEST

/* ---- arrays: their buffers in parts ---- */

/* 24,000,000 bytes of float64: parts of 4 MiB, the fifth holding the rest. */
#define ARRAY_SEED "import numpy as np\na = np.arange(3_000_000, dtype=np.float64)"
#define ARRAY_PARTS 5

static bool same_file(const struct cli_unit_file *x, const struct cli_unit_file *y)
{
	return x && y && x->ino == y->ino && x->mtime.tv_sec == y->mtime.tv_sec &&
	       x->mtime.tv_nsec == y->mtime.tv_nsec;
}

/* Each unit of u has its stamp. */
static void ck_stamped(const struct unit_files *u)
{
	for (int i = 0; i < u->n; i++) {
		char stamp[4700];

		snprintf(stamp, sizeof(stamp), "%s.ok", unit_path(u->f[i].hex));
		ck_assert_msg(cli_exists(stamp), "unit %s has no stamp", u->f[i].hex);
	}
}

/* Damage the part part_hex of session's value held by name (hb, another
 * unit's file, for SWAPPED and REPLACED): a cell reaching every name,
 * "sorted(names), " expr, drops name alone, saying why, and prints out;
 * held is the names left. */
static void ck_part_damage_drops(enum damage d, const char *session, const char *part_hex,
                                 const char *hb, const char *name, const char *expr,
                                 const char *out, const char *held)
{
	char why[300], want[800], code[300];

	damage_unit(d, part_hex, hb);
	why_dropped(why, sizeof(why), name, part_hex, d == DELETED);
	snprintf(want, sizeof(want), DROPPED "%s\nsession now holds: %s\n", why, held);
	snprintf(code, sizeof(code), "sorted(k for k in globals() if not k.startswith('_')), %s",
	         expr);
	exact(session, code, 0, out, want);
}

START_TEST(an_arrays_buffer_is_in_parts_and_a_write_rewrites_one)
{
	struct unit_files before, after;
	char hnew[65];

	ok_call("arr", ARRAY_SEED);
	list_units(&before);
	ck_assert_int_eq(before.n, ARRAY_PARTS);   /* the array's own pickle stays with the head */
	ck_stamped(&before);
	ok_call("arr", "a[0] += 1");
	list_units(&after);
	ck_assert_int_eq(units_added(&before, &after, hnew), 1);
	ck_assert_int_eq(after.n, ARRAY_PARTS);    /* the old first part collected */
	for (int i = 0, kept = 0; i < before.n; i++) {
		kept += same_file(&before.f[i], find_unit(&after, before.f[i].hex));
		if (i == before.n - 1)
			ck_assert_msg(kept == ARRAY_PARTS - 1, "%d parts kept as they were", kept);
	}
	ck_stamped(&after);
	/* A cell that does not write to it writes no part. */
	list_units(&before);
	ok_call("arr", "n = float(a[:10].sum())");
	list_units(&after);
	ck_assert_int_eq(units_added(&before, &after, NULL), 0);
	ck_state("arr", "a[:3], a[-1], a.flags.writeable, n, float(a.sum())",
	         "(array([1., 1., 2.]), 2999999.0, True, 46.0, 4499998500001.0)\n");
}
END_TEST

/* A part damaged, or gone, drops the array that holds it and nothing else;
 * a part whose stamp is gone or no longer matches is hashed, and loads. */
START_TEST(a_damaged_part_drops_only_its_array)
{
	struct unit_files parts;
	char hb[65], stamp[4700];
	enum damage d = (enum damage)_i;

	ok_call("arr", ARRAY_SEED);
	list_units(&parts);
	ck_assert_int_eq(parts.n, ARRAY_PARTS);
	cell_new_unit("arr", "b = np.ones(200_000)", hb);
	/* Stamps gone, or out of date (chmod moves the change time): hashed. */
	snprintf(stamp, sizeof(stamp), "%s.ok", unit_path(parts.f[0].hex));
	ck_assert_int_eq(unlink(stamp), 0);
	ck_assert_int_eq(chmod(unit_path(parts.f[1].hex), 0600), 0);
	ck_state("arr", "float(a.sum()), float(b.sum())", "(4499998500000.0, 200000.0)\n");
	ck_part_damage_drops(d, "arr", parts.f[2].hex, hb, "a", "float(b.sum())",
	                     "(['b', 'np'], 200000.0)\n", "b, np");
}
END_TEST

/* A part deleted or cut short under an array no cell reaches is found by
 * the next call all the same (its parts are looked at, not read), which
 * drops the array with the reason and saves the rest. */
START_TEST(a_damaged_part_of_an_array_not_reached_is_found)
{
	struct unit_files parts;
	char hb[65], why[300], want[800];
	enum damage d = (enum damage)_i;

	ok_call("arr", ARRAY_SEED);
	list_units(&parts);
	cell_new_unit("arr", "b = np.ones(200_000)", hb);
	damage_unit(d, parts.f[parts.n - 1].hex, hb);
	why_dropped(why, sizeof(why), "a", parts.f[parts.n - 1].hex, d == DELETED);
	snprintf(want, sizeof(want), DROPPED "%s\nsession now holds: b, np\n", why);
	exact("arr", "float(b.sum())", 0, "200000.0\n", want);
	exact("arr", "float(b.sum())", 0, "200000.0\n", "session now holds: b, np\n");
}
END_TEST

/* Views of an array that two names share stay views of it: a write
 * through one is seen through the others in later calls, as within one. */
START_TEST(views_of_a_shared_array_keep_sharing_it)
{
	ok_call("v", "import numpy as np\n"
	        "x = np.arange(16.).reshape(4, 4)\nx2 = x[:2, :2]\ny = x.T\n"
	        "big = np.zeros(300_000)\nbv = big[10:20]\n"
	        "ro = np.arange(5.)\nro.flags.writeable = False\nrov = ro[1:]\n"
	        "alone = np.arange(10.)[::2]");
	ok_call("v", "x2[0, 0] = 100\ny[3, 3] = -1\nbv[0] = 5");
	ck_state("v", "x[0, 0], x[3, 3], big[10], np.shares_memory(x, y), "
	         "np.shares_memory(big, bv), rov.flags.writeable, alone",
	         "(100.0, -1.0, 5.0, True, True, False, array([0., 2., 4., 6., 8.]))\n");
}
END_TEST

/* Two DataFrames are two units: what their pickles share is their
 * class's (pandas' _metadata list), which does not tie them; a frame and
 * a Series sharing its index are one. */
START_TEST(two_dataframes_are_two_units_and_shared_index_one)
{
	struct unit_files u;

	ok_call("pd", "import pandas as pd\na = pd.DataFrame({'x': range(3000)})\n"
	        "b = pd.DataFrame({'y': range(3000)})");
	list_units(&u);
	ck_assert_int_eq(u.n, 2);
	ok_call("pd", "c = a.x * 2");
	list_units(&u);
	ck_assert_int_eq(u.n, 2);   /* a and c one unit now, b as it was */
	ck_state("pd", "c.index is a.index, int(b.y.sum())", "(True, 4498500)\n");
}
END_TEST

/* ---- large bytes values: parts, mapped back ---- */

/* 10,240,000 bytes: a part of 4 MiB and the rest (under 8 MiB). */
#define BYTES_SEED "import hashlib\nblob = bytes(range(256)) * 40_000"
#define BYTES_PARTS 2
#define BYTES_STATE "hashlib.sha256(blob).hexdigest()[:16], len(blob), blob[:3], blob[-1], " \
	"hash(blob) == hash(bytes(bytearray(blob))), type(blob) is bytes"
#define BYTES_WANT "('19d6d9faf9ce166a', 10240000, b'\\x00\\x01\\x02', 255, True, True)\n"

/* Whether the cell's process maps a unit file (/proc/self/maps names it). */
#define MAPS_UNITS "any('/objects/' in l for l in open('/proc/self/maps'))"

START_TEST(a_large_bytes_value_is_in_parts_and_maps_back)
{
	struct unit_files before, after;

	ok_call("by", BYTES_SEED);
	list_units(&before);
	ck_assert_int_eq(before.n, BYTES_PARTS);  /* its own pickle stays with the head */
	ck_stamped(&before);
	ck_state("by", BYTES_STATE ", " MAPS_UNITS, "('19d6d9faf9ce166a', 10240000, "
	         "b'\\x00\\x01\\x02', 255, True, True, True)\n");
	/* Read: no part written again. */
	ok_call("by", "n = blob.count(b'\\xff')");
	list_units(&after);
	ck_assert_int_eq(units_added(&before, &after, NULL), 0);
	/* Held by a second name and a tuple: still one object in the next
	 * call (the three are one unit then, the value inline). */
	ok_call("by", "b2 = blob\nt = (blob, 1)");
	ck_state("by", "b2 is blob, t[0] is blob, n", "(True, True, 40000)\n");
	ok_call("by", "del b2, t\nblob = blob[:5] + blob[5:]");
	ck_state("by", BYTES_STATE, BYTES_WANT);
}
END_TEST

/* A part damaged or gone drops the value that holds it and nothing else. */
START_TEST(a_damaged_part_drops_only_its_bytes)
{
	struct unit_files parts;
	char hb[65];
	enum damage d = (enum damage)_i;

	ok_call("by", BYTES_SEED);
	list_units(&parts);
	ck_assert_int_eq(parts.n, BYTES_PARTS);
	cell_new_unit("by", "b = b'k' * 5000", hb);
	ck_part_damage_drops(d, "by", parts.f[0].hex, hb, "blob", "len(b)",
	                     "(['b', 'hashlib'], 5000)\n", "b, hashlib");
}
END_TEST

/* A live process maps the value once; deleted, its mapping goes. */
START_TEST(a_live_process_unmaps_the_bytes_a_cell_deleted)
{
	struct cli_run r;

	cli_test_add_env(&fx, "DOLSOT_SERVER=auto");
	ok_call("lb", BYTES_SEED);
	CLI(&r, "--live", "--session", "lb", BYTES_STATE ", " MAPS_UNITS);
	ck_code(&r, 0);
	ck_out(&r, "('19d6d9faf9ce166a', 10240000, b'\\x00\\x01\\x02', 255, True, True, True)\n");
	cli_run_release(&r);
	CLI(&r, "--live", "--session", "lb", "del blob");
	ck_code(&r, 0);
	cli_run_release(&r);
	CLI(&r, "--live", "--session", "lb", MAPS_UNITS);
	ck_code(&r, 0);
	ck_out(&r, "False\n");
	cli_run_release(&r);
}
END_TEST

/* ---- the memory store: its units in the server ---- */

/* The memory store for the rest of the test (its server starts with the
 * first call). */
static void use_memory(void)
{
	cli_test_add_env(&fx, "DOLSOT_STORE=memory");
	cli_test_add_env(&fx, "DOLSOT_SERVER=auto");
}

/* The units the memory store's server holds, and has stored since it
 * started (--server-status). */
static void mem_units(unsigned *held, unsigned *stored)
{
	struct cli_run r;
	const char *line;

	CLI(&r, "--server-status");
	ck_code(&r, 0);
	line = strstr(r.out, "\nunits in memory ");
	ck_assert_msg(line && sscanf(line, "\nunits in memory %u (%u stored", held, stored) == 2,
	              "%s", r.out);
	cli_run_release(&r);
}

static void ck_mem_units(unsigned held, unsigned stored)
{
	unsigned h, st;

	mem_units(&h, &st);
	ck_assert_msg(h == held && st == stored, "units in memory %u (%u stored), not %u (%u)",
	              h, st, held, stored);
}

/* t holds a, b and c, each in a unit of its own. */
static void seed_three_in_memory(void)
{
	use_memory();
	ok_call("t", "a = [1] * 5000");
	ok_call("t", "b = 'hello' + '.' * 5000");
	ok_call("t", "c = {'k': 2, 'pad': '.' * 5000}");
	ck_mem_units(3, 3);
}

START_TEST(memory_fork_shares_units_and_reset_collects_them)
{
	struct cli_run r;

	seed_three_in_memory();
	CLI(&r, "--session", "f", "--fork", "t");
	ck_code(&r, 0);
	ck_out(&r, "forked t into f\n");
	cli_run_release(&r);
	ck_mem_units(3, 3);
	CLI(&r, "--reset", "t");
	ck_code(&r, 0);
	cli_run_release(&r);
	ck_mem_units(3, 3);
	exact("f", "a[0], b[:5], c['k']", 0, "(1, 'hello', 2)\n",
	      "session now holds: a, b, c\n");
	CLI(&r, "--reset", "f");
	ck_code(&r, 0);
	cli_run_release(&r);
	ck_mem_units(0, 3);
}
END_TEST

/* A cell changing one of two big values stores one unit, and the
 * server drops the value's old one; the other is never sent again. */
START_TEST(memory_a_cell_changing_one_of_two_big_values_stores_one_unit)
{
	static const char *const cells[] = { "q.append(-1)", "q.append(len(p))" };

	use_memory();
	ok_call("big", "p = list(range(200000))");
	ok_call("big", "q = list(range(200000, 400000))");
	ck_mem_units(2, 2);
	for (unsigned i = 0; i < sizeof(cells) / sizeof(*cells); i++) {
		ok_call("big", cells[i]);
		ck_mem_units(2, 3 + i);
	}
	ck_state("big", "len(p), q[-2:]", "(200000, [-1, 200000])\n");
}
END_TEST

/* A byte of t's head changed where the server keeps it, under its lock
 * as a client of the store could: the signature refuses it. */
START_TEST(memory_a_changed_byte_in_the_head_refuses_the_session)
{
	char err[512];
	struct store *st;
	struct store_lock lk;
	struct store_mark mark = { false, 0 };
	uint8_t *blob;
	size_t n;
	bool found;

	seed_three_in_memory();
	st = store_open(STORE_KIND_MEMORY, NULL, fx.store, 0, 5, err, sizeof(err));
	ck_assert_msg(st != NULL, "%s", err);
	ck_assert_int_eq(st->ops->lock(st, "t", 5000, &lk, err, sizeof(err)), STORE_LOCKED);
	ck_assert_msg(st->ops->load(st, "t", &blob, &n, &found, err, sizeof(err)) == 0 && found,
	              "%s", err);
	ck_assert(n > 5 && memcmp(blob, "DLSS\004", 5) == 0);
	ck_assert_msg(n < 4 * 5000, "the server keeps %zu bytes for t: not its head only", n);
	blob[n / 3] ^= 0x10;
	ck_assert_msg(st->ops->save(st, "t", blob, n, &mark, err, sizeof(err)) == 0, "%s", err);
	st->ops->unlock(st, &lk);
	store_close(st);
	free(blob);
	ck_t_refused();
}
END_TEST

/* ---- an older session ---- */

/* A version 3 session of a = [1, 2], b = 'three', put in the store signed. */
static void put_v3_session(const char *id)
{
	char cmd[9000], *path = cli_path(fx.tmp, "v3.blob"), *blob;
	size_t n;

	snprintf(cmd, sizeof(cmd), PY " -c '"
	         "import _pickle, sys\n"
	         "a = _pickle.dumps([1, 2], protocol=5)\n"
	         "b = _pickle.dumps(\"three\", protocol=5)\n"
	         "big = _pickle.dumps(bytes(5000), protocol=5)\n"
	         "index = _pickle.dumps({\"units\": [((\"a\",), len(a)), ((\"b\",), len(b)),"
	         " ((\"big\",), len(big))], \"carry\": [], \"count\": 4}, protocol=5)\n"
	         "open(sys.argv[1], \"wb\").write(b\"DLSS\\x03\" + len(index).to_bytes(8, "
	         "\"little\") + index + (0).to_bytes(4, \"little\") + a + b + big)\n' '%s'", path);
	ck_assert_int_eq(system(cmd), 0);
	blob = cli_read_file(path, &n);
	ck_assert_ptr_nonnull(blob);
	cli_put_session(fx.store, id, blob, n);
	free(blob);
}

START_TEST(a_version3_session_loads_and_is_saved_as_version4)
{
	struct unit_files u;
	char *text;
	size_t n;

	ok_call("first", "1");   /* makes the store */
	put_v3_session("old");
	exact("old", "a.append(3)\na, b", 0, "([1, 2, 3], 'three')\n",
	      "session now holds: a, b, big\n");
	text = cli_read_session(fx.store, "old", &n);
	ck_assert_ptr_nonnull(text);
	ck_assert_msg(n > 5 && memcmp(text, "DLSS\004", 5) == 0, "magic %02x",
	              n > 4 ? (unsigned char)text[4] : 0);
	free(text);
	list_units(&u);
	ck_assert_msg(u.n == 1, "%d unit files", u.n);   /* big; a and b stay with the head */
	exact("old", "a, b", 0, "([1, 2, 3], 'three')\n", "session now holds: a, b, big\n");
}
END_TEST

/* ---- a sandboxed call ---- */

START_TEST(a_sandboxed_call_reads_its_units_from_the_blob)
{
	struct unit_files before, after;
	char ha[65], hb[65], hc[65];
	struct cli_run r;

	if (!cli_userns_probe(false)) {
		printf("SKIP: %s: user namespaces are not available here\n", __func__);
		return;
	}
	seed_three(ha, hb, hc);
	list_units(&before);
	CLI(&r, "--session", "t", "--sandbox", "a.append(2)\nlen(a), b[:5], c['k']");
	ck_code(&r, 0);
	ck_out(&r, "(5001, 'hello', 2)\n");
	ck_err(&r, "session now holds: a, b, c\n");
	cli_run_release(&r);
	list_units(&after);
	ck_assert_int_eq(units_added(&before, &after, NULL), 1);
	CLI(&r, "--session", "t", "--sandbox", "a[-1], b[:5]");
	ck_code(&r, 0);
	ck_out(&r, "(2, 'hello')\n");
	cli_run_release(&r);
}
END_TEST

/* ---- a save that cannot write ---- */

/* The session file's bytes, which a failed save must leave as they were. */
static char *session_bytes(const char *id, size_t *n)
{
	char *text = cli_read_file(cli_path(fx.store, "d.pkl"), n);

	(void)id;
	ck_assert_ptr_nonnull(text);
	return text;
}

static void ck_unchanged(const char *before, size_t n)
{
	size_t m;
	char *after = session_bytes("d", &m);

	ck_assert_msg(m == n && memcmp(before, after, n) == 0, "the session file changed");
	free(after);
}

/*
 * RLIMIT_FSIZE below the new unit's size, SIGXFSZ ignored, for the
 * dolsot process (and, cold, the worker it starts): the save fails (cold:
 * the worker writing its blob; warm: the client writing the unit), exit
 * 1 saying why, and the previous state loads intact.
 */
START_TEST(a_file_size_limit_on_the_save_keeps_the_old_state)
{
	static const char *const wrapper[] = {
		"/bin/sh", "-c", "trap '' XFSZ; ulimit -S -f 1024 && exec \"$@\"", "sh", NULL };
	struct unit_files before, after;
	struct cli_run r;
	char *old;
	size_t n;

	ok_call("d", "x = 1\nkeep = [7] * 100");
	old = session_bytes("d", &n);
	list_units(&before);
	cli_run(&r, &(struct cli_opts){ .env = fx.env, .wrapper = wrapper },
	        (const char *const[]){ "dolsot", "--session", "d",
	                               "x = 2\nbig = b'b' * 3000000", NULL });
	ck_code(&r, 1);
	ck_assert_msg(cli_has(r.err, "File size limit exceeded") || cli_has(r.err, "File too large"),
	              "stderr names no file size failure:\n%s", r.err);
	cli_run_release(&r);
	ck_unchanged(old, n);
	list_units(&after);
	ck_assert_int_eq(units_added(&before, &after, NULL), 0);
	exact("d", "x, len(keep), 'big' in globals()", 0, "(1, 100, False)\n",
	      "session now holds: keep, x\n");
	free(old);
}
END_TEST

/*
 * A full disk at the unit's write: the store on a 2 MB tmpfs, the worker
 * writing its blob into a memfd (--max-file-size), so the client's write
 * of the 3 MB unit is what fails.
 */
START_TEST(a_full_disk_at_the_units_write_keeps_the_old_state)
{
	char mnt[4300], err[4096], *old;
	struct cli_run r;
	size_t n;

	snprintf(mnt, sizeof(mnt), "%s/full", fx.tmp);
	if (!cli_test_tmpfs(mnt, "size=2m,mode=0700"))
		return;
	CLI(&r, "--server-stop");   /* the fixture's store: this case uses its own */
	cli_run_release(&r);
	snprintf(fx.store, sizeof(fx.store), "%s/store", mnt);
	snprintf(fx.store_env, sizeof(fx.store_env), "DOLSOT_CACHE_DIR=%s", fx.store);
	ck_assert_msg(cli_test_warm(&fx, err, sizeof(err)) == 0, "--server-start: %s", err);
	ok_call("d", "x = 1\nkeep = [7] * 100");
	old = session_bytes("d", &n);
	CLI(&r, "--max-file-size", "100M", "--session", "d",
	    "x = 2\nbig = b'b' * 3000000\nprint('ran')");
	ck_code(&r, 1);
	ck_out(&r, "ran\n");
	ck_err_has(&r, "warning: session 'd' not saved: cannot save session 'd': cannot write "
	           "unit ");
	ck_err_has(&r, ": No space left on device; the previous session is kept\n");
	cli_run_release(&r);
	ck_unchanged(old, n);
	exact("d", "x, len(keep), 'big' in globals()", 0, "(1, 100, False)\n",
	      "session now holds: keep, x\n");
	free(old);
}
END_TEST

/* ---- the type gate ---- */

/* A held name the cell passes to a toolbox keeps its type for the gate
 * (mypy) on a call that loads only what its cell reaches. */
START_TEST(the_type_gate_sees_a_held_names_type_on_a_lazy_call)
{
	char *mypy = typegate_which("mypy"), tb_dir[4400], tb_path[4500], bin[4500];
	const char *extra[] = { tb_path, bin, "DOLSOT_TYPECHECK=1", NULL };
	struct cli_run r;

	if (!mypy) {
		printf("SKIP: %s: mypy is not on PATH (apt-get install mypy)\n", __func__);
		return;
	}
	snprintf(tb_dir, sizeof(tb_dir), "%s/tb", fx.tmp);
	ck_assert_int_eq(mkdir(tb_dir, 0755), 0);
	cli_write_file(cli_path(tb_dir, "unitstb.py"), "def add(a: int, b: int) -> int:\n"
	               "    \"\"\"Add.\"\"\"\n    return a + b\n");
	snprintf(tb_path, sizeof(tb_path), "PYTHONPATH=%s", tb_dir);
	snprintf(bin, sizeof(bin), "DOLSOT_TY_BIN=%s", mypy);
	free(mypy);
	ok_call("g", "name = 'orders'\nn = 3\nother = [1] * 10\nbig = bytes(100000)");
	RUN_IN(&r, fx.tmp, extra, "--toolbox", "unitstb:tb", "--session", "g", "tb.add(name, 1)");
	ck_code(&r, 1);
	ck_out(&r, "");
	ck_err_has(&r, "TypeCheckError: ");
	ck_err_has(&r, "line 1: Argument 1 to \"add\" has incompatible type \"str\"; expected "
	           "\"int\"");
	cli_run_release(&r);
	RUN_IN(&r, fx.tmp, extra, "--toolbox", "unitstb:tb", "--session", "g", "tb.add(n, 1)");
	ck_code(&r, 0);
	ck_out(&r, "4\n");
	ck_err(&r, "session now holds: big, n, name, other\n");
	cli_run_release(&r);
}
END_TEST

/* ---- every store ---- */

struct store_case {
	const char *name;
	const char *const *env;
};

static char redis_store[4600], cmd_store[9000];
static const char *const file_env[] = { "DOLSOT_STORE=file", NULL };
static const char *const memory_env[] = { "DOLSOT_STORE=memory", "DOLSOT_SERVER=auto", NULL };
static const char *const redis_env[] = { redis_store, NULL };
static const char *const cmd_env[] = { cmd_store, NULL };
static const struct store_case stores[] = {
	{ "file", file_env }, { "memory", memory_env }, { "redis", redis_env },
	{ "cmd", cmd_env },
};
#define NSTORES ((int)(sizeof(stores) / sizeof(*stores)))

/* The cells every store runs, in one session. */
static const char *const store_cells[] = {
	"a = [1] * 5\nb = 'text'\nc = {'k': a}\nbig = bytes(range(256)) * 4000",
	"a.append(2)\nlen(c['k']), b",
	"b = b.upper()\nlen(big), big[:3]\nhuge = bytes(range(256)) * 5000",
	"len(huge), huge[-3:], huge.count(b'a')",
	"del c\nd = a[:2]\nd",
	"undefined_name + 1",
	"raise ValueError('no')",
	"import numpy as np\nm = np.arange(1_500_000.)\nmv = m[:4]\nm2 = m",
	"mv[0] = -1\nm[-1] = 7\nfloat(m.sum()), m[:2], m2 is m, mv.base is not None",
	"sorted(k for k in globals() if not k.startswith('_')), a, b, d, float(m2[:2].sum())",
};
#define NCELLS (sizeof(store_cells) / sizeof(*store_cells))

START_TEST(every_store_gives_the_same_answers)
{
	struct redis_test rd = { .pid = -1 };
	struct cli_run want[NCELLS];
	char cwd[4096];

	redis_test_start_in(&rd, fx.tmp, NULL, NULL);
	snprintf(redis_store, sizeof(redis_store), "DOLSOT_STORE=%s", rd.url);
	snprintf(cmd_store, sizeof(cmd_store), "DOLSOT_STORE=cmd:%s/examples/dolsot-store-dir "
	         "%s/helper-store", getcwd(cwd, sizeof(cwd)), fx.tmp);
	cli_test_add_env(&fx, "DOLSOT_STORE");
	for (int s = 0; s < NSTORES; s++)
		for (size_t i = 0; i < NCELLS; i++) {
			struct cli_run r;

			cli_test_run(&fx, &r, fx.tmp, stores[s].env, (const char *const[]){
				"dolsot", "--session", "same", store_cells[i], NULL });
			if (s == 0) {
				want[i] = r;
				continue;
			}
			ck_assert_msg(r.code == want[i].code && strcmp(r.out, want[i].out) == 0 &&
			              strcmp(r.err, want[i].err) == 0,
			              "%s, cell %zu: exit %d, stdout:\n%s\nstderr:\n%s\nfile: exit %d, "
			              "stdout:\n%s\nstderr:\n%s", stores[s].name, i, r.code, r.out,
			              r.err, want[i].code, want[i].out, want[i].err);
			cli_run_release(&r);
		}
	ck_assert_str_eq(want[NCELLS - 1].out, "(['a', 'b', 'big', 'd', 'huge', 'm', 'm2', 'mv', 'np'], "
	                 "[1, 1, 1, 1, 1, 2], 'TEXT', [1, 1], 0.0)\n");
	for (size_t i = 0; i < NCELLS; i++)
		cli_run_release(&want[i]);
	redis_test_stop(&rd);
}
END_TEST

static Suite *units_cli_suite(void)
{
	Suite *s = suite_create("units_cli");
	TCase *units = tcase_create("units");
	TCase *saves = tcase_create("saves");
	TCase *stores_tc = tcase_create("stores");
	TCase *arrays = tcase_create("arrays");

	tcase_add_checked_fixture(arrays, setup, teardown);
	tcase_set_timeout(arrays, 120);
	tcase_add_checked_fixture(units, setup, teardown);
	tcase_add_checked_fixture(saves, setup, teardown);
	tcase_add_checked_fixture(stores_tc, setup, teardown);
	tcase_set_timeout(units, 120);
	tcase_set_timeout(saves, 120);
	tcase_set_timeout(stores_tc, 300);
	tcase_add_loop_test(units, a_damaged_unit_drops_only_its_names, 0, DAMAGES);
	tcase_add_test(units, a_deleted_unit_not_reached_is_dropped_and_the_save_works);
	tcase_add_test(units, a_changed_byte_in_the_head_refuses_the_session);
	tcase_add_test(units, fork_shares_units_and_reset_collects_them);
	tcase_add_test(units, a_large_store_collects_dropped_units_in_batches);
	tcase_add_test(units, a_cell_changing_one_of_two_big_values_writes_one_unit);
	tcase_add_test(units, a_version3_session_loads_and_is_saved_as_version4);
	tcase_add_test(units, a_sandboxed_call_reads_its_units_from_the_blob);
	tcase_add_test(units, the_type_gate_sees_a_held_names_type_on_a_lazy_call);
	tcase_add_test(units, memory_fork_shares_units_and_reset_collects_them);
	tcase_add_test(units, memory_a_cell_changing_one_of_two_big_values_stores_one_unit);
	tcase_add_test(units, memory_a_changed_byte_in_the_head_refuses_the_session);
	tcase_add_test(saves, a_file_size_limit_on_the_save_keeps_the_old_state);
	tcase_add_test(saves, a_full_disk_at_the_units_write_keeps_the_old_state);
	tcase_add_test(stores_tc, every_store_gives_the_same_answers);
	tcase_add_test(arrays, an_arrays_buffer_is_in_parts_and_a_write_rewrites_one);
	tcase_add_loop_test(arrays, a_damaged_part_drops_only_its_array, FLIPPED, SWAPPED);
	tcase_add_loop_test(arrays, a_damaged_part_drops_only_its_array, DELETED, DAMAGES);
	tcase_add_loop_test(arrays, a_damaged_part_of_an_array_not_reached_is_found, TRUNCATED,
	                    TRUNCATED + 1);
	tcase_add_loop_test(arrays, a_damaged_part_of_an_array_not_reached_is_found, DELETED,
	                    DELETED + 1);
	tcase_add_test(arrays, views_of_a_shared_array_keep_sharing_it);
	tcase_add_test(arrays, a_large_bytes_value_is_in_parts_and_maps_back);
	tcase_add_test(arrays, two_dataframes_are_two_units_and_shared_index_one);
	tcase_add_loop_test(arrays, a_damaged_part_drops_only_its_bytes, FLIPPED, SWAPPED);
	tcase_add_loop_test(arrays, a_damaged_part_drops_only_its_bytes, DELETED, DAMAGES);
	tcase_add_test(arrays, a_live_process_unmaps_the_bytes_a_cell_deleted);
	suite_add_tcase(s, arrays);
	suite_add_tcase(s, units);
	suite_add_tcase(s, saves);
	suite_add_tcase(s, stores_tc);
	return s;
}

int main(void)
{
	return ck_run(units_cli_suite());
}
