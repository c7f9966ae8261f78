/*
 * flat.h - whether a list, dict or set of plain values is as it was.
 *
 * A live process's list of 200,000 ints, which a cell read, is pickled and
 * hashed again after the cell unless the process can tell it did not
 * change (2 ms of the call).  A container whose every item (key and
 * value) is of an exact type that cannot change in place (str, bytes, int,
 * float, complex, bool, None) is unchanged exactly when it holds the very
 * same objects in the same order: flat_snapshot takes them down when the
 * value is saved, flat_same compares them at the next save, both at C
 * speed.  (Taken when a call loads the value, the snapshot costs about
 * what the pickle would: a fresh list of refs, every item touched.)  A set that was changed and changed back may iterate in another
 * order: then it is pickled again, which is only the cost it had before.
 */
#ifndef DOLSOT_FLAT_H
#define DOLSOT_FLAT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Add flat_snapshot and flat_same to module m; -1 on error. */
int flat_add(PyObject *m);

#endif
