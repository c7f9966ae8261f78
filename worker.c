/*
 * worker.c - embedded CPython in the forked child.
 *
 * Python is initialized here, after the fork, so the parent never holds
 * interpreter state.  The interpreter starts isolated (no environment
 * variables read, no signal handlers, no site module) and we add back what
 * dolsot promises: the caller's directory, PYTHONPATH, an active
 * virtualenv's site-packages and the system site directories.
 *
 * Its rooms are in worker/: the _dolsot module, isolation, the guard of a
 * cell's processes, and the Python half (worker/py/) compiled into the binary.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <marshal.h>

#include "worker.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dolsotmod.h"
#include "fdio.h"
#include "frame.h"
#include "isolate.h"
#include "prefault.h"
#include "proc.h"
#include "rlimits.h"

extern const unsigned char worker_py[];
extern const unsigned char worker_code[];
extern const size_t worker_code_len;
extern const long worker_magic;

#define PY_VERSION_DIR "python3.11"

/* The process that answers for this call: the worker itself. */
static pid_t worker_pid;

/*
 * A cell that forks and lets the child run on (no _exit in the child)
 * brings that child back here: it must leave without answering, or its
 * result could stand for a worker that then died.
 */
static void leave_unless_worker(void)
{
	if (getpid() != worker_pid)
		_exit(0);
}

/* The worker's answer when Python never got to run the cell. */
static __attribute__((noreturn)) void answer_error(int fd, const char *msg)
{
	struct worker_result r;
	struct frame_buf buf = { 0 };

	leave_unless_worker();
	memset(&r, 0, sizeof(r));
	r.exit_code = 1;
	r.error = span_str(msg);
	if (frame_encode_result(&buf, &r) == 0 && fd_replace_mapped(fd, buf.data, buf.len) < 0)
		_exit(126);
	_exit(0);
}

static int append_path(PyConfig *c, const char *path)
{
	wchar_t *w = Py_DecodeLocale(path, NULL);
	PyStatus st;

	if (!w)
		return -1;
	st = PyWideStringList_Append(&c->module_search_paths, w);
	PyMem_RawFree(w);
	return PyStatus_Exception(st) ? -1 : 0;
}

static int append_dir_if_present(PyConfig *c, const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
		return 0;
	return append_path(c, path);
}

/* PYTHONPATH entries, in order; empty entries are skipped. */
static int append_pythonpath(PyConfig *c)
{
	const char *pp = getenv("PYTHONPATH");
	char *copy, *save = NULL;
	int ret = 0;

	if (!pp || !*pp)
		return 0;
	copy = strdup(pp);
	if (!copy)
		return -1;
	for (char *tok = strtok_r(copy, ":", &save); tok && ret == 0;
	     tok = strtok_r(NULL, ":", &save))
		ret = append_path(c, tok);
	free(copy);
	return ret;
}

static int set_paths(PyConfig *c)
{
	char cwd[PATH_MAX], buf[PATH_MAX + 64];
	const char *venv = getenv("VIRTUAL_ENV");

	c->module_search_paths_set = 1;
	if (getcwd(cwd, sizeof(cwd)) && append_path(c, cwd) < 0)
		return -1;
	if (append_pythonpath(c) < 0)
		return -1;
	if (append_path(c, PY_PREFIX "/lib/python311.zip") < 0 ||
	    append_path(c, PY_PREFIX "/lib/" PY_VERSION_DIR) < 0 ||
	    append_path(c, PY_PREFIX "/lib/" PY_VERSION_DIR "/lib-dynload") < 0)
		return -1;
	if (venv && *venv == '/') {
		snprintf(buf, sizeof(buf), "%s/lib/" PY_VERSION_DIR "/site-packages", venv);
		if (append_dir_if_present(c, buf) < 0)
			return -1;
	}
	return append_dir_if_present(c, "/usr/local/lib/" PY_VERSION_DIR "/dist-packages") |
	       append_dir_if_present(c, PY_PREFIX "/lib/python3/dist-packages") |
	       append_dir_if_present(c, PY_PREFIX "/lib/" PY_VERSION_DIR "/dist-packages");
}

static int config_set(PyConfig *c, wchar_t **field, const char *value)
{
	PyStatus st = PyConfig_SetBytesString(c, field, value);

	return PyStatus_Exception(st) ? -1 : 0;
}

