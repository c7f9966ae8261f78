/*
 * checkd_drv.c - keep one type checker running and ask it about a file.
 *
 * pyright: its language server (the checker's name + "-langserver",
 * beside it) over stdio.  The cell is one open document: each check sends
 * its whole text as a new version and waits for the diagnostics published
 * for that version.  Writes to the server are non-blocking and interleaved
 * with reads, so a server that talks while we talk cannot deadlock us.
 *
 * mypy: not its daemon (dmypy refuses to follow imports silently and reads
 * no cache for what a cell imports, so the first cell importing numpy
 * costs it a full analysis of numpy's stubs), but the interpreter of the
 * mypy script's #! line running checkd_mypy.py, compiled in: mypy
 * imported once, then mypy.api.run per cell with the cold run's flags,
 * cache and environment.  It speaks the same framing and JSON-RPC as the
 * language server, so the same code talks to both.
 *
 * The checker runs in its own process group (proc.c) and dies with us.
 */
#include "checkd_drv.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "deadline.h"
#include "fdio.h"
#include "lsp.h"
#include "proc.h"
#include "proc_child.h"

extern char **environ;

/* Made by tools/embed.py from checkd_mypy.py: its source, NUL-terminated. */
extern const unsigned char checkd_mypy_py[];

#define MAX_ENV 4096
#define MAX_ARGS 256
#define SHEBANG_MAX 512
#define MYPY_SCRIPT "_dolsot_mypy.py"   /* checkd_mypy.py, in the work directory */
#define ERR_KEEP 4096
#define INIT_ID 1

struct buf {
	char *p;
	size_t len, cap;
	bool over;              /* more than the cap came: the stream is lost */
};

struct checkd_drv {
	struct proc_child c;
	int in;                 /* the checker's stdin */
	struct buf rx, tx, junk;
	char cell[PATH_MAX];
	char uri[PATH_MAX + 16];
	char python[PATH_MAX];
	long version;           /* pyright: the document's, 0 until opened; mypy: cells asked */
	long asked;             /* the id of the diagnostics we wait for; 0: none */
	bool initialized;
	bool mypy;              /* checkd_mypy.py, not a language server */
};

