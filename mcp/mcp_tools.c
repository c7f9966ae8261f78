/*
 * mcp_tools.c - the MCP tools as a table: tools/list builds each row's
 * entry (its input schema from the arguments it names), tools/call finds
 * the row by name, checks the arguments against the names and reads them
 * with the row's reader, and the call's child runs the row's runner.
 */
#include "mcp_tools.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "callrec.h"
#include "export.h"
#include "jsonrpc.h"
#include "mcp_detach.h"
#include "mcp_tasks.h"
#include "options.h"
#include "output_json.h"
#include "repl.h"
#include "result_schema.h"
#include "timeline_cmd.h"
#include "timeline_out.h"
#include "utc.h"

struct mcp_tool {
	const char *name;
	const char *title;
	const char *description;    /* NULL: made by describe() */
	const char *output;         /* its output schema: a $defs entry */
	const enum option_id *args; /* its arguments (options.h), 0-ended */
	const enum option_id *needs; /* those it needs, 0-ended: its reader checks
	                              * the first, check_types the others */
	/* Read args (already checked to hold only known names) into c: the
	 * argument it needs first, then check_types, then the rest. */
	int (*read)(const struct mcp_setup *m, const json_t *args, struct mcp_call *c,
	            struct mcp_refusal *r);
	json_t *(*run)(const struct mcp_setup *m, bool structured, const struct mcp_call *c,
	               bool *cancelled);
};

