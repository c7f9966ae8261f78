/*
 * dolsotmod.c - the _dolsot built-in module, the worker Python code's door to
 * the C side: the call's deadline, the type checker runner and parsers of
 * typegate.h, and the Python modules compiled into the binary (files.py, gate.py,
 * hints.py, session.py, state.py), imported when a call needs them.
 */
#include "dolsotmod.h"

#include <marshal.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "deadline.h"
#include "fdio.h"
#include "output.h"
#include "rlimits.h"
#include "sha256.h"
#include "checkd.h"
#include "typegate.h"
#include "flat.h"
#include "unitmap.h"

/* Made by tools/embed.py: the source, its bytecode and the bytecode magic. */
#define EMBEDDED(name) \
	extern const unsigned char name##_py[], name##_code[]; \
	extern const size_t name##_code_len; \
	extern const long name##_magic
EMBEDDED(files);
EMBEDDED(gate);
EMBEDDED(hints);
EMBEDDED(session);
EMBEDDED(state);
EMBEDDED(rich);
EMBEDDED(describe);
EMBEDDED(reach);
EMBEDDED(hostcall);

struct embedded {
	const char *name;
	const unsigned char *source;
	const unsigned char *code;
	const size_t *code_len;   /* sizes are not constant expressions across files */
	const long *magic;
};

#define EMBED(name) { #name, name##_py, name##_code, &name##_code_len, &name##_magic }

static struct timespec deadline;
static bool have_deadline;
static char *ty_bin;
static char *checker_path;   /* the warm checker's DIR/NAME, or NULL */

static int result_fd = -1;

void dolsotmod_begin(const struct request *r, int result)
{
	result_fd = result;
	deadline_in_ns(&deadline, r->budget_ns);
	have_deadline = r->budget_ns > 0;
	free(ty_bin);
	ty_bin = NULL;
	if (r->ty_bin.present && r->ty_bin.len)
		ty_bin = strndup((const char *)r->ty_bin.p, r->ty_bin.len);
	free(checker_path);
	checker_path = NULL;
	if (r->checkd.present && r->checkd.len && !(r->flags & REQ_SANDBOX))
		checker_path = strndup((const char *)r->checkd.p, r->checkd.len);
}

static double seconds_left(void)
{
	if (!have_deadline)
		return 1e9;
	return deadline_left(&deadline);
}

static PyObject *m_seconds_left(PyObject *self, PyObject *noargs)
{
	(void)self;
	(void)noargs;
	return PyFloat_FromDouble(seconds_left());
}

static PyObject *m_ty_bin(PyObject *self, PyObject *noargs)
{
	(void)self;
	(void)noargs;
	return PyUnicode_DecodeFSDefault(ty_bin ? ty_bin : "ty");
}

/*
 * note_held(names): what the session holds as the cell begins (names,
 * '\n'-separated), as a RES_PROVISIONAL answer in the result file, which
 * the real answer replaces; a call that ends without one (a timeout, a
 * killed worker) still says what the session holds, since it rolls back.
 */
static PyObject *m_note_held(PyObject *self, PyObject *arg)
{
	struct worker_result r;
	struct frame_buf buf = { 0 };
	const char *names;
	Py_ssize_t len;
	int rc;

	(void)self;
	names = PyUnicode_AsUTF8AndSize(arg, &len);
	if (!names)
		return NULL;
	if (result_fd < 0)
		Py_RETURN_NONE;
	memset(&r, 0, sizeof(r));
	r.exit_code = 1;
	r.flags = RES_PROVISIONAL;
	r.held = (struct span){ (const uint8_t *)names, (size_t)len, true };
	rc = frame_encode_result(&buf, &r);
	if (rc == 0)
		rc = fd_replace_mapped(result_fd, buf.data, buf.len);
	frame_buf_release(&buf);
	return rc < 0 ? PyErr_SetFromErrno(PyExc_OSError) : Py_NewRef(Py_None);
}

static PyObject *m_which(PyObject *self, PyObject *arg)
{
	PyObject *bytes, *res;
	char *path;

	(void)self;
	if (!PyUnicode_FSConverter(arg, &bytes))
		return NULL;
	path = typegate_which(PyBytes_AS_STRING(bytes));
	Py_DECREF(bytes);
	if (!path)
		Py_RETURN_NONE;
	res = PyUnicode_DecodeFSDefault(path);
	free(path);
	return res;
}

