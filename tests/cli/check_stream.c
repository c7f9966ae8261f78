/*
 * check_stream.c - output sized for a model, and streamed (issue 38, item
 * 3), through the real binary: --json-stream's chunk lines arrive while the
 * cell runs (the cell prints, flushes and then waits on a FIFO that the
 * test opens only once the first chunk has come), cold or warm as the
 * runner says, --live and --sandbox; what the chunks carry is what the
 * final object (--json's) says; a flood is thinned, never the result; a
 * cut stream keeps its head and its tail.
 */
#include <check.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <errno.h>

#include "ck_run.h"
#include "cli_check.h"
#include "cli_helpers.h"

/* While the cell is not reading its FIFO yet, opening it is retried this
 * often (µs), for at most RELEASE_WAIT seconds. */
#define RELEASE_POLL_US 20000
#define RELEASE_WAIT 60.0

static struct cli_test fx;

static void setup(void)
{
	cli_test_begin_usual(&fx);
}

/* --live needs the server, whichever way the suite runs. */
static void setup_server(void)
{
	cli_test_begin_server(&fx);
}

static void teardown(void)
{
	cli_test_end(&fx);
}

/* One JSON line the shipped schema accepts. */
static void ck_schema(const char *line)
{
	char schema[4200];
	struct cli_run v;
	char *cwd = getcwd(NULL, 0);

	snprintf(schema, sizeof(schema), "%s/schema/result.schema.json", cwd);
	cli_run(&v, &(struct cli_opts){ .prog = "/usr/bin/python3", .stdin_data = line },
	        (const char *const[]){ "python3", "tests/lib/validate_json.py", schema, NULL });
	ck_assert_msg(v.code == 0, "schema rejects the line:\n%s\nline: %s", v.err, line);
	cli_run_release(&v);
	free(cwd);
}

/* What a --json-stream call printed: its chunks per stream, joined, and
 * its last line, the result. */
struct streamed {
	char *text[2];          /* stdout's chunks, stderr's */
	size_t len[2];
	unsigned long long dropped[2];
	json_t *result;
	int chunks;
};

static void streamed_release(struct streamed *s)
{
	free(s->text[0]);
	free(s->text[1]);
	json_decref(s->result);
}

/* Take one line: a chunk (in seq order) or the result, which must be last. */
static void take_line(struct streamed *s, const char *line)
{
	json_error_t e;
	json_t *o = json_loads(line, 0, &e);
	const char *stream;
	int which;

	ck_assert_msg(o != NULL, "not JSON (%s): %s", e.text, line);
	ck_assert_msg(s->result == NULL, "a line after the result: %s", line);
	if (json_object_get(o, "status")) {
		s->result = o;
		return;
	}
	stream = json_string_value(json_object_get(o, "stream"));
	ck_assert_msg(stream && json_integer_value(json_object_get(o, "seq")) == s->chunks + 1,
	              "chunk out of order: %s", line);
	which = strcmp(stream, "stderr") == 0;
	s->chunks++;
	s->dropped[which] += (unsigned long long)json_integer_value(json_object_get(o, "dropped"));
	{
		const char *t = json_string_value(json_object_get(o, "text"));
		size_t n = json_string_length(json_object_get(o, "text"));

		s->text[which] = realloc(s->text[which], s->len[which] + n + 1);
		memcpy(s->text[which] + s->len[which], t, n);
		s->len[which] += n;
		s->text[which][s->len[which]] = '\0';
	}
	json_decref(o);
}

/* Read f to its end into s, each line checked against the schema when
 * check is set; returns the process's exit code. */