/* sys.executable: a real Python, so subprocess and multiprocessing work. */
static int set_executable(PyConfig *c)
{
	const char *venv = getenv("VIRTUAL_ENV");
	char path[PATH_MAX];

	if (venv && *venv == '/') {
		snprintf(path, sizeof(path), "%s/bin/python", venv);
		if (access(path, X_OK) == 0)
			return config_set(c, &c->executable, path);
	}
	return config_set(c, &c->executable, PY_PREFIX "/bin/" PY_VERSION_DIR);
}

static int start_python(char *err, size_t errlen)
{
	PyPreConfig pre;
	PyConfig c;
	PyStatus st;
	wchar_t *argv0 = L"";

	/* UTF-8 mode: isolated start-up ignores the locale, which would leave
	 * the cell's streams ASCII-only. */
	PyPreConfig_InitIsolatedConfig(&pre);
	pre.utf8_mode = 1;
	st = Py_PreInitialize(&pre);
	if (PyStatus_Exception(st)) {
		snprintf(err, errlen, "dolsot: cannot start Python: %s",
		         st.err_msg ? st.err_msg : "unknown error");
		return -1;
	}
	PyConfig_InitIsolatedConfig(&c);
	c.site_import = 0;
	c.buffered_stdio = 0;     /* keep print() and subprocess output in order */
	c.parse_argv = 0;
	c.write_bytecode = 0;
	if (config_set(&c, &c.home, PY_PREFIX) < 0 || set_executable(&c) < 0 ||
	    set_paths(&c) < 0 ||
	    PyStatus_Exception(PyConfig_SetArgv(&c, 1, &argv0))) {
		snprintf(err, errlen, "dolsot: cannot configure Python");
		PyConfig_Clear(&c);
		return -1;
	}
	if (PyImport_AppendInittab("_dolsot", dolsotmod_init) < 0) {
		snprintf(err, errlen, "dolsot: cannot register the _dolsot module");
		PyConfig_Clear(&c);
		return -1;
	}
	st = Py_InitializeFromConfig(&c);
	PyConfig_Clear(&c);
	if (PyStatus_Exception(st)) {
		snprintf(err, errlen, "dolsot: cannot start Python: %s",
		         st.err_msg ? st.err_msg : "unknown error");
		return -1;
	}
	return 0;
}

/* The bytecode made at build time, when this interpreter reads that
 * bytecode version; else the source, compiled now. */
static PyObject *worker_code_object(void)
{
	if ((PyImport_GetMagicNumber() & 0xffff) == worker_magic) {
		PyObject *code = PyMarshal_ReadObjectFromString((const char *)worker_code,
		                                                (Py_ssize_t)worker_code_len);
		if (code && PyCode_Check(code))
			return code;
		Py_XDECREF(code);
		PyErr_Clear();
	}
	return Py_CompileString((const char *)worker_py, "<dolsot-worker>", Py_file_input);
}

static PyObject *import_worker_module(void)
{
	PyObject *code, *mod;

	code = worker_code_object();
	if (!code)
		return NULL;
	mod = PyImport_ExecCodeModule("_dolsot_worker", code);
	Py_DECREF(code);
	return mod;
}

static PyObject *span_bytes(struct span s)
{
	return PyBytes_FromStringAndSize((const char *)s.p, (Py_ssize_t)s.len);
}

static PyObject *span_unicode(struct span s)
{
	return PyUnicode_DecodeUTF8((const char *)s.p, (Py_ssize_t)s.len, "replace");
}

static PyObject *toolbox_list(const struct request *r)
{
	PyObject *list = PyList_New((Py_ssize_t)r->n_toolboxes);

	for (size_t i = 0; list && i < r->n_toolboxes; i++) {
		PyObject *t = Py_BuildValue("(NN)", span_unicode(r->toolboxes[i].module),
		                            span_unicode(r->toolboxes[i].alias));
		if (!t) {
			Py_CLEAR(list);
			break;
		}
		PyList_SET_ITEM(list, (Py_ssize_t)i, t);
	}
	return list;
}

/* The session file, mapped read-only; absent for a new session. */
static struct span session_map;

/* A live call on the state its process holds (worker_live_call): it
 * reads no session. */
static bool live_held;

/* The session as a memoryview over its mapping: no copy. */
static PyObject *blob_view(void)
{
	if (!session_map.present || live_held)
		Py_RETURN_NONE;
	return PyMemoryView_FromMemory((char *)session_map.p, (Py_ssize_t)session_map.len,
	                               PyBUF_READ);
}