static int refuse(struct mcp_refusal *r, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Fill r; returns -1. */
static int refuse(struct mcp_refusal *r, int code, const char *fmt, ...)
{
	va_list ap;

	r->code = code;
	va_start(ap, fmt);
	vsnprintf(r->msg, sizeof(r->msg), fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- what a tool call's child builds ---- */

static json_t *text_block(const char *text, size_t n)
{
	return json_pack("{s:s, s:o}", "type", "text", "text", output_json_string(text, n));
}

/* A tool result; takes the references of content and (may be NULL) obj. */
static json_t *tool_result(bool structured, json_t *content, json_t *obj, bool error)
{
	json_t *r = json_pack("{s:o, s:b}", "content", content, "isError", error);

	if (r && obj && structured)
		json_object_set(r, "structuredContent", obj);
	json_decref(obj);
	return r;
}

json_t *mcp_tools_error(bool structured, const char *fmt, ...)
{
	char msg[REPL_ERR_MAX + 256];
	va_list ap;

	msg[0] = '\0';
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return tool_result(structured, json_pack("[o]", text_block(msg, strlen(msg))), NULL,
	                   true);
}

/* What fn wrote to a memory stream, parsed. */
static json_t *json_of(int (*fn)(const struct result *, FILE *), const struct result *r)
{
	char *text = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&text, &n);
	json_t *o = NULL;
	int wrote;

	if (!f)
		return NULL;
	wrote = fn(r, f);
	if (fclose(f) == 0 && wrote == 0)
		o = json_loadb(text, n, 0, NULL);
	free(text);
	return o;
}

static int render_text(const struct result *r, FILE *f)
{
	return output_render(r, f, f);
}

/* The image blocks of a result object's displays (its "displays" array, as
 * output_json.c writes it), and a line in the text for each.  Built from the
 * object, so that a replayed call id attaches what its first call did. */
static void add_images(const json_t *obj, json_t *content, FILE *text)
{
	const json_t *displays = json_object_get(obj, "displays"), *d;
	size_t i, shown = 0;

	json_array_foreach(displays, i, d) {
		const json_t *meta = json_object_get(d, "metadata");
		const char *mime;
		json_t *data;

		json_object_foreach(json_object_get(d, "data"), mime, data) {
			if (strcmp(mime, "image/png") != 0 && strcmp(mime, "image/jpeg") != 0)
				continue;
			if (!json_is_string(data))
				continue;
			json_array_append_new(content, json_pack("{s:s, s:O, s:s}", "type", "image",
			                      "data", data, "mimeType", mime));
			fprintf(text, "dolsot: image %zu (%" JSON_INTEGER_FORMAT "x%"
			        JSON_INTEGER_FORMAT " %s) is attached\n", ++shown,
			        json_integer_value(json_object_get(meta, "width")),
			        json_integer_value(json_object_get(meta, "height")), mime);
			break;
		}
	}
}

/* The text and object of res: as recorded for its call id when the call
 * said a record (a replay, or the first call whose record holds it all),
 * otherwise rendered.  0, or -1 on a lack of memory. */
static int result_parts(const struct result *res, FILE *text, json_t **obj)
{
	if (!res->said) {
		*obj = json_of(output_json_run, res);
		return *obj && render_text(res, text) == 0 ? 0 : -1;
	}
	*obj = json_loadb(res->said_json.p, res->said_json.len, 0, NULL);
	if (!*obj)
		return -1;
	if ((res->said_out.len && fwrite(res->said_out.p, 1, res->said_out.len, text) !=
	     res->said_out.len) ||
	    (res->said_err.len && fwrite(res->said_err.p, 1, res->said_err.len, text) !=
	     res->said_err.len))
		return -1;
	return 0;
}

/*
 * A stream of the result object longer than this many bytes is shown once,
 * in the text content: structuredContent has "" in its place and names it
 * in "in_text" (a host's limit counts both copies).
 */
#define MCP_INLINE_STREAM_MAX 1024
/* Seconds between the rounds of output chunks a call's progress carries. */
#define MCP_STREAM_EVERY 0.5

static void slim_streams(json_t *obj)
{
	static const char *const streams[] = { "stdout", "stderr" };
	json_t *moved = json_array();

	for (size_t i = 0; moved && i < 2; i++) {
		const json_t *v = json_object_get(obj, streams[i]);

		if (json_is_string(v) && json_string_length(v) > MCP_INLINE_STREAM_MAX &&
		    json_array_append_new(moved, json_string(streams[i])) == 0)
			json_object_set_new(obj, streams[i], json_string(""));
	}
	if (moved && json_array_size(moved))
		json_object_set(obj, "in_text", moved);
	json_decref(moved);
}

/* A chunk of the cell's output, for mcp.c's progress notifications. */
static void send_chunk(void *f, const struct stream_chunk *chunk)
{
	output_json_chunk(chunk, f);
}

/* A detached call's parts as a tool result, or an error result. */
static json_t *detach_result(bool structured, int rc, struct mcp_detach_parts *p,
                             const char *err)
{
	json_t *r;

	if (rc < 0)
		return mcp_tools_error(structured, "dolsot: %s", err);
	r = tool_result(structured, json_pack("[o]", text_block(p->text, p->len)),
	                json_incref(p->obj), p->error);
	mcp_detach_parts_release(p);
	return r;
}

/* python with detach_after: fork the keeper.  true in the caller, with
 * *answer its tool result; false in the keeper, which runs the call. */
static bool detach_begin(const struct settings *set, bool structured,
                         const struct mcp_call *c, struct detach_keeper *keeper,
                         json_t **answer)
{
	struct mcp_detach_parts p;
	struct detach_rec rec;
	char err[REPL_ERR_MAX];
	int rc;

	/* the keeper keeps the progress's pipe: the cell's output goes on as
	 * notifications while the call waits, and nowhere once it answered */
	switch (detach_start(set, c->session, &rec, keeper, c->chunk_fd, err, sizeof(err))) {
	case DETACH_KEEPER:
		return false;
	case DETACH_CLIENT:
		if (c->task == MCP_TASK_CREATE) {
			*answer = json_pack("{s:o}", "task", mcp_tasks_task(&rec, set));
			return true;
		}
		rc = mcp_detach_answer(&rec, c->detach_after, &p, err, sizeof(err));
		*answer = detach_result(structured, rc, &p, err);
		return true;
	case DETACH_FAILED:
	default:
		*answer = mcp_tools_error(structured, "dolsot: %s", err);
		return true;
	}
}

static json_t *handle_run(const struct mcp_setup *m, bool structured,
                          const struct mcp_call *c, enum mcp_detach_verb verb)
{
	struct mcp_detach_parts p;
	char err[REPL_ERR_MAX];
	bool result = c->task == MCP_TASK_RESULT;   /* waits for the end */
	int rc = mcp_detach_verb(m->settings, verb, c->handle, result ? -1 : c->timeout, &p, err,
	                         sizeof(err));
	json_t *r = detach_result(structured, rc, &p, err);

	if (r && result)
		json_object_set_new(r, "_meta", json_pack("{s:{s:s}}",
		                    "io.modelcontextprotocol/related-task", "taskId", c->handle));
	return r;
}

static json_t *wait_run(const struct mcp_setup *m, bool structured, const struct mcp_call *c,
                        bool *cancelled)
{
	(void)cancelled;
	return handle_run(m, structured, c, MCP_DETACH_WAIT);
}

static json_t *peek_run(const struct mcp_setup *m, bool structured, const struct mcp_call *c,
                        bool *cancelled)
{
	(void)cancelled;
	return handle_run(m, structured, c, MCP_DETACH_PEEK);
}

static json_t *cancel_run(const struct mcp_setup *m, bool structured,
                          const struct mcp_call *c, bool *cancelled)
{
	(void)cancelled;
	return handle_run(m, structured, c, MCP_DETACH_CANCEL);
}

static json_t *python_run(const struct mcp_setup *m, bool structured,
                          const struct mcp_call *c, bool *cancelled)
{
	struct settings set = *m->settings;
	struct run_args a = { .session = c->session, .code = c->code,
	                      .code_len = strlen(c->code), .toolboxes = m->toolboxes,
	                      .n_toolboxes = m->n_toolboxes, .settings = &set, .tools = m->tools,
	                      .plan = m->plan, .json = true, .fork = c->fork,
	                      .fork_replace = c->replace, .call_id = c->call_id };
	struct result res;
	char err[REPL_ERR_MAX], *text = NULL;
	size_t n = 0;
	int sig = 0;
	json_t *obj = NULL, *content;
	FILE *f;

	struct stream chunks;
	struct detach_keeper keeper;
	FILE *progress;

	set.timeout = c->timeout;
	if (c->detach && detach_begin(&set, structured, c, &keeper, &content))
		return content;   /* the client's answer; the keeper goes on */
	progress = c->chunk_fd >= 0 ? fdopen(c->chunk_fd, "w") : NULL;
	result_init(&res, set.max_output);
	if (progress)
		stream_attach(&chunks, &res.out, &res.err, MCP_STREAM_EVERY, send_chunk, progress);
	if (c->detach)
		detach_keeper_tap(&keeper, &res.out, &res.err);
	if (repl_run(&a, &res, &sig, err, sizeof(err)) < 0) {
		if (c->detach) {
			fprintf(stderr, "dolsot: %s\n", err);
			exit(DOLSOT_EXIT_FAIL);
		}
		result_release(&res);
		return mcp_tools_error(structured, "dolsot: %s", err);
	}
	if (progress) {
		stream_flush(&chunks);
		fclose(progress);
	}
	if (sig && c->detach)
		detach_keeper_cancelled(&keeper, sig);
	if (sig) {
		*cancelled = true;  /* no answer: the session rolled back */
		result_release(&res);
		return NULL;
	}
	if (c->timeout_asked > 0 && !res.said) {
		char line[256];

		snprintf(line, sizeof(line), "warning: timeout %g s was capped at %g s, the "
		         "server's --timeout (start the server with a larger one to run longer)",
		         c->timeout_asked, c->timeout);
		result_warn(&res, line);
	}
	if (c->detach)
		detach_keeper_finish(&keeper, &res);
	content = json_array();
	f = open_memstream(&text, &n);
	if (!content || !f || result_parts(&res, f, &obj) < 0) {
		if (f)
			fclose(f);
		free(text);
		json_decref(obj);
		json_decref(content);
		result_release(&res);
		return NULL;
	}
	add_images(obj, content, f);
	slim_streams(obj);
	if (c->minted)
		fprintf(f, "dolsot: this call made session '%s'; pass \"session\": \"%s\" to "
		        "go on with its state\n", c->session, c->session);
	fclose(f);
	json_array_insert_new(content, 0, text_block(text, n));
	free(text);
	content = tool_result(structured, content, obj, res.exit_code != 0);
	result_release(&res);
	return content;
}

static json_t *list_run(const struct mcp_setup *m, bool structured,
                        const struct mcp_call *c, bool *cancelled)
{
	char err[REPL_ERR_MAX], *text = NULL;
	struct session_info *info = NULL;
	size_t n = 0, tn = 0;
	json_t *obj = NULL;
	FILE *f;

	(void)c;
	(void)cancelled;
	if (repl_list(m->settings, &info, &n, err, sizeof(err)) < 0)
		return mcp_tools_error(structured, "dolsot: %s", err);
	f = open_memstream(&text, &tn);
	if (f && output_json_sessions(info, n, f) == 0 && fflush(f) == 0)
		obj = json_loadb(text, tn, 0, NULL);
	if (f)
		fclose(f);
	free(text);
	text = NULL;
	f = open_memstream(&text, &tn);
	for (size_t i = 0; f && i < n; i++) {
		char when[UTC_TEXT_LEN];

		utc_text(info[i].mtime.tv_sec, when, sizeof(when));
		fprintf(f, "%s\t%llu\t%s\n", info[i].id, (unsigned long long)info[i].size, when);
	}
	if (f && n == 0)
		fputs("(no sessions)\n", f);
	free(info);
	if (!f || fclose(f) != 0 || !obj) {
		free(text);
		json_decref(obj);
		return NULL;
	}
	obj = tool_result(structured, json_pack("[o]", text_block(text, tn)), obj, false);
	free(text);
	return obj;
}

static json_t *reset_run(const struct mcp_setup *m, bool structured,
                         const struct mcp_call *c, bool *cancelled)
{
	char err[REPL_ERR_MAX], line[STORE_ERR_MAX + 64];
	unsigned removed = 0, images = 0;
	json_t *obj;

	(void)cancelled;
	if (repl_reset(m->settings, c->session, &removed, &images, NULL, err,
	               sizeof(err)) < 0)
		return mcp_tools_error(structured, "dolsot: %s", err);
	obj = json_pack("{s:s, s:I, s:I}", "reset", c->session, "removed", (json_int_t)removed,
	                "removed_images", (json_int_t)images);
	if (images)
		snprintf(line, sizeof(line), "reset %s: removed %u session(s) and %u image(s)\n",
		         c->session, removed, images);
	else
		snprintf(line, sizeof(line), "reset %s: removed %u session(s)\n", c->session,
		         removed);
	return tool_result(structured, json_pack("[o]", text_block(line, strlen(line))), obj,
	                   false);
}

/* A result of what print wrote (its text block) and obj (structuredContent);
 * takes obj's reference.  NULL on a lack of memory. */
static json_t *printed_result(bool structured, json_t *obj,
                              int (*print)(const void *of, FILE *out), const void *of)
{
	char *text = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&text, &n);
	int wrote = f ? print(of, f) : -1;
	json_t *r = NULL;

	if (f && fclose(f) == 0 && wrote == 0 && obj) {
		r = tool_result(structured, json_pack("[o]", text_block(text, n)), obj, false);
		obj = NULL;
	}
	json_decref(obj);
	free(text);
	return r;
}

/* A session's states, for printed_result. */
struct states_of {
	const char *id;
	struct timeline_state *v;
	size_t n;
};

static int print_states(const void *of, FILE *out)
{
	const struct states_of *s = of;

	return timeline_print(s->id, s->v, s->n, out);
}

static json_t *history_run(const struct mcp_setup *m, bool structured,
                           const struct mcp_call *c, bool *cancelled)
{
	char err[REPL_ERR_MAX];
	struct states_of s = { .id = c->session };
	json_t *r;

	(void)cancelled;
	if (timeline_cmd_list(m->settings, c->session, &s.v, &s.n, err, sizeof(err)) < 0)
		return mcp_tools_error(structured, "dolsot: %s", err);
	r = printed_result(structured, timeline_json(c->session, s.v, s.n), print_states, &s);
	timeline_release(s.v, s.n);
	return r;
}

/* A move, for printed_result. */
struct move_of {
	const char *id, *action;
	struct timeline_move mv;
};

static int print_move(const void *of, FILE *out)
{
	const struct move_of *mo = of;

	return timeline_print_move(mo->id, mo->action, &mo->mv, out);
}

/* undo (state 0) and checkout: the tool's name is the move's. */
static json_t *move_run(const struct mcp_setup *m, bool structured, const struct mcp_call *c,
                        bool *cancelled)
{
	char err[REPL_ERR_MAX];
	struct move_of mo = { .id = c->session, .action = c->tool->name };

	(void)cancelled;
	if (timeline_cmd_move(m->settings, c->session, c->state, &mo.mv, err, sizeof(err)) < 0)
		return mcp_tools_error(structured, "dolsot: %s", err);
	return printed_result(structured, timeline_move_json(mo.id, mo.action, &mo.mv),
	                      print_move, &mo);
}

/* The session's history as c->format, in a memory stream: 0 with *text
 * (malloc'd, *len bytes) and *obj, the structured result; -1 with err
 * (NULL *obj: memory ran out). */
static int export_of(const struct mcp_setup *m, const struct mcp_call *c, char **text,
                       size_t *len, json_t **obj, char *err, size_t errlen)
{
	struct notebook_about about = { .session = c->session, .version = m->version,
	                                .depth = m->settings->history };
	enum export_format f = (enum export_format)c->format;
	struct timeline_state *v = NULL;
	char uri[STORE_ID_MAX + 64];
	size_t n = 0;
	FILE *mem;
	bool ok;

	*obj = NULL;
	*text = NULL;
	if (timeline_cmd_list(m->settings, c->session, &v, &n, err, errlen) < 0)
		return -1;
	mem = open_memstream(text, len);
	ok = mem && export_write(&about, v, n, f, mem) == 0;
	if (mem && fclose(mem) != 0)
		ok = false;
	snprintf(uri, sizeof(uri), "dolsot://sessions/%s/history.%s", c->session,
	         export_format_name(f));
	if (ok)
		*obj = json_pack("{s:s, s:s, s:s, s:s, s:I, s:o}", "session", c->session, "format",
		                 export_format_name(f), "uri", uri, "mimeType",
		                 export_format_mime(f), "states", (json_int_t)n, "current",
		                 n ? json_integer((json_int_t)v[n - 1].number) : json_null());
	timeline_release(v, n);
	if (*obj)
		return 0;
	free(*text);
	*text = NULL;
	return -1;
}

static json_t *export_run(const struct mcp_setup *m, bool structured,
                          const struct mcp_call *c, bool *cancelled)
{
	char err[REPL_ERR_MAX] = "", line[STORE_ID_MAX + 160], *text;
	size_t len = 0;
	json_t *obj, *content;

	(void)cancelled;
	if (export_of(m, c, &text, &len, &obj, err, sizeof(err)) < 0)
		return err[0] ? mcp_tools_error(structured, "dolsot: %s", err) : NULL;
	snprintf(line, sizeof(line), "exported session '%s': %" JSON_INTEGER_FORMAT " state(s) "
	         "as %s, %zu bytes, in the resource %s\n", c->session,
	         json_integer_value(json_object_get(obj, "states")),
	         json_string_value(json_object_get(obj, "format")), len,
	         json_string_value(json_object_get(obj, "uri")));
	content = json_pack("[o, {s:s, s:{s:O, s:O, s:o}}]", text_block(line, strlen(line)),
	                    "type", "resource", "resource", "uri", json_object_get(obj, "uri"),
	                    "mimeType", json_object_get(obj, "mimeType"),
	                    "text", output_json_string(text, len));
	free(text);
	if (!content) {
		json_decref(obj);
		return NULL;
	}
	return tool_result(structured, content, obj, false);
}

json_t *mcp_tools_run(const struct mcp_setup *m, bool structured, const struct mcp_call *c,
                      bool *cancelled)
{
	*cancelled = false;
	return c->tool->run(m, structured, c, cancelled);
}

/* ---- reading a call's arguments ---- */

static int mint_session(char *out, size_t len)
{
	unsigned char b[8];

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
		return -1;
	snprintf(out, len, "mcp-%02x%02x%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3],
	         b[4], b[5], b[6], b[7]);
	return 0;
}

/* A session argument: 0, or -1 with why not. */
static int check_session(const char *sid, bool all, struct mcp_refusal *r)
{
	char err[STORE_ERR_MAX];

	if (all && strcmp(sid, "all") == 0)
		return 0;
	if (strcmp(sid, "all") == 0)
		return refuse(r, JSONRPC_INVALID_PARAMS, "session id 'all' is reserved (it means "
		              "every session to reset_session); choose another id");
	if (!store_part_valid(sid, "session id", STORE_ID_MAX, err, sizeof(err)))
		return refuse(r, JSONRPC_INVALID_PARAMS, "%s", err);
	return 0;
}

static bool is_blank(const char *c)
{
	return c[strspn(c, " \t\r\n\f\v")] == '\0';
}

/* A python call's fork and replace into c (its session already set); 0,
 * or -1 with why not.  The same rules as --fork and --replace. */
static int fork_args(const json_t *args, struct mcp_call *c, struct mcp_refusal *r)
{
	json_t *src = json_object_get(args, "fork"), *rep = json_object_get(args, "replace");

	if (!src) {
		if (json_is_true(rep))
			return refuse(r, JSONRPC_INVALID_PARAMS, "python: \"replace\" goes with "
			              "\"fork\"");
		return 0;
	}
	if (strcmp(json_string_value(src), "all") == 0)
		return refuse(r, JSONRPC_INVALID_PARAMS, "python: \"fork\": 'all' is not a "
		              "session; name the session to copy");
	if (check_session(json_string_value(src), false, r) < 0)
		return -1;
	if (strcmp(json_string_value(src), c->session) == 0)
		return refuse(r, JSONRPC_INVALID_PARAMS, "python: \"fork\": a session cannot be "
		              "forked into itself");
	c->replace = json_is_true(rep);
	c->fork = strdup(json_string_value(src));
	if (!c->fork)
		return refuse(r, JSONRPC_INTERNAL_ERROR, "out of memory");
	return 0;
}

/* A python call's call_id into c (its session already set); 0, or -1
 * with why not.  The rule of --call-id, and a session to name: a retry
 * of a call that minted one would mint another. */
static int call_id_arg(const json_t *args, struct mcp_call *c, struct mcp_refusal *r)
{
	const json_t *cid = json_object_get(args, "call_id");
	char why[256] = "a call id is made of " CALLREC_ID_CHARS " only (it holds a NUL)";

	if (!cid)
		return 0;
	if (strlen(json_string_value(cid)) != json_string_length(cid) ||
	    !callrec_id_valid(json_string_value(cid), why, sizeof(why)))
		return refuse(r, JSONRPC_INVALID_PARAMS, "python: \"call_id\" '%.130s': %s",
		              json_string_value(cid), why);
	if (c->minted)
		return refuse(r, JSONRPC_INVALID_PARAMS, "python: \"call_id\" needs \"session\": "
		              "a retry without one would start another new session");
	c->call_id = strdup(json_string_value(cid));
	if (!c->call_id)
		return refuse(r, JSONRPC_INTERNAL_ERROR, "out of memory");
	return 0;
}

/* The timeout argument, if any, under the server's cap. */
static void timeout_arg(const struct mcp_setup *m, const json_t *t, struct mcp_call *c)
{
	c->timeout = m->settings->timeout;
	if (t && json_number_value(t) < c->timeout)
		c->timeout = json_number_value(t);
	else if (t && json_number_value(t) > c->timeout)
		c->timeout_asked = json_number_value(t);
}

/* Whether v is of o's type: a boolean for a flag without a value, a
 * string for a text, a number above 0 for seconds, a whole number from 1
 * (2^53 at most, as JSON keeps it exact; 3.0 is one) for a positive. */
static bool arg_typed(const struct option_row *o, const json_t *v)
{
	switch (o->type) {
	case OPTION_T_NONE:
		return json_is_boolean(v);
	case OPTION_T_SECONDS:
		return json_is_number(v) && json_number_value(v) > 0 &&
		       isfinite(json_number_value(v));
	case OPTION_T_DAYS:
		return json_is_number(v) && json_number_value(v) >= 0 &&
		       isfinite(json_number_value(v));
	case OPTION_T_POSITIVE:
		return json_is_number(v) && json_number_value(v) >= 1 &&
		       json_number_value(v) <= 9007199254740992.0 &&
		       floor(json_number_value(v)) == json_number_value(v);
	case OPTION_T_TEXT:
	default:
		return json_is_string(v);
	}
}

static bool needs(const struct mcp_tool *t, enum option_id a)
{
	for (const enum option_id *n = t->needs; *n; n++)
		if (*n == a)
			return true;
	return false;
}

/* Every argument t takes but the first it needs (its reader's), given
 * when t needs it, and of its type when given; 0, or -1 with the first
 * that is not. */
static int check_types(const struct mcp_tool *t, const json_t *args, struct mcp_refusal *r)
{
	for (const enum option_id *a = t->args; *a; a++) {
		const struct option_row *o = options_row(*a);
		const json_t *v = json_object_get(args, o->mcp);

		if (*a == t->needs[0])
			continue;
		if (!v && needs(t, *a))
			return refuse(r, JSONRPC_INVALID_PARAMS, "%s needs \"%s\": %s", t->name,
			              o->mcp, o->mcp_want);
		if (v && !arg_typed(o, v))
			return refuse(r, JSONRPC_INVALID_PARAMS, "%s: \"%s\" must be %s", t->name,
			              o->mcp, o->mcp_want);
	}
	return 0;
}

static int python_read(const struct mcp_setup *m, const json_t *args, struct mcp_call *c,
                       struct mcp_refusal *r)
{
	json_t *code = json_object_get(args, "code"), *sid = json_object_get(args, "session");
	char minted[32];

	if (!json_is_string(code) || is_blank(json_string_value(code)) ||
	    strlen(json_string_value(code)) != json_string_length(code))
		return refuse(r, JSONRPC_INVALID_PARAMS, "python: \"code\" must be %s",
		              options_row(OPTION_CODE)->mcp_want);
	if (check_types(c->tool, args, r) < 0)
		return -1;
	if (sid && check_session(json_string_value(sid), false, r) < 0)
		return -1;
	timeout_arg(m, json_object_get(args, "timeout"), c);
	if (!sid && mint_session(minted, sizeof(minted)) < 0)
		return refuse(r, JSONRPC_INTERNAL_ERROR, "cannot make a session id: %s",
		              strerror(errno));
	c->minted = !sid;
	c->session = strdup(sid ? json_string_value(sid) : minted);
	c->code = strdup(json_string_value(code));
	if (!c->session || !c->code)
		return refuse(r, JSONRPC_INTERNAL_ERROR, "out of memory");
	if (call_id_arg(args, c, r) < 0)
		return -1;
	if (json_object_get(args, "detach_after")) {
		c->detach = true;
		c->detach_after = json_number_value(json_object_get(args, "detach_after"));
	}
	return fork_args(args, c, r);
}

/* wait, peek, cancel: a handle (wait: and a timeout). */
static int handle_read(const struct mcp_setup *m, const json_t *args, struct mcp_call *c,
                       struct mcp_refusal *r)
{
	json_t *h = json_object_get(args, "handle");

	if (!json_is_string(h))
		return refuse(r, JSONRPC_INVALID_PARAMS, "%s needs \"handle\": %s", c->tool->name,
		              options_row(OPTION_WAIT)->mcp_want);
	if (check_types(c->tool, args, r) < 0)
		return -1;
	timeout_arg(m, json_object_get(args, "timeout"), c);
	c->handle = strdup(json_string_value(h));
	return c->handle ? 0 : refuse(r, JSONRPC_INTERNAL_ERROR, "out of memory");
}

static int list_read(const struct mcp_setup *m, const json_t *args, struct mcp_call *c,
                     struct mcp_refusal *r)
{
	(void)m;
	(void)args;
	(void)c;
	(void)r;
	return 0;
}

/* A call on one named session ("all" too when all): the session first,
 * then check_types.  0, or -1 with why not. */
static int session_read(const struct mcp_setup *m, const json_t *args, bool all,
                        struct mcp_call *c, struct mcp_refusal *r)
{
	json_t *sid = json_object_get(args, "session");

	if (!json_is_string(sid))
		return refuse(r, JSONRPC_INVALID_PARAMS, "%s needs \"session\": %s", c->tool->name,
		              options_row(c->tool->needs[0])->mcp_want);
	if (check_types(c->tool, args, r) < 0 ||
	    check_session(json_string_value(sid), all, r) < 0)
		return -1;
	c->session = strdup(json_string_value(sid));
	if (!c->session)
		return refuse(r, JSONRPC_INTERNAL_ERROR, "out of memory");
	c->timeout = m->settings->timeout;
	return 0;
}

static int reset_read(const struct mcp_setup *m, const json_t *args, struct mcp_call *c,
                      struct mcp_refusal *r)
{
	return session_read(m, args, true, c, r);
}

/* history, undo, checkout: a session and (checkout) a state. */
static int timeline_read(const struct mcp_setup *m, const json_t *args, struct mcp_call *c,
                         struct mcp_refusal *r)
{
	const json_t *state = json_object_get(args, options_row(OPTION_STATE)->mcp);

	if (session_read(m, args, false, c, r) < 0)
		return -1;
	c->state = state ? (uint64_t)json_number_value(state) : 0;
	return 0;
}

/* export_notebook: a session and (optionally) a format. */
static int export_read(const struct mcp_setup *m, const json_t *args, struct mcp_call *c,
                       struct mcp_refusal *r)
{
	const json_t *fmt = json_object_get(args, options_row(OPTION_FORMAT)->mcp);
	enum export_format f = EXPORT_IPYNB;

	if (session_read(m, args, false, c, r) < 0)
		return -1;
	if (fmt && export_format_parse(json_string_value(fmt), &f) < 0)
		return refuse(r, JSONRPC_INVALID_PARAMS, "export_notebook: \"format\" must be %s",
		              options_row(OPTION_FORMAT)->mcp_want);
	c->format = (int)f;
	return 0;
}

/* ---- the table ---- */

/* Each tool's arguments, in its input schema's order: their names, types,
 * descriptions and bounds are options.h's rows. */
static const enum option_id python_args[] = { OPTION_CODE, OPTION_SESSION, OPTION_TIMEOUT,
                                              OPTION_FORK, OPTION_REPLACE, OPTION_CALL_ID,
                                              OPTION_DETACH_AFTER, 0 };
static const enum option_id wait_args[] = { OPTION_WAIT, OPTION_TIMEOUT, 0 };
static const enum option_id wait_needs[] = { OPTION_WAIT, 0 };
static const enum option_id peek_args[] = { OPTION_PEEK, 0 };
static const enum option_id cancel_args[] = { OPTION_CANCEL, 0 };
static const enum option_id python_needs[] = { OPTION_CODE, 0 };
static const enum option_id no_args[] = { 0 };
static const enum option_id reset_args[] = { OPTION_RESET, 0 };
static const enum option_id history_args[] = { OPTION_HISTORY_LIST, 0 };
static const enum option_id undo_args[] = { OPTION_UNDO, 0 };
static const enum option_id checkout_args[] = { OPTION_CHECKOUT, OPTION_STATE, 0 };
static const enum option_id export_args[] = { OPTION_EXPORT, OPTION_FORMAT, 0 };
static const enum option_id export_needs[] = { OPTION_EXPORT, 0 };

static const struct mcp_tool tools[] = {
	{ "python", "Python (dolsot)", NULL, "detachable", python_args, python_needs,
	  python_read, python_run },
	{ "list_sessions", "List dolsot sessions",
	  "List this server's sessions (those of its namespace: no other host's or the "
	  "command line's): id, size in bytes, and when each was last saved (UTC).",
	  "sessions", no_args, no_args, list_read, list_run },
	{ "reset_session", "Reset dolsot sessions",
	  "Forget one session (its variables, imports and functions), or with \"all\" every "
	  "session of this server's namespace (never another host's or the command line's).",
	  "reset", reset_args, reset_args, reset_read, reset_run },
	{ "history", "List a dolsot session's kept states",
	  "List a session's kept states, oldest first, one line each: its number (* marks the "
	  "current one), when it was committed (UTC), its status, the bytes it wrote, the "
	  "names it added (+) or dropped (-), and its cell's first line. Every call commits a "
	  "state, a cell that only reads included; a cell that timed out or was cancelled "
	  "made none and is listed as N.K under the state it ran on.",
	  "history", history_args, history_args, timeline_read, history_run },
	{ "undo", "Undo a dolsot session's last state",
	  "Move a session back to the state before its current one, at no cost: the way back "
	  "from a destructive cell (df = df.drop(...), a model overwritten) without running "
	  "anything again. The move is itself a new state, so an undo can be undone; to go "
	  "back further, read history and use checkout.",
	  "move", undo_args, undo_args, timeline_read, move_run },
	{ "checkout", "Move a dolsot session to a kept state",
	  "Move a session to one of its kept states, by the number history lists, at no cost. "
	  "The move is itself a new state: the states after the one gone back to stay listed "
	  "and can be checked out in turn.",
	  "move", checkout_args, checkout_args, timeline_read, move_run },
	{ "export_notebook", "Export a dolsot session's history",
	  "Export a session's history as a Jupyter notebook (nbformat 4.5; or `format` py, a "
	  "script of # %% cells, or md, a report): every kept state's cell with its outputs "
	  "(streams, value, error, figures), the cells rolled back (timeouts, kills) marked, "
	  "and the undos and checkouts. Returned as an embedded resource.", "export",
	  export_args, export_needs, export_read, export_run },
	{ "wait", "Wait for a detached dolsot cell",
	  "Wait for a cell that a python call with detach_after handed back as a handle: its "
	  "result, as python would have returned it, once it ends; or, when timeout seconds "
	  "pass first, its handle again (the cell runs on).",
	  "detachable", wait_args, wait_needs, handle_read, wait_run },
	{ "peek", "Peek at a detached dolsot cell",
	  "The output so far of a cell that a python call with detach_after handed back as a "
	  "handle, and whether it still runs.", "handle", peek_args, peek_args, handle_read,
	  peek_run },
	{ "cancel", "Cancel a detached dolsot cell",
	  "Stop a cell that a python call with detach_after handed back as a handle; its "
	  "session is left as it was before the cell. An error when the cell had already "
	  "ended (wait gives its result).", "handle", cancel_args, cancel_args, handle_read,
	  cancel_run },
};

#define N_TOOLS (sizeof(tools) / sizeof(tools[0]))

/* The names of n things as a sentence: "a", "a and b", "a, b and c". */
static void join_names(char *out, size_t outlen, const char *(*name)(size_t, const void *),
                       const void *of, size_t n)
{
	size_t o = 0;

	out[0] = '\0';
	for (size_t i = 0; i < n && o < outlen; i++)
		o += (size_t)snprintf(out + o, outlen - o, "%s%s",
		                      i == 0 ? "" : i + 1 == n ? " and " : ", ", name(i, of));
}

static const char *tool_name(size_t i, const void *of)
{
	(void)of;
	return tools[i].name;
}

static const char *arg_name(size_t i, const void *of)
{
	return options_row(((const enum option_id *)of)[i])->mcp;
}

static size_t count_args(const enum option_id *a)
{
	size_t n = 0;

	while (a[n])
		n++;
	return n;
}

/* The first key of args that t does not take, or NULL. */
static const char *unknown_arg(const struct mcp_tool *t, const json_t *args)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)args, k, v) {
		const enum option_id *a = t->args;

		(void)v;
		while (*a && strcmp(options_row(*a)->mcp, k) != 0)
			a++;
		if (!*a)
			return k;
	}
	return NULL;
}