static PyObject *m_checker_kind(PyObject *self, PyObject *arg)
{
	PyObject *bytes, *res;

	(void)self;
	if (!PyUnicode_FSConverter(arg, &bytes))
		return NULL;
	res = PyUnicode_FromString(typegate_checker_name(typegate_checker_of(PyBytes_AS_STRING(bytes))));
	Py_DECREF(bytes);
	return res;
}

/* A list of str as a NULL-terminated array of fs-encoded bytes; *keep owns them. */
static const char **str_array(PyObject *list, PyObject **keep)
{
	Py_ssize_t n;
	const char **v;

	*keep = NULL;
	if (!PyList_Check(list)) {
		PyErr_SetString(PyExc_TypeError, "expected a list of str");
		return NULL;
	}
	n = PyList_GET_SIZE(list);
	v = PyMem_Calloc((size_t)n + 1, sizeof(*v));
	*keep = PyList_New(n);
	if (!v || !*keep) {
		PyMem_Free(v);
		Py_CLEAR(*keep);
		return (const char **)PyErr_NoMemory();
	}
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *b;

		if (!PyUnicode_FSConverter(PyList_GET_ITEM(list, i), &b)) {
			PyMem_Free(v);
			Py_CLEAR(*keep);
			return NULL;
		}
		PyList_SET_ITEM(*keep, i, b);
		v[i] = PyBytes_AS_STRING(b);
	}
	return v;
}

static const char *status_name(enum typegate_run_status s)
{
	switch (s) {
	case TYPEGATE_RUN_EXITED:
		return "exited";
	case TYPEGATE_RUN_SIGNALED:
		return "signaled";
	case TYPEGATE_RUN_TIMEOUT:
		return "timeout";
	case TYPEGATE_RUN_NOT_FOUND:
		return "not-found";
	case TYPEGATE_RUN_CANNOT_START:
	default:
		return "cannot-start";
	}
}

/*
 * run_checker(argv, env, cwd, seconds, cap) -> (status, code, out, err, elapsed)
 * status: "exited" (code = exit status), "signaled" (code = signal),
 * "timeout", "not-found", "cannot-start" (code = errno).
 */
static PyObject *m_run_checker(PyObject *self, PyObject *args)
{
	PyObject *argv_list, *env_list, *cwd_obj, *keep_argv = NULL, *keep_env = NULL;
	PyObject *cwd_bytes = NULL, *res = NULL;
	const char **argv = NULL, **envp = NULL;
	double seconds;
	Py_ssize_t cap;
	struct timespec d;
	struct typegate_run r;
	char err[512];
	int rc;

	(void)self;
	if (!PyArg_ParseTuple(args, "OOOdn", &argv_list, &env_list, &cwd_obj, &seconds, &cap))
		return NULL;
	if (cap < 1 || !(seconds > 0) || seconds > 1e7) {
		PyErr_SetString(PyExc_ValueError, "cap and seconds must be positive");
		return NULL;
	}
	if (!(argv = str_array(argv_list, &keep_argv)) || !argv[0])
		goto out;
	if (env_list != Py_None && !(envp = str_array(env_list, &keep_env)))
		goto out;
	if (cwd_obj != Py_None && !PyUnicode_FSConverter(cwd_obj, &cwd_bytes))
		goto out;
	deadline_in(&d, seconds);
	Py_BEGIN_ALLOW_THREADS
	rc = typegate_run(argv, envp, cwd_bytes ? PyBytes_AS_STRING(cwd_bytes) : NULL, &d,
	            (size_t)cap, &r, err, sizeof(err));
	Py_END_ALLOW_THREADS
	if (rc < 0) {
		PyErr_Format(PyExc_OSError, "%s", err);
		goto out;
	}
	res = Py_BuildValue("(siy#y#d)", status_name(r.status), r.code, r.out,
	                    (Py_ssize_t)r.out_len, r.err, (Py_ssize_t)r.err_len, r.seconds);
	typegate_run_release(&r);
out:
	if (argv && !argv[0] && !PyErr_Occurred())
		PyErr_SetString(PyExc_ValueError, "empty argv");
	PyMem_Free(argv);
	PyMem_Free(envp);
	Py_XDECREF(keep_argv);
	Py_XDECREF(keep_env);
	Py_XDECREF(cwd_bytes);
	return res;
}

