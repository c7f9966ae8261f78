/*
 * unitmap.h - large units mapped into the worker instead of read
 * (session format v4, HACKING.md "Large buffers").
 *
 * A Region is one private, copy-on-write mapping (MAP_PRIVATE) of unit
 * files of a FileStore placed back to back: a numpy array's buffer stored
 * in chunks comes back as one contiguous buffer whose pages are read from
 * the page cache only when the cell touches them.  Each file is checked
 * against its hash before the Region is handed out: by its stamp when it
 * has one that still matches (store/stamp.h), else by hashing it.  After
 * the cell, Region.dirty() says which chunks the cell wrote (their pages
 * became private copies, which /proc/self/pagemap tells), so that a save
 * hashes and writes only those.
 *
 * In Python (through _dolsot):
 *   map_units(directory, [(hash, size), ...], writable) -> Region
 *       FileNotFoundError/OSError (filename set) when a file cannot be had,
 *       ValueError(hex) when one is not what its hash says;
 *   region_of(buffer) -> (Region, offset) or None, the Region a buffer
 *       lies in;
 *   map_bytes(directory, [(hash, size), ...], tag) -> bytes, whose body
 *       is the files mapped back to back (copy on write) and whose header
 *       lies on the page before them: the value is ready without a byte
 *       copied, and a cell pays for the pages it reads.  Such an object
 *       must never be freed by the allocator, so this module keeps a
 *       reference to each, with tag; bytes_tag(obj) -> that tag, or None
 *       for any other object; release_bytes() unmaps those that no one
 *       else holds (each call does, after its save) and returns how many;
 *   Region: the buffer protocol (read-only unless writable), .nbytes,
 *       .tag (any object the caller keeps with it), .dirty() -> a tuple
 *       of bools, one per file, or None when pagemap cannot be read.
 */
#ifndef DOLSOT_UNITMAP_H
#define DOLSOT_UNITMAP_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Add map_units, region_of and the Region type to module m; -1 on error. */
int unitmap_add(PyObject *m);

#endif