int mcp_tools_read(const struct mcp_setup *m, const char *name, const json_t *args,
                   struct mcp_call *c, struct mcp_refusal *r)
{
	const struct mcp_tool *t = tools;
	const char *bad;
	char names[256];

	memset(c, 0, sizeof(*c));
	c->chunk_fd = -1;
	while (t < tools + N_TOOLS && strcmp(t->name, name) != 0)
		t++;
	if (t == tools + N_TOOLS) {
		join_names(names, sizeof(names), tool_name, NULL, N_TOOLS);
		return refuse(r, JSONRPC_INVALID_PARAMS, "unknown tool '%.100s' (the tools are "
		              "%s)", name, names);
	}
	c->tool = t;
	if ((bad = unknown_arg(t, args))) {
		if (!t->args[0])
			return refuse(r, JSONRPC_INVALID_PARAMS, "%s takes no arguments (got "
			              "'%.100s')", t->name, bad);
		join_names(names, sizeof(names), arg_name, t->args, count_args(t->args));
		return refuse(r, JSONRPC_INVALID_PARAMS, "%s: unknown argument '%.100s' (it "
		              "takes %s)", t->name, bad, names);
	}
	if (t->read(m, args, c, r) < 0) {
		mcp_call_release(c);
		return -1;
	}
	return 0;
}