/* The caller's environment as a dict, or None when the worker inherited it. */
static PyObject *env_dict(const struct request *r)
{
	PyObject *d;
	const char *p = (const char *)r->env.p, *end = p + r->env.len;

	if (!r->env.present)
		Py_RETURN_NONE;
	d = PyDict_New();
	while (d && p < end) {
		size_t n = strnlen(p, (size_t)(end - p));
		const char *eq = memchr(p, '=', n);

		if (eq && eq != p) {
			PyObject *k = PyUnicode_DecodeFSDefaultAndSize(p, eq - p);
			PyObject *v = PyUnicode_DecodeFSDefaultAndSize(eq + 1, (Py_ssize_t)n - (eq - p) - 1);

			if (!k || !v || PyDict_SetItem(d, k, v) < 0)
				Py_CLEAR(d);
			Py_XDECREF(k);
			Py_XDECREF(v);
		}
		p += n + 1;
	}
	return d;
}

/* The limits worker.py enforces or reports, by option name (rlimits.c's
 * limit_name, 0: unset). */
static PyObject *limit_dict(const struct request *r)
{
	const uint64_t *v = r->limits.v;
	PyObject *d = PyDict_New();

	for (int k = 0; d && k < LIMIT_COUNT; k++) {
		PyObject *n = PyLong_FromUnsignedLongLong(v[k]);

		if (!n || PyDict_SetItemString(d, limit_name((enum limit_kind)k), n) < 0)
			Py_CLEAR(d);
		Py_XDECREF(n);
	}
	return d;
}

/* --describe's mounts as [(path, mode)], or None. */
static PyObject *describe_list(const struct request *r)
{
	struct span rest = r->describe, path, mode;
	PyObject *list;

	if (!(r->flags & REQ_DESCRIBE))
		Py_RETURN_NONE;
	list = PyList_New(0);
	while (list && span_next_item(&rest, &path) && span_next_item(&rest, &mode)) {
		PyObject *t = Py_BuildValue("(NN)", span_unicode(path), span_unicode(mode));

		if (!t || PyList_Append(list, t) < 0)
			Py_CLEAR(list);
		Py_XDECREF(t);
	}
	return list;
}

static PyObject *py_run(PyObject *mod, const struct request *r, int tools_fd)
{
	PyObject *units = r->units.len ? PyUnicode_DecodeFSDefaultAndSize(
	                          (const char *)r->units.p, (Py_ssize_t)r->units.len) :
	                  Py_NewRef(Py_None);

	PyObject *tools = r->tools.present
	                  ? Py_BuildValue("(iN)", tools_fd, span_unicode(r->tools))
	                  : Py_NewRef(Py_None);

	return PyObject_CallMethod(mod, "run", "(NNNNKKNNNNN)", span_bytes(r->code),
	                           span_unicode(r->session), blob_view(),
	                           toolbox_list(r), (unsigned long long)r->max_output,
	                           (unsigned long long)r->flags, env_dict(r),
	                           limit_dict(r), describe_list(r), units, tools);
}

/* A str field of the answer as a span; None gives an absent span.  Text
 * that had to be encoded anew lives in keep (a list) until the result is
 * encoded. */
static int str_span(PyObject *o, struct span *out, PyObject *keep)
{
	Py_ssize_t n;
	const char *s;

	if (o == Py_None)
		return 0;
	s = PyUnicode_AsUTF8AndSize(o, &n);
	if (!s) {
		/* Lone surrogates from a cell: keep the text, replace the bytes. */
		PyErr_Clear();
		o = PyUnicode_AsEncodedString(o, "utf-8", "backslashreplace");
		if (!o)
			return -1;
		if (PyList_Append(keep, o) < 0) {
			Py_DECREF(o);
			return -1;
		}
		Py_DECREF(o);   /* keep holds it */
		s = PyBytes_AS_STRING(o);
		n = PyBytes_GET_SIZE(o);
	}
	*out = (struct span){ (const uint8_t *)s, (size_t)n, true };
	return 0;
}

/* *parts is the new session's list of parts (borrowed), or None. */
/* A field of worker.py's answer (a dict built by answer()); None when absent. */
static PyObject *field(PyObject *answer, const char *name)
{
	PyObject *v = PyDict_GetItemString(answer, name);   /* borrowed */

	return v ? v : Py_None;
}

