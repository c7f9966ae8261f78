/*
 * worker.h - the child side of a call: embedded CPython runs one cell.
 *
 * worker_child() is a cold_child_fn (cold.h): it reads the request frame from
 * fds->request and the session from fds->load, initializes Python, runs
 * the cell through worker.py, writes the new session into fds->save and one
 * result frame to fds->result, and _exits.  It never touches the store.
 */
#ifndef DOLSOT_WORKER_H
#define DOLSOT_WORKER_H

#include <stdbool.h>
#include <sys/types.h>

#include "call_path.h"
#include "isolate.h"

void worker_child(const struct worker_fds *fds, void *arg);

/*
 * Zygotes (the warm path).  worker_zygote_init() starts Python in this
 * process as the cold path would, imports the worker module, dill, the
 * given toolbox modules and then the preload modules (a session's module
 * record), and fills *r (its strings malloc'd): files, the user modules
 * it loaded, one "PATH<TAB>MTIME_NS<TAB>SIZE" line each, so a change can
 * be noticed, and loaded, the names of the modules imported, sorted, a
 * line each.  Returns 0, or -1 with a reason in err; r->refused is then 1
 * + the index of the preload module that failed or misbehaved on import
 * (worker.py's warm_up says how that is decided), or 0 when the failure
 * is not one module's.
 *
 * Around each fork of a zygote call worker_before_fork(), then
 * worker_after_fork_parent() in the zygote; the child calls
 * worker_zygote_child(), which runs the request like worker_child() and
 * _exits.
 */
struct zygote_ready {
	char *files;
	char *loaded;
	size_t refused;
};
int worker_zygote_init(const char *const *modules, size_t n, const char *const *preload,
                       size_t n_preload, struct zygote_ready *r, char *err, size_t errlen);
/* In a zygote forked from a zygote: Python's after-fork work, then the
 * preload modules it lacks imported as worker_zygote_init does; *r as
 * there. */
int worker_zygote_grow(const char *const *preload, size_t n_preload, struct zygote_ready *r,
                       char *err, size_t errlen);
void worker_before_fork(void);
void worker_after_fork_parent(void);
/* In a worker forked ahead of its call: Python's after-fork work, done
 * before the call arrives.  0, or -1 (the process should not be used). */
int worker_zygote_spare(void);
void worker_zygote_child(const struct worker_fds *fds) __attribute__((noreturn));

/*
 * A live session's process (live.h), forked from a zygote: run one call
 * like worker_zygote_child() but return once the answer and the session
 * are written.  held: the process already holds the session's state from
 * its previous call (the store has what it saved), so none is read.  True
 * when the cell completed and the process now holds its state; false when
 * it did not (a limit hit, SystemExit, nothing saved): then the process
 * must end, and the one before it holds the session.  hold: what the first
 * call's isolation keeps for the process (isolate.h).
 */
bool worker_live_call(const struct worker_fds *fds, bool held,
                      const struct isolate_hold *hold);
/* Let the session's threads run while the process waits for a call
 * (worker_live_idle), and take the interpreter back (worker_live_wake). */
void worker_live_idle(void);
void worker_live_wake(void);
/* fork() between Python's fork hooks, the child's run too: the snapshot a
 * live process leaves before each call.  Returns what fork() does. */
pid_t worker_live_fork(void);

#endif
