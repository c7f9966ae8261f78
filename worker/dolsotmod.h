/*
 * dolsotmod.h - the built-in Python module _dolsot: the worker's Python code
 * reaches the C parts (the type checker runner and parsers, the call's
 * deadline, the Python modules compiled into the binary) through it.
 */
#ifndef DOLSOT_DOLSOTMOD_H
#define DOLSOT_DOLSOTMOD_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "frame.h"

/*
 * Remember what the module hands out from the request: the deadline (now +
 * budget_ns, so call it as soon as the request is decoded) and the checker
 * name, and the call's result file (note_held writes a RES_PROVISIONAL
 * answer there).  Copies what it keeps; call before dolsotmod_init runs.
 */
void dolsotmod_begin(const struct request *r, int result_fd);

/* The module's init function, for PyImport_AppendInittab("_dolsot", ...). */
PyObject *dolsotmod_init(void);

#endif