/* Fill r from the answer, field by field under frame.c's names. */
static int fill_result(PyObject *t, struct worker_result *r, PyObject **parts,
                       PyObject *keep)
{
	struct span *text;
	const char *name;

	if (!PyDict_Check(t))
		return -1;
	r->exit_code = PyLong_AsLongLong(field(t, "exit_code"));
	r->flags = PyLong_AsUnsignedLongLong(field(t, "flags"));
	if (field(t, "count") != Py_None)
		r->count = PyLong_AsUnsignedLongLong(field(t, "count"));
	if (PyErr_Occurred())
		return -1;
	for (size_t i = 0; (text = frame_result_text(r, i, &name)); i++)
		if (str_span(field(t, name), text, keep) < 0)
			return -1;
	*parts = field(t, "blob");
	return *parts == Py_None || PyList_Check(*parts) ? 0 : -1;
}

/* Copy the parts back to back into fd through a mapping: under
 * --max-file-size, as fd_replace_mapped does.  0 or -1 (errno). */
static int map_parts(int fd, const Py_buffer *b, size_t n, size_t total)
{
	uint8_t *map;
	size_t off = 0;

	if (ftruncate(fd, (off_t)total) < 0)
		return -1;
	if (total == 0)
		return 0;
	map = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return -1;
	for (size_t i = 0; i < n; i++) {
		memcpy(map + off, b[i].buf, (size_t)b[i].len);
		off += (size_t)b[i].len;
	}
	return munmap(map, total);
}

/*
 * Write the new session, a list of bytes-like parts, into the save fd
 * straight from the Python objects (no joined copy).  Returns 0 and its
 * length in *len, -1 on a Python error, or an errno when writing failed.
 */
static int write_session(int fd, PyObject *parts, bool mapped, uint64_t *len)
{
	Py_ssize_t n = PyList_GET_SIZE(parts), got = 0;
	Py_buffer *b = PyMem_Calloc((size_t)n + 1, sizeof(*b));
	int ret = 0;

	*len = 0;
	if (!b)
		return -1;
	for (; got < n; got++) {
		if (PyObject_GetBuffer(PyList_GET_ITEM(parts, got), &b[got], PyBUF_SIMPLE) < 0) {
			ret = -1;
			goto out;
		}
		*len += (uint64_t)b[got].len;
	}
	if (mapped) {
		ret = map_parts(fd, b, (size_t)n, (size_t)*len) < 0 ? errno : 0;
		goto out;
	}
	for (Py_ssize_t i = 0; i < n && ret == 0; i++)
		if (fd_write_all(fd, b[i].buf, (size_t)b[i].len) < 0)
			ret = errno;
out:
	for (Py_ssize_t i = 0; i < got; i++)
		PyBuffer_Release(&b[i]);
	PyMem_Free(b);
	return ret;
}

/* A Python exception in the worker's own code: report it as a failure. */
static __attribute__((noreturn)) void answer_python_error(int fd, const char *what)
{
	PyObject *type, *value, *tb, *s = NULL;
	char msg[1024];

	PyErr_Fetch(&type, &value, &tb);
	if (value)
		s = PyObject_Str(value);
	snprintf(msg, sizeof(msg), "dolsot: %s: %s: %s", what,
	         type ? ((PyTypeObject *)type)->tp_name : "error",
	         s && PyUnicode_Check(s) ? PyUnicode_AsUTF8(s) : "(no message)");
	PyErr_Clear();
	answer_error(fd, msg);
}

/* Map and decode the request; answers and exits on failure.  Returns
 * the mapping, which r points into (a live process unmaps it after the
 * call: request_unmap). */
static struct span read_request(int request_fd, int result_fd, struct request *r)
{
	struct stat st;
	uint8_t *req;
	char err[1024];

	memset(r, 0, sizeof(*r));
	if (fstat(request_fd, &st) < 0 || st.st_size <= 0)
		answer_error(result_fd, "dolsot: worker: cannot read the request");
	req = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, request_fd, 0);
	if (req == MAP_FAILED)
		answer_error(result_fd, "dolsot: worker: cannot map the request");
	if (frame_decode_request(req, (size_t)st.st_size, r, err, sizeof(err)) < 0)
		answer_error(result_fd, err);
	dolsotmod_begin(r, result_fd);
	return (struct span){ req, (size_t)st.st_size, true };
}

