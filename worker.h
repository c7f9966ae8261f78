/*
 * worker.h - the child side of a call: embedded CPython runs one cell.
 *
 * worker_child() is a proc_child_fn: it reads the request frame from
 * request_fd, initializes Python, runs the cell through worker.py, writes one
 * result frame to result_fd and _exits.  It never touches the store.
 */
#ifndef DOLSOT_WORKER_H
#define DOLSOT_WORKER_H

void worker_child(int request_fd, int result_fd, void *arg);

#endif