int mcp_tools_task(struct mcp_call *c, int mode, struct mcp_refusal *r)
{
	if (mode == MCP_TASK_CREATE && c->tool->run != python_run)
		return refuse(r, JSONRPC_INVALID_PARAMS, "%s does not run as a task (python does)",
		              c->tool->name);
	c->task = mode;
	if (mode == MCP_TASK_CREATE) {
		c->detach = true;
		c->detach_after = 0;
	}
	return 0;
}

void mcp_call_release(struct mcp_call *c)
{
	free(c->session);
	free(c->code);
	free(c->fork);
	free(c->call_id);
	free(c->handle);
	memset(c, 0, sizeof(*c));
}

/* ---- tools/list ---- */

char *mcp_tools_describe(const struct mcp_setup *m)
{
	struct run_args a = { .toolboxes = m->toolboxes, .n_toolboxes = m->n_toolboxes,
	                      .settings = m->settings, .code = "", .describe = true,
	                      .tools = m->tools,
	                      .plan = m->plan, .describe_mounts = m->describe_mounts,
	                      .describe_mounts_len = m->describe_mounts_len };
	struct result res;
	char err[REPL_ERR_MAX], *text = NULL;
	size_t n = 0;
	int sig = 0;
	FILE *f = open_memstream(&text, &n);

	if (!f)
		return NULL;
	result_init(&res, m->settings->max_output);
	if (repl_run(&a, &res, &sig, err, sizeof(err)) < 0)
		fprintf(f, "(the description failed: %s)\n", err);
	else if (res.describe.p)
		fprintf(f, "%.*s\n", (int)res.describe.len, res.describe.p);
	else if (res.error)
		fprintf(f, "(the description failed: %s)\n", res.error);
	output_describe_limits(&m->settings->limits, m->settings->timeout, f);
	output_describe_gate(&res.gate, f);
	result_release(&res);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	if (n > MCP_DESCRIBE_MAX) {
		size_t cut = MCP_DESCRIBE_MAX;
		static const char more[] = "... (cut here: `dolsot --describe` with the same "
		                           "flags shows the rest)\n";

		while (cut && text[cut - 1] != '\n')
			cut--;
		memcpy(text + cut, more, sizeof(more));
	}
	return text;
}