static void request_unmap(struct span req)
{
	munmap((void *)req.p, req.len);
}

/* "cannot be loaded" as session.py words it, and exit. */
static __attribute__((noreturn)) void answer_unloadable(int fd, const struct request *r,
                                                        const char *why)
{
	char msg[1024];

	snprintf(msg, sizeof(msg), "dolsot: session '%.*s' cannot be loaded: %s; run "
	         "'dolsot --reset %.*s' to start it afresh", (int)r->session.len,
	         (const char *)r->session.p, why, (int)r->session.len,
	         (const char *)r->session.p);
	answer_error(fd, msg);
}

/*
 * Map the session the request announces (REQ_SESSION, blob_len bytes) from
 * fds->load, then close that fd.  The mapping stays: the loaded session's
 * carried pieces are views into it.  Answers and exits on failure.
 */
static void map_session(struct worker_fds *fds, const struct request *r)
{
	struct stat st;
	void *p = (void *)"";
	char msg[256];

	if (!(r->flags & REQ_SESSION))
		return;
	if (fds->load < 0 || fstat(fds->load, &st) < 0)
		answer_unloadable(fds->result, r, "the worker got no session file");
	if ((uint64_t)st.st_size != r->blob_len)
		answer_unloadable(fds->result, r, "its file changed size while it was read");
	if (st.st_size > 0) {
		p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fds->load, 0);
		if (p == MAP_FAILED) {
			snprintf(msg, sizeof(msg), "dolsot: worker: cannot map the session: %s",
			         strerror(errno));
			answer_error(fds->result, msg);
		}
	}
	close(fds->load);
	fds->load = -1;
	session_map = (struct span){ p, (size_t)st.st_size, true };
}

/* Run the request with Python up and write the session and the answer;
 * returns the answer's RES_* flags, and in *limit whether the cell hit a
 * limit.  Exits when the answer cannot be written. */
static uint64_t answer_request(PyObject *mod, const struct request *r,
                               const struct worker_fds *fds, bool *limit)
{
	struct worker_result res;
	struct frame_buf buf = { 0 };
	char err[1024];
	PyObject *answer, *parts, *keep;
	int result_fd = fds->result, rc;

	answer = py_run(mod, r, fds->tools);
	leave_unless_worker();
	if (!answer)
		answer_python_error(result_fd, "worker failed");
	memset(&res, 0, sizeof(res));
	keep = PyList_New(0);
	if (!keep || fill_result(answer, &res, &parts, keep) < 0)
		answer_python_error(result_fd, "worker answered badly");
	if (parts != Py_None) {
		rc = write_session(fds->save, parts, r->limits.v[LIMIT_MAX_FILE_SIZE] != 0 || fd_grow_sealed(fds->save),
		                   &res.blob_len);
		if (rc < 0)
			answer_python_error(result_fd, "cannot write the session");
		res.save_errno = (uint64_t)rc;
		if (res.blob_len == 0)
			res.flags &= ~(uint64_t)RES_SAVE;   /* nothing to save: no blob */
	}
	if (frame_encode_result(&buf, &res) < 0) {
		snprintf(err, sizeof(err), "dolsot: cannot encode the result: %s",
		         strerror(errno));
		answer_error(result_fd, err);
	}
	if (fd_replace_mapped(result_fd, buf.data, buf.len) < 0)
		_exit(126);
	frame_buf_release(&buf);
	/* The answer holds the new session's parts: a live process goes on
	 * after it, and must not keep one copy of its state per call. */
	Py_DECREF(keep);
	Py_DECREF(answer);
	*limit = res.limit.present;
	return res.flags;
}

/* Run the request with Python up, write the session and the answer, and
 * _exit. */
static __attribute__((noreturn)) void serve(PyObject *mod, const struct request *r,
                                            const struct worker_fds *fds)
{
	bool limit;

	(void)answer_request(mod, r, fds, &limit);
	prefault_learn();
	/* Nothing the cell started outlives it, on either path. */
	proc_kill_descendants();
	/* Skip interpreter shutdown: atexit handlers, threads and finalizers
	 * of the cell must not delay or change the call. */
	_exit(0);
}

/*
 * Enter the isolation the request asks for.  With a sandbox, the process
 * that goes on (and answers) is a new one, whichever way it ends.
 */
