/*
 * flat.h - whether a list, dict or set of plain values is as it was.
 *
 * A session's list of 200,000 ints is unpickled when a cell reaches it and,
 * unless the call can tell it did not change, pickled and hashed again after
 * the cell (2 ms of a 13 ms call).  A container whose every item (key and
 * value) is of an exact type that cannot change in place (str, bytes, int,
 * float, complex, bool, None) is unchanged exactly when it holds the very
 * same objects in the same order: flat_snapshot takes them down when the
 * value is loaded, flat_same compares them when it is saved, both at C
 * speed.  A set that was changed and changed back may iterate in another
 * order: then it is pickled again, which is only the cost it had before.
 */
#ifndef DOLSOT_FLAT_H
#define DOLSOT_FLAT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Add flat_snapshot and flat_same to module m; -1 on error. */
int flat_add(PyObject *m);

#endif
