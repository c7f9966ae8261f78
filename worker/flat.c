/*
 * flat.c - the snapshot of a list, dict or set of plain values; see flat.h.
 */
#include "flat.h"

#include <stdbool.h>
#include <string.h>

static bool is_atom(PyObject *o)
{
	return PyUnicode_CheckExact(o) || PyLong_CheckExact(o) || PyBytes_CheckExact(o) ||
	       PyFloat_CheckExact(o) || o == Py_None || PyBool_Check(o) ||
	       PyComplex_CheckExact(o);
}

/* The items of value in its own order (a dict's as key, value, key, ...),
 * as a new list, or NULL without an exception when value is not flat. */
static PyObject *items_of(PyObject *value)
{
	PyObject *items, *key, *item;
	Py_ssize_t pos = 0, i = 0;
	Py_hash_t hash;

	if (PyList_CheckExact(value)) {
		/* One pass: each item's memory is read once. */
		items = PyList_New(PyList_GET_SIZE(value));
		for (; items && i < PyList_GET_SIZE(items); i++) {
			item = PyList_GET_ITEM(value, i);
			if (!is_atom(item)) {
				Py_DECREF(items);
				return NULL;
			}
			Py_INCREF(item);
			PyList_SET_ITEM(items, i, item);
		}
		return items;
	}
	if (PyDict_CheckExact(value)) {
		items = PyList_New(2 * PyDict_GET_SIZE(value));
		while (items && PyDict_Next(value, &pos, &key, &item)) {
			if (!is_atom(key) || !is_atom(item)) {
				Py_DECREF(items);
				return NULL;
			}
			Py_INCREF(key);
			Py_INCREF(item);
			PyList_SET_ITEM(items, i++, key);
			PyList_SET_ITEM(items, i++, item);
		}
		return items;
	}
	if (PySet_CheckExact(value) || PyFrozenSet_CheckExact(value)) {
		items = PyList_New(PySet_GET_SIZE(value));
		while (items && _PySet_NextEntry(value, &pos, &key, &hash)) {
			if (!is_atom(key)) {
				Py_DECREF(items);
				return NULL;
			}
			Py_INCREF(key);
			PyList_SET_ITEM(items, i++, key);
		}
		return items;
	}
	return NULL;
}

/* flat_snapshot(value): (type, items) when value is flat, else None. */
static PyObject *m_flat_snapshot(PyObject *self, PyObject *value)
{
	PyObject *items = items_of(value);

	(void)self;
	if (!items) {
		if (PyErr_Occurred())
			return NULL;
		Py_RETURN_NONE;
	}
	return Py_BuildValue("(ON)", (PyObject *)Py_TYPE(value), items);
}

/* Whether value's items, in its own order, are then's objects: no item
 * needs looking at, as then's are plain values. */
static bool same_items(PyObject *value, PyObject *then)
{
	Py_ssize_t n = PyList_GET_SIZE(then), pos = 0, i = 0;
	PyObject *const *was = ((PyListObject *)then)->ob_item;
	PyObject *key, *item;
	Py_hash_t hash;

	if (PyList_CheckExact(value))
		return PyList_GET_SIZE(value) == n &&
		       !memcmp(((PyListObject *)value)->ob_item, was, (size_t)n * sizeof(PyObject *));
	if (PyDict_CheckExact(value)) {
		if (2 * PyDict_GET_SIZE(value) != n)
			return false;
		while (PyDict_Next(value, &pos, &key, &item))
			if (key != was[i++] || item != was[i++])
				return false;
		return true;
	}
	if (PySet_GET_SIZE(value) != n)
		return false;
	while (_PySet_NextEntry(value, &pos, &key, &hash))
		if (key != was[i++])
			return false;
	return true;
}

/* flat_same(value, snapshot): whether value holds what the snapshot took. */
static PyObject *m_flat_same(PyObject *self, PyObject *args)
{
	PyObject *value, *type, *then;

	(void)self;
	if (!PyArg_ParseTuple(args, "O(OO!)", &value, &type, &PyList_Type, &then))
		return NULL;
	return PyBool_FromLong((PyObject *)Py_TYPE(value) == type && same_items(value, then));
}

static PyMethodDef flat_methods[] = {
	{ "flat_snapshot", m_flat_snapshot, METH_O,
	  "A list, dict or set of plain values as it is now, or None; see flat.h." },
	{ "flat_same", m_flat_same, METH_VARARGS,
	  "Whether a value holds exactly what flat_snapshot took of it." },
	{ NULL, NULL, 0, NULL },
};

int flat_add(PyObject *m)
{
	return PyModule_AddFunctions(m, flat_methods);
}