static PyObject *m_warm_checker(PyObject *self, PyObject *noargs)
{
	(void)self;
	(void)noargs;
	if (!checker_path)
		Py_RETURN_NONE;
	return PyUnicode_DecodeFSDefault(checker_path);
}

/*
 * check_warm(path, kind, bin, python, config, args, env, text, seconds)
 * -> what run_checker returns, from the warm checker at path (checkd.h),
 * or None when it could not check (run the checker cold).
 */
static PyObject *m_check_warm(PyObject *self, PyObject *args)
{
	const char *path, *kind, *bin, *python, *config;
	PyObject *args_list, *env_list, *keep_args = NULL, *keep_env = NULL, *res = NULL;
	const char **argv = NULL, **envp = NULL;
	Py_buffer text;
	double seconds;
	struct timespec d;
	struct typegate_run r;
	struct checkd_drv_spec spec;
	int got;

	(void)self;
	if (!PyArg_ParseTuple(args, "sssssOOy*d", &path, &kind, &bin, &python, &config,
	                      &args_list, &env_list, &text, &seconds))
		return NULL;
	if (!(seconds > 0) || seconds > 1e7) {
		PyErr_SetString(PyExc_ValueError, "seconds must be positive");
		goto out;
	}
	if (!(argv = str_array(args_list, &keep_args)) || !(envp = str_array(env_list, &keep_env)))
		goto out;
	spec = (struct checkd_drv_spec){ kind, bin, python, config, argv, envp };
	deadline_in(&d, seconds);
	Py_BEGIN_ALLOW_THREADS
	got = checkd_ask(path, &spec, text.buf, (size_t)text.len, &d, &r);
	Py_END_ALLOW_THREADS
	if (!got) {
		res = Py_NewRef(Py_None);
		goto out;
	}
	res = Py_BuildValue("(siy#y#d)", status_name(r.status), r.code, r.out ? r.out : "",
	                    (Py_ssize_t)r.out_len, "", (Py_ssize_t)0, r.seconds);
	typegate_run_release(&r);
out:
	PyBuffer_Release(&text);
	PyMem_Free(argv);
	PyMem_Free(envp);
	Py_XDECREF(keep_args);
	Py_XDECREF(keep_env);
	return res;
}

static const char *severity_name(enum typegate_severity s)
{
	switch (s) {
	case TYPEGATE_SEV_ERROR:
		return "error";
	case TYPEGATE_SEV_WARNING:
		return "warning";
	case TYPEGATE_SEV_NOTE:
	default:
		return "note";
	}
}

static PyObject *diag_tuple(const struct typegate_diag *g)
{
	return Py_BuildValue("(NkksNN)",
	                     PyUnicode_DecodeUTF8(g->path, (Py_ssize_t)strlen(g->path), "replace"),
	                     g->line, g->col, severity_name(g->severity),
	                     g->code ? PyUnicode_DecodeUTF8(g->code, (Py_ssize_t)strlen(g->code),
	                                                    "replace")
	                             : Py_NewRef(Py_None),
	                     PyUnicode_DecodeUTF8(g->message, (Py_ssize_t)strlen(g->message),
	                                          "replace"));
}

static enum typegate_checker kind_named(const char *name)
{
	if (strcmp(name, "ty") == 0)
		return TYPEGATE_TY;
	if (strcmp(name, "mypy") == 0)
		return TYPEGATE_MYPY;
	if (strcmp(name, "pyright") == 0)
		return TYPEGATE_PYRIGHT;
	return TYPEGATE_GENERIC;
}

/*
 * parse(kind, output) -> [(path, line, col, severity, code, message)], or
 * None when the output is not in that checker's format.
 */