char *mcp_tools_check_toolboxes(const struct mcp_setup *m)
{
	char err[REPL_ERR_MAX], *text = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&text, &n);

	if (!f)
		return NULL;
	for (size_t i = 0; i < m->n_toolboxes; i++) {
		struct run_args a = { .toolboxes = &m->toolboxes[i], .n_toolboxes = 1,
		                      .settings = m->settings, .code = "", .describe = true,
		                      .plan = m->plan };
		struct result res;
		int sig = 0;

		result_init(&res, m->settings->max_output);
		if (repl_run(&a, &res, &sig, err, sizeof(err)) < 0)
			fprintf(f, "toolbox '%s' (alias %s) could not be checked: %s\n",
			        m->toolboxes[i].module, m->toolboxes[i].alias, err);
		else if (res.error)
			fprintf(f, "%s\n", res.error + (strncmp(res.error, "dolsot: ", 8) ? 0 : 8));
		result_release(&res);
	}
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

/* The python tool's description: the store's lifetimes, the timeout and
 * what a cell gets (described); malloc'd, or NULL. */
static char *python_description(const struct settings *set, const char *described)
{
	char *full = NULL, life[320], cut[200];

	if (set->store == STORE_KIND_MEMORY)
		snprintf(life, sizeof(life), "Sessions live in the warm server's memory "
		         "(DOLSOT_STORE=memory) until reset_session, or until the server has "
		         "been idle %g s", set->server_idle);
	else if (set->ttl_days > 0)
		snprintf(life, sizeof(life), "Sessions are kept on disk until reset_session, "
		         "or until unused for %g days", set->ttl_days);
	else
		snprintf(life, sizeof(life), "Sessions are kept on disk until reset_session");
	if (set->max_output)
		snprintf(cut, sizeof(cut), "A stream, the value and the error over %llu "
		         "characters keep their first %llu and last %llu, with a line between "
		         "saying what was cut", (unsigned long long)set->max_output,
		         (unsigned long long)(set->max_output / 2),
		         (unsigned long long)(set->max_output - set->max_output / 2));
	else
		snprintf(cut, sizeof(cut), "Output is not cut (DOLSOT_MAX_OUTPUT=0)");
	if (asprintf(&full,
	             "Run Python 3.11 code in a persistent session (dolsot). Variables, "
	             "imports and functions persist per `session` across calls; the value of "
	             "the last expression is shown, as in a notebook. Omit `session` to start "
	             "a new one: its id is made for the call (mcp-...) and returned; pass it "
	             "on later calls. Pass `fork` with another session's id to start this "
	             "call's session as a copy of that one first (the source is left as it "
	             "is; `replace` lets the copy overwrite a session that exists). "
	             "%s. Each call runs at most `timeout` seconds (default "
	             "and maximum %g); a cell that raises or times out returns isError, and a "
	             "timeout or a cancel leaves the session as it was before the call. "
	             "matplotlib figures come back as images. %s; a stream over %d "
	             "characters is in the text content only "
	             "(structuredContent names it in `in_text`). With a progress token, "
	             "progress notifications carry the cell's output as it comes (`message`: "
	             "the new text; `_meta[\"dolsot/output\"]`: its stream, seq and dropped "
	             "bytes).\n\nWhat a cell gets:\n%s",
	             life, set->timeout, cut, MCP_INLINE_STREAM_MAX,
	             described ? described : "(unknown: the description failed)\n") < 0)
		return NULL;
	return full;
}