static void isolate(const struct request *r, const struct worker_fds *fds,
                    const struct isolate_hold *hold)
{
	char err[1024];
	int rc = isolate_worker(r, fds, hold, err, sizeof(err));

	worker_pid = getpid();
	if (rc < 0)
		answer_error(fds->result, err);
}

void worker_child(const struct worker_fds *given, void *arg)
{
	struct worker_fds fds = *given;
	struct request r;
	char err[1024];
	PyObject *mod;

	(void)arg;
	worker_pid = getpid();
	read_request(fds.request, fds.result, &r);
	map_session(&fds, &r);
	isolate(&r, &fds, NULL);
	if (start_python(err, sizeof(err)) < 0)
		answer_error(fds.result, err);
	mod = import_worker_module();
	if (!mod)
		answer_python_error(fds.result, "cannot load the worker module");
	serve(mod, &r, &fds);
}

/* The worker module of a zygote, kept for the children it forks. */
static PyObject *zygote_module;

/* "dolsot: WHAT: Type: message" from the pending Python exception. */
static void python_error_text(const char *what, char *err, size_t errlen)
{
	PyObject *type, *value, *tb, *s = NULL;

	PyErr_Fetch(&type, &value, &tb);
	if (value)
		s = PyObject_Str(value);
	snprintf(err, errlen, "%s: %s: %s", what,
	         type ? ((PyTypeObject *)type)->tp_name : "error",
	         s && PyUnicode_Check(s) ? PyUnicode_AsUTF8(s) : "(no message)");
	Py_XDECREF(s);
	Py_XDECREF(type);
	Py_XDECREF(value);
	Py_XDECREF(tb);
	PyErr_Clear();
}

/* names as a new Python list, or NULL with the exception set. */
static PyObject *name_list(const char *const *names, size_t n)
{
	PyObject *list = PyList_New(0);

	for (size_t i = 0; list && i < n; i++) {
		PyObject *name = PyUnicode_FromString(names[i]);

		if (!name || PyList_Append(list, name) < 0)
			Py_CLEAR(list);
		Py_XDECREF(name);
	}
	return list;
}

/* warm_up's or grow's answer (worker.py) into *r; 0, or -1 with err. */
static int take_ready(PyObject *answer, const char *const *preload, size_t n_preload,
                      struct zygote_ready *r, char *err, size_t errlen)
{
	const char *files = NULL, *loaded = NULL, *why = NULL;
	Py_ssize_t index = -1;

	if (!answer || !PyArg_ParseTuple(answer, "zznz", &files, &loaded, &index, &why)) {
		Py_XDECREF(answer);
		python_error_text("cannot prepare the zygote", err, errlen);
		return -1;
	}
	if (index >= 0 && (size_t)index < n_preload) {
		snprintf(err, errlen, "module %s is not imported ahead of calls: %s",
		         preload[index], why ? why : "it misbehaved");
		r->refused = (size_t)index + 1;
		Py_DECREF(answer);
		return -1;
	}
	r->files = strdup(files ? files : "");
	r->loaded = strdup(loaded ? loaded : "");
	Py_DECREF(answer);
	if (!r->files || !r->loaded) {
		free(r->files);
		free(r->loaded);
		snprintf(err, errlen, "cannot list the zygote's modules: %s", strerror(errno));
		return -1;
	}
	prefault_open();   /* the zygote is ready: a book for its spares */
	return 0;
}

int worker_zygote_init(const char *const *modules, size_t n, const char *const *preload,
                       size_t n_preload, struct zygote_ready *r, char *err, size_t errlen)
{
	PyObject *answer = NULL, *tools = NULL, *pre = NULL;

	memset(r, 0, sizeof(*r));
	if (start_python(err, errlen) < 0)
		return -1;
	zygote_module = import_worker_module();
	if (zygote_module && (tools = name_list(modules, n)) && (pre = name_list(preload, n_preload)))
		answer = PyObject_CallMethod(zygote_module, "warm_up", "(OO)", tools, pre);
	Py_XDECREF(tools);
	Py_XDECREF(pre);
	return take_ready(answer, preload, n_preload, r, err, errlen);
}

static int python_after_fork(void);