static PyObject *m_parse(PyObject *self, PyObject *args)
{
	const char *kind;
	Py_buffer out;
	struct typegate_diags d;
	PyObject *list = NULL;

	(void)self;
	if (!PyArg_ParseTuple(args, "sy*", &kind, &out))
		return NULL;
	if (typegate_parse(kind_named(kind), out.buf, (size_t)out.len, &d) < 0) {
		typegate_diags_release(&d);
		PyBuffer_Release(&out);
		Py_RETURN_NONE;
	}
	list = PyList_New((Py_ssize_t)d.n);
	for (size_t i = 0; list && i < d.n; i++) {
		PyObject *t = diag_tuple(&d.v[i]);

		if (!t) {
			Py_CLEAR(list);
			break;
		}
		PyList_SET_ITEM(list, (Py_ssize_t)i, t);
	}
	typegate_diags_release(&d);
	PyBuffer_Release(&out);
	return list;
}

/* The build's bytecode when this interpreter reads it, else the source compiled. */
static PyObject *code_of(const struct embedded *e)
{
	char filename[64];

	if ((PyImport_GetMagicNumber() & 0xffff) == *e->magic) {
		PyObject *code = PyMarshal_ReadObjectFromString((const char *)e->code,
		                                                (Py_ssize_t)*e->code_len);

		if (code && PyCode_Check(code))
			return code;
		Py_XDECREF(code);
		PyErr_Clear();
	}
	snprintf(filename, sizeof(filename), "<dolsot-%s>", e->name);
	return Py_CompileString((const char *)e->source, filename, Py_file_input);
}

/* embedded(name) -> the module name.py compiled into the binary, imported once. */
static PyObject *m_embedded(PyObject *self, PyObject *arg)
{
	static const struct embedded modules[] = {
		EMBED(files), EMBED(gate), EMBED(hints), EMBED(session), EMBED(state),
		EMBED(rich), EMBED(describe), EMBED(reach), EMBED(hostcall),
	};
	const char *name = PyUnicode_Check(arg) ? PyUnicode_AsUTF8(arg) : NULL;
	struct embedded e = { NULL, NULL, NULL, NULL, NULL };
	char modname[64];
	PyObject *code, *mod, *key;

	(void)self;
	if (!name)
		return PyErr_Occurred() ? NULL : PyErr_Format(PyExc_TypeError, "expected str");
	for (size_t i = 0; i < sizeof(modules) / sizeof(*modules); i++)
		if (strcmp(name, modules[i].name) == 0)
			e = modules[i];
	if (!e.name)
		return PyErr_Format(PyExc_ImportError, "no embedded module %s", name);
	snprintf(modname, sizeof(modname), "_dolsot_%s", name);
	key = PyUnicode_FromString(modname);
	if (!key)
		return NULL;
	mod = PyImport_GetModule(key);
	Py_DECREF(key);
	if (mod || PyErr_Occurred())
		return mod;
	code = code_of(&e);
	if (!code)
		return NULL;
	mod = PyImport_ExecCodeModule(modname, code);
	Py_DECREF(code);
	return mod;
}

/* sha256(part) or sha256([parts]): the SHA-256 of bytes-like parts back
 * to back, as 32 bytes; the hash that names a session's units.  The GIL
 * is let go while it hashes. */
static PyObject *m_sha256(PyObject *self, PyObject *arg)
{
	uint8_t out[SHA256_LEN];
	PyObject *seq = PyList_Check(arg) || PyTuple_Check(arg) ?
	                PySequence_Fast(arg, "parts") : PyTuple_Pack(1, arg);
	Py_ssize_t n, got = 0;
	Py_buffer *b = NULL;
	struct iovec *v = NULL;

	(void)self;
	if (!seq)
		return NULL;
	n = PySequence_Fast_GET_SIZE(seq);
	b = PyMem_Calloc((size_t)n + 1, sizeof(*b));
	v = PyMem_Calloc((size_t)n + 1, sizeof(*v));
	if (!b || !v) {
		PyErr_NoMemory();
		goto out;
	}
	for (; got < n; got++) {
		if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(seq, got), &b[got],
		                       PyBUF_SIMPLE) < 0)
			goto out;
		v[got] = (struct iovec){ b[got].buf, (size_t)b[got].len };
	}
	Py_BEGIN_ALLOW_THREADS
	sha256_parts(v, (size_t)n, out);
	Py_END_ALLOW_THREADS
out:
	for (Py_ssize_t i = 0; i < got; i++)
		PyBuffer_Release(&b[i]);
	PyMem_Free(b);
	PyMem_Free(v);
	Py_DECREF(seq);
	return PyErr_Occurred() ? NULL :
	       PyBytes_FromStringAndSize((const char *)out, SHA256_LEN);
}