/* One argument's schema: its JSON type, a number's bounds (above 0, at
 * most the server's own value of the setting), its description. */
static json_t *arg_schema(const struct option_row *o, const struct settings *set)
{
	if (o->type == OPTION_T_SECONDS)
		return json_pack("{s:s, s:f, s:f, s:s}", "type", "number", "exclusiveMinimum", 0.0,
		                 "maximum", *(const double *)((const char *)set + o->field),
		                 "description", o->mcp_help);
	if (o->type == OPTION_T_POSITIVE)
		return json_pack("{s:s, s:i, s:s}", "type", "integer", "minimum", 1,
		                 "description", o->mcp_help);
	if (o->type == OPTION_T_DAYS)
		return json_pack("{s:s, s:f, s:s}", "type", "number", "minimum", 0.0,
		                 "description", o->mcp_help);
	return json_pack("{s:s, s:s}", "type", o->type == OPTION_T_NONE ? "boolean" : "string",
	                 "description", o->mcp_help);
}

/* The names of the arguments t needs. */
static json_t *required_list(const struct mcp_tool *t)
{
	json_t *list = json_array();

	for (const enum option_id *n = t->needs; list && *n; n++)
		json_array_append_new(list, json_string(options_row(*n)->mcp));
	return list;
}

static json_t *input_schema(const struct mcp_tool *t, const struct settings *set)
{
	json_t *props = json_object(), *in;

	for (const enum option_id *a = t->args; props && *a; a++)
		if (json_object_set_new(props, options_row(*a)->mcp,
		                        arg_schema(options_row(*a), set)) < 0) {
			json_decref(props);
			props = NULL;
		}
	in = json_pack("{s:s, s:o}", "type", "object", "properties", props);
	if (in && t->needs[0])
		json_object_set_new(in, "required", required_list(t));
	if (in)
		json_object_set_new(in, "additionalProperties", json_false());
	return in;
}