static int read_rest(FILE *f, pid_t pid, struct streamed *s, bool check)
{
	char *line = NULL;
	size_t cap = 0;
	int st;

	while (getline(&line, &cap, f) > 0) {
		if (check)
			ck_schema(line);
		take_line(s, line);
	}
	free(line);
	fclose(f);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(s->result != NULL, "no result line");
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Run code in session with --json-stream to its end; its exit code. */
static int run_streamed(const char *session, const char *code, bool check, struct streamed *s)
{
	const char *argv[] = { "dolsot", "--session", session, "--json-stream", code, NULL };
	int fd;
	pid_t pid = cli_spawn_reading(&(struct cli_opts){ .env = fx.env }, argv, &fd);
	FILE *f = fdopen(fd, "r");

	ck_assert_ptr_nonnull(f);
	memset(s, 0, sizeof(*s));
	return read_rest(f, pid, s, check);
}

/* The cell: prints (its stdout is unbuffered: no flush), waits for the test's go on the FIFO, then
 * prints more (and the tail: more code after). */
static char *waiting_cell(const char *fifo, const char *after)
{
	char *code;

	ck_assert_int_ne(asprintf(&code, "import sys\nprint('first')\n"
	                          "open(%s).read()\nprint('second')\n"
	                          "sys.stderr.write('e\\n')\n%s", fifo, after), -1);
	return code;
}

/* Let the cell at pid go: write to its FIFO once it is reading it.  When
 * it never does, fail with what the call printed (f). */
static void release(const char *fifo, pid_t pid, FILE *f)
{
	double t0 = cli_now();
	int w;

	while ((w = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)) < 0) {
		ck_assert_msg(errno == ENXIO, "open %s: %s", fifo, strerror(errno));
		if (!cli_pid_alive(pid) || cli_now() - t0 > RELEASE_WAIT) {
			char rest[8192];
			size_t n = fread(rest, 1, sizeof(rest) - 1, f);

			rest[n] = '\0';
			ck_abort_msg("the cell never read its FIFO; the call printed: %s", rest);
		}
		usleep(RELEASE_POLL_US);
	}
	ck_assert_int_eq(write(w, "go", 2), 2);
	close(w);
}

/*
 * Run the waiting cell with --json-stream and the extra flags (NULL-ended,
 * at most 4): the first line must be its first chunk, read while it waits;
 * only then is it let go.  Returns the exit code, s filled.
 */
static int run_waiting(const char *const *extra, const char *after, struct streamed *s)
{
	char share[4200], fifo[4300], mount[4400], quoted[4400], *code, *line = NULL;
	const char *argv[16] = { "dolsot", "--session", "s", "--json-stream" };
	size_t n = 4, cap = 0;
	bool sandboxed = false;
	json_t *first;
	FILE *f;
	pid_t pid;
	int fd;

	memset(s, 0, sizeof(*s));
	/* Beside the store, not over it: a sandbox mounts this one. */
	snprintf(share, sizeof(share), "%s/share", fx.tmp);
	snprintf(fifo, sizeof(fifo), "%s/go.fifo", share);
	ck_assert(mkdir(share, 0700) == 0 || errno == EEXIST);
	unlink(fifo);
	/* Anyone's: a sandboxed cell may run as another user. */
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	ck_assert_int_eq(chmod(share, 0777), 0);
	ck_assert_int_eq(chmod(fifo, 0666), 0);
	for (const char *const *e = extra; e && *e; e++)
		sandboxed |= strcmp(*e, "--sandbox") == 0;
	/* A sandboxed cell sees the test's directory where it is mounted. */
	snprintf(mount, sizeof(mount), "%s:/t:rw", share);
	snprintf(quoted, sizeof(quoted), "'%s'", sandboxed ? "/t/go.fifo" : fifo);
	if (sandboxed) {
		argv[n++] = "--mount";
		argv[n++] = mount;
	}
	code = waiting_cell(quoted, after);
	for (; extra && *extra; extra++)
		argv[n++] = *extra;
	argv[n++] = code;
	pid = cli_spawn_reading(&(struct cli_opts){ .env = fx.env }, argv, &fd);
	f = fdopen(fd, "r");
	ck_assert_ptr_nonnull(f);
	/* The cell cannot go on until we open the FIFO: this line came while
	 * it ran. */
	ck_assert_msg(getline(&line, &cap, f) > 0, "no line while the cell waits");
	first = json_loads(line, 0, NULL);
	ck_assert_msg(first && strcmp(json_string_value(json_object_get(first, "stream")),
	                              "stdout") == 0 &&
	              strncmp(json_string_value(json_object_get(first, "text")), "first", 5) == 0,
	              "first line: %s", line);
	json_decref(first);
	take_line(s, line);
	free(line);
	release(fifo, pid, f);
	free(code);
	return read_rest(f, pid, s, false);
}