int worker_zygote_grow(const char *const *preload, size_t n_preload, struct zygote_ready *r,
                       char *err, size_t errlen)
{
	PyObject *answer = NULL, *pre;

	memset(r, 0, sizeof(*r));
	if (python_after_fork() < 0) {
		python_error_text("cannot grow the zygote", err, errlen);
		return -1;
	}
	pre = name_list(preload, n_preload);
	if (pre)
		answer = PyObject_CallMethod(zygote_module, "grow", "(O)", pre);
	Py_XDECREF(pre);
	return take_ready(answer, preload, n_preload, r, err, errlen);
}

void worker_before_fork(void)
{
	PyOS_BeforeFork();
}

void worker_after_fork_parent(void)
{
	PyOS_AfterFork_Parent();
}

/* Python's after-fork work is done in this process (a spare). */
static bool python_forked;

/* Python's own after-fork work (its fork hooks, the worker's after_fork):
 * 0, or -1 with the exception set. */
static int python_after_fork(void)
{
	PyObject *done;

	PyOS_AfterFork_Child();
	done = PyObject_CallMethod(zygote_module, "after_fork", NULL);
	Py_XDECREF(done);
	return done ? 0 : -1;
}

int worker_zygote_spare(void)
{
	if (python_after_fork() < 0) {
		PyErr_Clear();
		return -1;
	}
	python_forked = true;
	prefault_apply();
	return 0;
}

/* A warm worker works in its caller's directory (the request's cwd). */
static void enter_call_dir(const struct request *r, int result_fd)
{
	char cwd[PATH_MAX], err[PATH_MAX + 128];

	if (!r->cwd.present)
		return;
	snprintf(cwd, sizeof(cwd), "%.*s", (int)r->cwd.len, (const char *)r->cwd.p);
	if (chdir(cwd) < 0) {
		snprintf(err, sizeof(err), "dolsot: cannot enter the directory '%s': %s",
		         cwd, strerror(errno));
		answer_error(result_fd, err);
	}
}

void worker_zygote_child(const struct worker_fds *given)
{
	struct worker_fds fds = *given;
	int result_fd = fds.result;
	struct request r;

	/* Up to Python's own after-fork work, only C runs: with a sandbox that
	 * work is done in the sandboxed process (a fork of this one), again if
	 * this is a spare, which did it before the call. */
	worker_pid = getpid();
	read_request(fds.request, fds.result, &r);
	map_session(&fds, &r);
	enter_call_dir(&r, result_fd);
	if (r.flags & REQ_SANDBOX)
		prefault_forget();   /* a sandboxed cell sees nothing of other calls */
	isolate(&r, &fds, NULL);
	if ((!python_forked || (r.flags & REQ_SANDBOX)) && python_after_fork() < 0)
		answer_python_error(result_fd, "worker failed after fork");
	serve(zygote_module, &r, &fds);
}

/* ---- live sessions (live.h) ---- */

/* The main thread's state while a live process waits for its next call. */
static PyThreadState *live_idle_state;

bool worker_live_call(const struct worker_fds *given, bool held,
                      const struct isolate_hold *hold)
{
	struct worker_fds fds = *given;
	struct request r;
	struct span req;
	uint64_t flags;
	bool limit = false;

	worker_pid = getpid();
	req = read_request(fds.request, fds.result, &r);
	live_held = held;
	if (held) {
		fd_close(&fds.load);   /* the process holds the state the store has */
	} else {
		map_session(&fds, &r);
		enter_call_dir(&r, fds.result);
		isolate(&r, &fds, hold);
		if (!python_forked && python_after_fork() < 0)
			answer_python_error(fds.result, "worker failed after fork");
		python_forked = true;
	}
	flags = answer_request(zygote_module, &r, &fds, &limit);
	request_unmap(req);
	/* A cell that ran and was not saved (it hit a limit, ended the
	 * interpreter, or the session could not be pickled) did not complete. */
	return !limit && !((flags & RES_RAN) && !(flags & RES_SAVE));
}

void worker_live_idle(void)
{
	live_idle_state = PyEval_SaveThread();
}

void worker_live_wake(void)
{
	PyEval_RestoreThread(live_idle_state);
}

pid_t worker_live_fork(void)
{
	pid_t pid;

	PyOS_BeforeFork();
	pid = fork();
	if (pid == 0) {
		PyOS_AfterFork_Child();
		prefault_forget();   /* a live process is no spare */
	} else
		PyOS_AfterFork_Parent();
	return pid;
}