static json_t *schema_def(json_t *schema, const char *name)
{
	json_t *defs = json_object_get(schema, "$defs");
	json_t *d = json_deep_copy(json_object_get(defs, name));

	if (d)
		json_object_set(d, "$defs", defs);
	return d;
}

static json_t *tool_entry(const struct mcp_tool *t, const struct settings *set,
                          const char *described, json_t *schema)
{
	char *made = t->description ? NULL : python_description(set, described);
	const char *desc = t->description ? t->description : made ? made : "Run Python code.";
	json_t *e = json_pack("{s:s, s:s, s:s, s:o}", "name", t->name, "title", t->title,
	                      "description", desc, "inputSchema", input_schema(t, set));

	free(made);
	if (e)
		json_object_set_new(e, "outputSchema", schema_def(schema, t->output));
	if (e && t->run == python_run)   /* the tasks utility (mcp_tasks.h) */
		json_object_set_new(e, "execution", json_pack("{s:s}", "taskSupport", "optional"));
	return e;
}

json_t *mcp_tools_make(const struct mcp_setup *m, const char *described)
{
	json_t *schema = json_loads(result_schema_json, 0, NULL), *list = json_array();

	if (!schema || !list) {
		json_decref(schema);
		json_decref(list);
		return NULL;
	}
	for (size_t i = 0; i < N_TOOLS; i++)
		json_array_append_new(list, tool_entry(&tools[i], m->settings, described, schema));
	json_decref(schema);
	if (json_array_size(list) != N_TOOLS) {
		json_decref(list);
		return NULL;
	}
	return json_pack("{s:o}", "tools", list);
}

json_t *mcp_tools_list(const json_t *made, bool structured)
{
	json_t *r = json_deep_copy(made), *list = json_object_get(r, "tools");

	for (size_t i = 0; !structured && i < json_array_size(list); i++) {
		json_object_del(json_array_get(list, i), "outputSchema");
		json_object_del(json_array_get(list, i), "title");
	}
	return r;
}