static PyMethodDef methods[] = {
	{ "seconds_left", m_seconds_left, METH_NOARGS,
	  "Seconds left before the call's deadline." },
	{ "ty_bin", m_ty_bin, METH_NOARGS, "The type checker the call names." },
	{ "note_held", m_note_held, METH_O,
	  "Leave what the session holds in the result file, for a call that ends "
	  "without an answer." },
	{ "which", m_which, METH_O, "Look an executable up in PATH." },
	{ "checker_kind", m_checker_kind, METH_O,
	  "The output format of a checker binary: ty, mypy, pyright or generic." },
	{ "run_checker", m_run_checker, METH_VARARGS,
	  "Run a checker under a deadline; see dolsotmod.c." },
	{ "warm_checker", m_warm_checker, METH_NOARGS,
	  "The warm type checker's socket for this call, or None." },
	{ "check_warm", m_check_warm, METH_VARARGS,
	  "Check a cell with the warm type checker; see dolsotmod.c." },
	{ "parse", m_parse, METH_VARARGS, "Parse a checker's output." },
	{ "embedded", m_embedded, METH_O, "Import a Python module compiled in." },
	{ "sha256", m_sha256, METH_O, "SHA-256 of bytes-like parts back to back." },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef module = {
	PyModuleDef_HEAD_INIT, "_dolsot", "dolsot's C side, for the worker.", -1, methods,
	NULL, NULL, NULL, NULL,
};

/* OWN_PREFIXES, a tuple of output_own_prefixes, and OWN_MARK. */
static int add_own_prefixes(PyObject *m)
{
	PyObject *t;
	size_t n = 0;

	while (output_own_prefixes[n])
		n++;
	t = PyTuple_New((Py_ssize_t)n);
	if (!t)
		return -1;
	for (size_t i = 0; i < n; i++) {
		PyObject *s = PyUnicode_FromString(output_own_prefixes[i]);

		if (!s) {
			Py_DECREF(t);
			return -1;
		}
		PyTuple_SET_ITEM(t, (Py_ssize_t)i, s);
	}
	if (PyModule_AddObject(m, "OWN_PREFIXES", t) < 0) {
		Py_DECREF(t);
		return -1;
	}
	return PyModule_AddStringConstant(m, "OWN_MARK", OUTPUT_MARK);
}

/* The request and result flags (frame.h), the limits' option names
 * (rlimits.c) and how dolsot's own lines start with their mark
 * (output.h), defined once in C and read from here by worker.py. */
static int add_contract(PyObject *m)
{
	static const struct { const char *name; long v; } flags[] = {
		{ "REQ_TYPECHECK", REQ_TYPECHECK }, { "REQ_CARRY", REQ_CARRY },
		{ "REQ_SANDBOX", REQ_SANDBOX }, { "REQ_SESSION", REQ_SESSION },
		{ "REQ_JSON", REQ_JSON }, { "REQ_DESCRIBE", REQ_DESCRIBE },
		{ "REQ_LIVE", REQ_LIVE },
		{ "RES_OK", RES_OK }, { "RES_SAVE", RES_SAVE },
		{ "RES_RAN", RES_RAN }, { "RES_REJECTED", RES_REJECTED },
	};
	PyObject *names = PyTuple_New(LIMIT_COUNT);

	for (size_t i = 0; i < sizeof(flags) / sizeof(*flags); i++)
		if (PyModule_AddIntConstant(m, flags[i].name, flags[i].v) < 0)
			goto fail;
	if (!names)
		return -1;
	for (int k = 0; k < LIMIT_COUNT; k++) {
		PyObject *s = PyUnicode_FromString(limit_name((enum limit_kind)k));

		if (!s)
			goto fail;
		PyTuple_SET_ITEM(names, k, s);
	}
	if (PyModule_AddObject(m, "LIMITS", names) < 0)
		goto fail;
	names = NULL;
	return add_own_prefixes(m);
fail:
	Py_XDECREF(names);
	return -1;
}

PyObject *dolsotmod_init(void)
{
	PyObject *m = PyModule_Create(&module);

	if (m && (add_contract(m) < 0 || unitmap_add(m) < 0 || flat_add(m) < 0))
		Py_CLEAR(m);
	return m;
}