static const char *result_str(const struct streamed *s, const char *key)
{
	return json_string_value(json_object_get(s->result, key));
}

/* The chunks say what the result says, and the result is --json's. */
static void ck_chunks_match(const struct streamed *s, const char *out, const char *err)
{
	ck_assert_str_eq(result_str(s, "stdout"), out);
	ck_assert_str_eq(result_str(s, "stderr"), err);
	ck_assert_str_eq(s->text[0] ? s->text[0] : "", out);
	ck_assert_str_eq(s->text[1] ? s->text[1] : "", err);
	ck_assert_uint_eq(s->dropped[0] + s->dropped[1], 0);
}

static void ck_streams(const char *const *extra)
{
	struct streamed s;
	char *dumped;

	ck_assert_int_eq(run_waiting(extra, "7", &s), 0);
	ck_chunks_match(&s, "first\nsecond\n", "e\n");
	ck_assert_str_eq(result_str(&s, "value"), "7");
	dumped = json_dumps(s.result, JSON_COMPACT);
	ck_assert_ptr_nonnull(dumped = realloc(dumped, strlen(dumped) + 2));
	ck_schema(strcat(dumped, "\n"));
	free(dumped);
	streamed_release(&s);
}

START_TEST(chunks_arrive_while_the_cell_runs)
{
	ck_streams(NULL);
}
END_TEST

START_TEST(chunks_arrive_from_a_sandboxed_cell)
{
	ck_streams((const char *const[]){ "--sandbox", NULL });
}
END_TEST

START_TEST(chunks_arrive_from_a_live_session)
{
	ck_streams((const char *const[]){ "--live", NULL });
	/* Its second call, in the same process. */
	ck_streams((const char *const[]){ "--live", NULL });
}
END_TEST

START_TEST(chunks_arrive_from_a_live_sandboxed_session)
{
	ck_streams((const char *const[]){ "--live", "--sandbox", NULL });
}
END_TEST

/* What a cell printed before its timeout came while it ran, and the
 * timeout's result still carries it. */
START_TEST(output_before_a_timeout_streams)
{
	struct streamed s;

	ck_assert_int_eq(run_waiting((const char *const[]){ "--timeout", "5", NULL },
	                             "import time\ntime.sleep(120)", &s), 124);
	ck_assert_str_eq(result_str(&s, "status"), "timeout");
	ck_chunks_match(&s, "first\nsecond\n", "e\n");
	streamed_release(&s);
}
END_TEST

/* A flood is thinned to bounded chunks, counted; the result is cut by the
 * cap as without --json-stream, head and tail. */