static void buf_feed(void *ctx, const char *p, size_t n)
{
	struct buf *b = ctx;
	size_t cap = (size_t)LSP_MAX_BODY + LSP_MAX_HEADER;

	if (b->over || n > cap - b->len) {
		b->over = true;
		return;
	}
	if (b->len + n > b->cap) {
		size_t want = b->cap ? b->cap : 65536;
		char *q;

		while (want < b->len + n)
			want *= 2;
		q = realloc(b->p, want);
		if (!q) {
			b->over = true;
			return;
		}
		b->p = q;
		b->cap = want;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

/* Keep only the last ERR_KEEP bytes of stderr: it is read, never used. */
static void junk_feed(void *ctx, const char *p, size_t n)
{
	struct buf *b = ctx;

	if (b->len + n > ERR_KEEP)
		b->len = 0;
	if (n <= ERR_KEEP)
		buf_feed(b, p, n);
}

static void buf_drop(struct buf *b, size_t n)
{
	memmove(b->p, b->p + n, b->len - n);
	b->len -= n;
}

struct start {
	const char *path;
	char *const *argv;
	char *const *envp;
	const char *cwd;
	int in;                 /* -1: /dev/null */
	pid_t parent;
};

static void child_exec(void *arg, int out, int err)
{
	const struct start *s = arg;
	sigset_t none;
	int in = s->in >= 0 ? s->in : open("/dev/null", O_RDONLY | O_CLOEXEC);

	sigemptyset(&none);
	proc_child_reset_signals(&none);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != s->parent)
		_exit(127);
	if (in < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0 ||
	    chdir(s->cwd) < 0)
		_exit(127);
	proc_child_close_fds(NULL, 0);
	execve(s->path, s->argv, s->envp);
	_exit(127);
}

static bool same_name(const char *a, const char *b)
{
	const char *eq = b ? strchr(b, '=') : NULL;

	return eq && strncmp(a, b, (size_t)(eq - b) + 1) == 0;
}

/* environ with extra's NAME=VALUE entries in place of ours. */
static void build_env(const char *const *extra, const char **envp, size_t max)
{
	size_t n = 0;

	for (char **e = environ; *e; e++) {
		bool replaced = false;

		for (const char *const *x = extra; x && *x; x++)
			replaced = replaced || same_name(*e, *x);
		if (!replaced && n + 1 < max)
			envp[n++] = *e;
	}
	for (const char *const *x = extra; x && *x; x++)
		if (strchr(*x, '=') && n + 1 < max)
			envp[n++] = *x;
	envp[n] = NULL;
}

static int spawn(struct checkd_drv *d, const char *path, char *const *argv,
                 const struct checkd_drv_spec *s, const char *cwd, char *err, size_t errlen)
{
	static const char *envp[MAX_ENV];
	int inp[2] = { -1, -1 };
	struct start st = { path, argv, (char *const *)envp, cwd, -1, getpid() };
	const char *what = "pipe2";

	build_env(s->env, envp, MAX_ENV);
	if (pipe2(inp, O_CLOEXEC) < 0)
		goto fail;
	st.in = inp[0];
	d->c.out = (struct proc_pipe){ -1, buf_feed, &d->rx };
	d->c.err = (struct proc_pipe){ -1, junk_feed, &d->junk };
	if (proc_start(&d->c, child_exec, &st, &what) < 0)
		goto fail;
	fd_close(&inp[0]);
	d->in = inp[1];
	if (d->in >= 0)
		fcntl(d->in, F_SETFL, O_NONBLOCK);
	return 0;
fail:
	snprintf(err, errlen, "cannot start %s: %s: %s", path, what, strerror(errno));
	fd_close(&inp[0]);
	fd_close(&inp[1]);
	return -1;
}

/* The language server beside bin ("/x/pyright" + "-langserver"). */
static int beside(const char *bin, const char *suffix, char *buf, size_t len)
{
	int w = snprintf(buf, len, "%s%s", bin, suffix);

	return w > 0 && (size_t)w < len && access(buf, X_OK) == 0 ? 0 : -1;
}

/* text as the file dir/name (its path into path), for the checker to read. */
static int write_file(const char *dir, const char *name, const char *text, char *path,
                      size_t len, char *err, size_t errlen)
{
	int fd;

	snprintf(path, len, "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || fd_write_all(fd, text, strlen(text)) < 0) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
		fd_close(&fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* ---- pyright: LSP ---- */

static int send_msg(struct checkd_drv *d, json_t *msg)
{
	size_t n;
	char *f = msg ? lsp_frame_encode(msg, &n) : NULL;

	json_decref(msg);
	if (!f)
		return -1;
	buf_feed(&d->tx, f, n);
	free(f);
	return d->tx.over ? -1 : 0;
}

static json_t *configuration(const struct checkd_drv *d, const json_t *params)
{
	json_t *items = json_object_get(params, "items"), *res = json_array(), *it;
	size_t i;

	if (!res)
		return NULL;
	json_array_foreach(items, i, it) {
		const char *sec = json_string_value(json_object_get(it, "section"));
		json_t *v = sec && strcmp(sec, "python") == 0
		            ? json_pack("{s:s}", "pythonPath", d->python) : json_object();

		if (!v || json_array_append_new(res, v) < 0) {
			json_decref(res);
			return NULL;
		}
	}
	return res;
}

/* Ask for the document's diagnostics now: pulled, they come at once, where
 * published ones wait for the server's backoff after a change. */
static int ask_diagnostics(struct checkd_drv *d)
{
	d->asked = d->version + INIT_ID;
	return send_msg(d, json_pack("{s:s, s:i, s:s, s:{s:{s:s}}}", "jsonrpc", "2.0", "id",
	                             (int)d->asked, "method", "textDocument/diagnostic",
	                             "params", "textDocument", "uri", d->uri));
}

static int open_document(struct checkd_drv *d, const char *text, size_t len)
{
	d->version = 1;
	if (send_msg(d, json_pack("{s:s, s:s, s:{s:{s:s, s:s, s:i, s:s%}}}", "jsonrpc",
	                          "2.0", "method", "textDocument/didOpen", "params",
	                          "textDocument", "uri", d->uri, "languageId", "python",
	                          "version", 1, "text", text, len)) < 0)
		return -1;
	return ask_diagnostics(d);
}

/* checkd_mypy.py's result, {"code": STATUS, "stdout": TEXT}, as *out and
 * *code; 0, or -1 when it is not one. */
static int mypy_answer(const json_t *result, char **out, int *code)
{
	const json_t *c = json_object_get(result, "code"), *o = json_object_get(result, "stdout");
	json_int_t v = json_integer_value(c);

	if (!json_is_integer(c) || v < 0 || v > 255 || !json_is_string(o))
		return -1;
	*out = strndup(json_string_value(o), json_string_length(o));
	if (!*out)
		return -1;
	*code = (int)v;
	return 0;
}

/*
 * One message from the server.  Returns 1 when it is the diagnostics of
 * the current version (*out, *code set), 0 to go on, -1 when broken.
 * text is the document to open once the server is initialized.
 */
static int handle(struct checkd_drv *d, const char *body, size_t n, const char *text,
                  size_t len, char **out, int *code)
{
	json_t *root;
	struct lsp_msg m;
	int ret = 0;

	if (lsp_msg_decode(body, n, &root, &m) < 0)
		return -1;
	if (m.kind == LSP_REQUEST) {
		json_t *res = strcmp(m.method, "workspace/configuration") == 0
		              ? configuration(d, m.params) : json_null();

		ret = res ? send_msg(d, json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id",
		                                  m.id, "result", res)) : -1;
	} else if (m.kind == LSP_RESPONSE && json_integer_value(m.id) == INIT_ID &&
	           !d->initialized) {
		d->initialized = true;
		ret = m.error ? -1 : send_msg(d, json_pack("{s:s, s:s, s:{}}", "jsonrpc", "2.0",
		                                          "method", "initialized", "params"));
		if (ret == 0 && text)
			ret = open_document(d, text, len);
	} else if (m.kind == LSP_RESPONSE && d->asked &&
	           json_integer_value(m.id) == d->asked) {
		size_t errors = 0;

		d->asked = 0;
		if (m.error || !m.result)
			ret = -1;
		else if (d->mypy)
			ret = mypy_answer(m.result, out, code);
		else if ((ret = lsp_diagnostics(m.result, d->cell, out, &errors)) == 0)
			*code = errors ? 1 : 0;
		if (ret == 0)
			ret = 1;
	}
	json_decref(root);
	return ret;
}

/* Handle every whole frame received; as handle(). */
static int handle_all(struct checkd_drv *d, const char *text, size_t len, char **out,
                      int *code)
{
	for (;;) {
		size_t off, n, used;
		enum lsp_frame f = lsp_frame_find(d->rx.p, d->rx.len, &off, &n, &used);
		int got;

		if (f == LSP_FRAME_MORE)
			return d->rx.over ? -1 : 0;
		if (f == LSP_FRAME_BAD)
			return -1;
		got = handle(d, d->rx.p + off, n, text, len, out, code);
		buf_drop(&d->rx, used);
		if (got != 0)
			return got;
	}
}

static void flush_tx(struct checkd_drv *d)
{
	while (d->tx.len && d->in >= 0) {
		ssize_t w = write(d->in, d->tx.p, d->tx.len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			return;
		if (w <= 0) {
			fd_close(&d->in);
			return;
		}
		buf_drop(&d->tx, (size_t)w);
	}
}

/* Talk until the diagnostics come (or, with no deadline, until nothing is
 * left to read now). */
static enum checkd_drv_result lsp_talk(struct checkd_drv *d, const char *text, size_t len,
                                   const struct timespec *deadline, char **out, int *code)
{
	for (;;) {
		struct pollfd w = { d->tx.len ? d->in : -1, POLLOUT, 0 };
		double left = deadline ? deadline_left(deadline) : 0;
		int got;

		flush_tx(d);
		if (d->in < 0 || d->tx.over)
			return CHECKD_DRV_BROKEN;
		got = handle_all(d, text, len, out, code);
		if (got < 0)
			return CHECKD_DRV_BROKEN;
		if (got == 1)
			return CHECKD_DRV_OK;
		if (d->c.out.fd < 0)
			return CHECKD_DRV_BROKEN;
		if (deadline && left <= 0)
			return CHECKD_DRV_TIMEOUT;
		w.fd = d->tx.len ? d->in : -1;
		got = proc_poll(&d->c.out, 2, &w, 1, deadline ? deadline_poll_ms(left) : 0);
		if (got < 0)
			return CHECKD_DRV_BROKEN;
		if (!deadline && got == 0) {
			flush_tx(d);
			return handle_all(d, NULL, 0, out, code) < 0 ? CHECKD_DRV_BROKEN : CHECKD_DRV_OK;
		}
	}
}

static int pyright_start(struct checkd_drv *d, const struct checkd_drv_spec *s,
                         const char *workdir, char *err, size_t errlen)
{
	char path[PATH_MAX], conf[PATH_MAX], root[PATH_MAX + 16];
	char *argv[] = { path, "--stdio", NULL };

	if (beside(s->bin, "-langserver", path, sizeof(path)) < 0) {
		snprintf(err, errlen, "no %s-langserver beside %s", strrchr(s->bin, '/') + 1, s->bin);
		return -1;
	}
	if (write_file(workdir, "pyrightconfig.json", s->config ? s->config : "{}", conf,
	               sizeof(conf), err, errlen) < 0)
		return -1;
	snprintf(root, sizeof(root), "file://%s", workdir);
	if (spawn(d, path, argv, s, workdir, err, errlen) < 0)
		return -1;
	/* Without workspaceFolders, the server ignores the root's config file. */
	return send_msg(d, json_pack("{s:s, s:i, s:s, s:{s:i, s:s, s:[{s:s, s:s}], "
	                             "s:{s:{s:b}, s:{s:{}}}}}",
	                             "jsonrpc", "2.0", "id", INIT_ID, "method", "initialize",
	                             "params", "processId", (int)getpid(), "rootUri", root,
	                             "workspaceFolders", "uri", root, "name", "dolsot",
	                             "capabilities", "workspace", "configuration", 1,
	                             "textDocument", "diagnostic"));
}

static enum checkd_drv_result pyright_check(struct checkd_drv *d, const char *text, size_t len,
                                        const struct timespec *deadline, int *code,
                                        char **out)
{
	if (d->initialized && !d->version) {
		if (open_document(d, text, len) < 0)
			return CHECKD_DRV_BROKEN;
	} else if (d->version) {
		d->version++;
		if (send_msg(d, json_pack("{s:s, s:s, s:{s:{s:s, s:i}, s:[{s:s%}]}}", "jsonrpc",
		                          "2.0", "method", "textDocument/didChange", "params",
		                          "textDocument", "uri", d->uri, "version",
		                          (int)d->version, "contentChanges", "text", text,
		                          len)) < 0 || ask_diagnostics(d) < 0)
			return CHECKD_DRV_BROKEN;
	}
	return lsp_talk(d, text, len, deadline, out, code);
}

/* ---- mypy: checkd_mypy.py ---- */

/*
 * The interpreter named by the #! line of the script bin into buf: an
 * absolute path and no argument, as Debian's /usr/bin/mypy has (a line
 * with flags or env would not start mypy the way the cold run does).
 */
static int interpreter_of(const char *bin, char *buf, size_t len)
{
	char line[SHEBANG_MAX];
	int fd = open(bin, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, line, sizeof(line) - 1) : -1;
	const char *p = line + 2;
	size_t path_len;

	if (fd >= 0)
		close(fd);
	if (n < 3 || line[0] != '#' || line[1] != '!')
		return -1;
	line[n] = '\0';
	p += strspn(p, " \t");
	path_len = strcspn(p, " \t\r\n");
	if (p[0] != '/' || path_len >= len || p[path_len + strspn(p + path_len, " \t\r")] != '\n')
		return -1;
	memcpy(buf, p, path_len);
	buf[path_len] = '\0';
	return access(buf, X_OK);
}

static int mypy_start(struct checkd_drv *d, const struct checkd_drv_spec *s,
                      const char *workdir, char *err, size_t errlen)
{
	char python[PATH_MAX], script[PATH_MAX], *argv[MAX_ARGS + 3];
	size_t n = 0;

	if (interpreter_of(s->bin, python, sizeof(python)) < 0) {
		snprintf(err, errlen, "%s has no #! line naming its interpreter alone", s->bin);
		return -1;
	}
	if (write_file(workdir, MYPY_SCRIPT, (const char *)checkd_mypy_py, script, sizeof(script),
	               err, errlen) < 0)
		return -1;
	argv[n++] = python;
	argv[n++] = script;
	for (const char *const *a = s->args; a && *a; a++) {
		if (n >= MAX_ARGS + 2) {
			snprintf(err, errlen, "more than %d flags for %s", MAX_ARGS, s->bin);
			return -1;
		}
		argv[n++] = (char *)*a;
	}
	argv[n] = NULL;
	d->mypy = true;
	d->initialized = true;      /* nothing to initialize: it reads requests at once */
	return spawn(d, python, argv, s, workdir, err, errlen);
}

/* One request per cell; its id counts the cells (d->version). */
static enum checkd_drv_result mypy_check(struct checkd_drv *d, const char *text, size_t len,
                                     const struct timespec *deadline, int *code, char **out)
{
	d->asked = ++d->version;
	if (send_msg(d, json_pack("{s:s, s:i, s:s, s:{s:s%}}", "jsonrpc", "2.0", "id",
	                          (int)d->asked, "method", "check", "params", "text", text,
	                          len)) < 0)
		return CHECKD_DRV_BROKEN;
	return lsp_talk(d, text, len, deadline, out, code);
}

/* ---- the door ---- */

struct checkd_drv *checkd_drv_start(const struct checkd_drv_spec *s, const char *workdir,
                                    char *err, size_t errlen)
{
	struct checkd_drv *d = calloc(1, sizeof(*d));
	int rc;

	if (!d) {
		snprintf(err, errlen, "cannot start a checker: %s", strerror(ENOMEM));
		return NULL;
	}
	d->c.pid = -1;
	d->c.out.fd = d->c.err.fd = d->in = -1;
	snprintf(d->cell, sizeof(d->cell), "%s/%s", workdir, CHECKD_DRV_CELL_FILE);
	snprintf(d->uri, sizeof(d->uri), "file://%s", d->cell);
	snprintf(d->python, sizeof(d->python), "%s", s->python ? s->python : "");
	if (!s->bin || s->bin[0] != '/' ||
	    (strcmp(s->kind, "pyright") != 0 && strcmp(s->kind, "mypy") != 0)) {
		snprintf(err, errlen, "no warm %s checker", s->kind);
		free(d);
		return NULL;
	}
	rc = strcmp(s->kind, "mypy") == 0 ? mypy_start(d, s, workdir, err, errlen)
	                                  : pyright_start(d, s, workdir, err, errlen);
	if (rc < 0) {
		checkd_drv_stop(d);
		return NULL;
	}
	return d;
}

enum checkd_drv_result checkd_drv_check(struct checkd_drv *d, const char *text, size_t len,
                                    const struct timespec *deadline, int *code,
                                    char **out, size_t *out_len)
{
	enum checkd_drv_result r;

	*out = NULL;
	*code = 0;
	r = d->mypy ? mypy_check(d, text, len, deadline, code, out)
	            : pyright_check(d, text, len, deadline, code, out);
	if (r != CHECKD_DRV_OK) {
		free(*out);
		*out = NULL;
	}
	*out_len = *out ? strlen(*out) : 0;
	return r;
}

int checkd_drv_fds(const struct checkd_drv *d, struct pollfd *p)
{
	int n = 0;

	if (d->c.out.fd >= 0)
		p[n++] = (struct pollfd){ .fd = d->c.out.fd, .events = POLLIN };
	if (d->c.err.fd >= 0)
		p[n++] = (struct pollfd){ .fd = d->c.err.fd, .events = POLLIN };
	return n;
}

bool checkd_drv_idle(struct checkd_drv *d)
{
	char *out = NULL;
	int code;

	if (lsp_talk(d, NULL, 0, NULL, &out, &code) != CHECKD_DRV_OK) {
		free(out);
		return false;
	}
	free(out);
	return d->c.out.fd >= 0;
}

long checkd_drv_rss_kib(const struct checkd_drv *d)
{
	char path[64], line[256];
	long kib = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)d->c.pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

int checkd_drv_pid(const struct checkd_drv *d)
{
	return (int)d->c.pid;
}

void checkd_drv_stop(struct checkd_drv *d)
{
	if (!d)
		return;
	if (d->c.pid > 0) {
		proc_kill_group(d->c.pid);
		while (waitpid(d->c.pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	fd_close(&d->in);
	fd_close(&d->c.out.fd);
	fd_close(&d->c.err.fd);
	free(d->rx.p);
	free(d->tx.p);
	free(d->junk.p);
	free(d);
}