START_TEST(a_flood_is_bounded_and_the_result_unchanged)
{
	struct streamed s;
	json_t *cut;

	ck_assert_int_eq(run_streamed("f", "import os\nfor _ in range(200): "
	                              "os.write(1, b'z' * 5000)\nos.write(1, b'END\\n')",
	                              false, &s), 0);
	/* Every byte is in a chunk or counted as left out. */
	ck_assert_uint_eq(s.len[0] + s.dropped[0], 1000004);
	ck_assert_uint_le(s.len[0], (size_t)s.chunks * 8192);
	ck_assert_msg(s.len[0] >= 4 && memcmp(s.text[0] + s.len[0] - 4, "END\n", 4) == 0,
	              "the last chunk ends the stream");
	cut = json_object_get(json_object_get(s.result, "truncated"), "stdout");
	ck_assert_int_eq(json_integer_value(json_object_get(cut, "head")), 50000);
	ck_assert_int_eq(json_integer_value(json_object_get(cut, "tail")), 50000);
	ck_assert_int_eq(json_integer_value(json_object_get(cut, "cut_bytes")), 1000004 - 100000);
	ck_assert(strstr(result_str(&s, "stdout"), "zzz\n[output truncated: kept the first "
	                 "50000 and the last 50000 chars; cut 900004 bytes (900004 chars) "
	                 "here]\nzzz"));
	ck_assert(strstr(result_str(&s, "stdout"), "zzzEND\n"));
	streamed_release(&s);
}
END_TEST

/* Each line is an object the schema knows: chunks, then the result. */
START_TEST(every_line_is_in_the_schema)
{
	struct streamed s;

	ck_assert_int_eq(run_streamed("v", "import sys\nprint('a', flush=True)\n"
	                              "sys.stderr.write('b\\n')\nsys.stderr.flush()\n"
	                              "print('c' * 10)\n1", true, &s), 0);
	ck_assert_int_ge(s.chunks, 2);
	ck_chunks_match(&s, "a\ncccccccccc\n", "b\n");
	streamed_release(&s);
}
END_TEST

/* A cut value keeps its head and tail, as a stream does, at line breaks
 * where they are near. */
START_TEST(a_cut_value_keeps_head_and_tail)
{
	struct cli_run r;

	RUN_IN(&r, NULL, ((const char *[]){ "DOLSOT_MAX_OUTPUT=20", NULL }), "--session", "t",
	       "'\\n'.join(str(i) for i in range(100))");
	ck_code(&r, 0);
	ck_out(&r, "'0\\n1\\n2\\n\n[value truncated: kept the first 10 and the last 10 "
	           "chars; cut 370 bytes (370 chars) here]\n7\\n98\\n99'\n");
	cli_run_release(&r);
	RUN_IN(&r, NULL, ((const char *[]){ "DOLSOT_MAX_OUTPUT=20", NULL }), "--session", "t",
	       "class R:\n    def __repr__(self):\n"
	       "        return '\\n'.join(str(i) for i in range(100))\nR()");
	ck_code(&r, 0);
	ck_out(&r, "0\n1\n2\n3\n4\n[value truncated: kept the first 10 and the last 8 chars; "
	           "cut 271 bytes (271 chars) here]\n97\n98\n99\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(json_stream_belongs_to_running_code)
{
	struct cli_run r;

	CLI(&r, "--list-sessions", "--json-stream");
	ck_code(&r, 2);
	ck_assert(cli_has(r.err, "--json-stream belongs to running code in a session"));
	cli_run_release(&r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("stream");
	TCase *run = tcase_create("stream"), *live = tcase_create("live");

	tcase_add_checked_fixture(run, setup, teardown);
	tcase_add_checked_fixture(live, setup_server, teardown);
	tcase_set_timeout(run, 120);
	tcase_set_timeout(live, 120);
	tcase_add_test(run, chunks_arrive_while_the_cell_runs);
	tcase_add_test(run, chunks_arrive_from_a_sandboxed_cell);
	tcase_add_test(run, output_before_a_timeout_streams);
	tcase_add_test(run, a_flood_is_bounded_and_the_result_unchanged);
	tcase_add_test(run, every_line_is_in_the_schema);
	tcase_add_test(run, a_cut_value_keeps_head_and_tail);
	tcase_add_test(run, json_stream_belongs_to_running_code);
	tcase_add_test(live, chunks_arrive_from_a_live_session);
	tcase_add_test(live, chunks_arrive_from_a_live_sandboxed_session);
	suite_add_tcase(s, run);
	suite_add_tcase(s, live);
	return ck_run(s);
}
