/* The _sqlock extension module's internal declarations: the thin C layer between Python and
 * libsqlock-c (include/sqlock/sqlock.h). The Python package sqlock (python/sqlock/) builds the
 * public API on top of it; this layer only crosses the boundary: it releases the GIL around
 * every call that may wait, turns sqlock error objects into Python exceptions, and records the
 * lost and at-risk callbacks (which run on sqlock's threads) in C, never running Python code
 * there. */
#ifndef SQLOCK_PY_COMMON_H
#define SQLOCK_PY_COMMON_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <sqlock/sqlock.h>

/* ------------------------------------------------------------------ errors (errors.c) */

/* Sets the Python exception for a failed call: the error factory registered from Python
 * (set_error_factory) is called with (code, message, sqlstate, native_code, backend,
 * retryable, server_full) and its result raised. Frees @p err. Returns NULL, for
 * `return raise_sqlock(...)`. */
PyObject* raise_sqlock(int code, sqlock_error* err);
/* set_error_factory(callable): the module function. */
PyObject* set_error_factory(PyObject* module, PyObject* factory);

/* ------------------------------------------------------------------ events (events.c) */

/* The lost and at-risk events of one handle, recorded by the C callbacks (on sqlock's
 * threads, without the GIL) and drained by Python. Allocated with the handle and freed only
 * after the handle is closed (close waits for a running callback). */
typedef struct recorder recorder;

recorder* recorder_new(void);
void recorder_free(recorder* r);
/* The callbacks to put in the option structs, with the recorder as callback_user. */
void recorder_on_lost(const sqlock_lost_event* event, void* user);
void recorder_on_at_risk(const sqlock_at_risk_event* event, void* user);
/* Moves the recorded events out as a list of tuples:
 * ("lost", name, token, reason, message) and ("at_risk", name, token, at_risk, remaining_ms,
 * message), oldest first. Needs the GIL. */
PyObject* recorder_drain(recorder* r);
/* 1 once a lost event was recorded since the last recorder_reset(), else 0. */
int recorder_lost(recorder* r);
/* 1 while the last at-risk event said at risk (since the last reset), else 0. */
int recorder_at_risk(recorder* r);
/* Forgets the flags (a new grant starts clean); the queued events stay. */
void recorder_reset(recorder* r);

/* ------------------------------------------------------------------ types */

/* Database(url, table_prefix, connect_timeout_ms, io_timeout_ms, pool_size,
 * password_file): a sqlock_db. */
typedef struct {
    PyObject_HEAD sqlock_db* db;
    int forgotten; /* inherited through fork(): never closed here */
} database_object;
extern PyTypeObject database_type;

/* Cancel(): a sqlock_cancel token. */
typedef struct {
    PyObject_HEAD sqlock_cancel* cancel;
} cancel_object;
extern PyTypeObject cancel_type;

/* Job(db, name, period_ms, slot, wait_ms, strategy, ttl_ms): a sqlock_job; JobContext: what
 * its function is handed (job.c). */
extern PyTypeObject job_type;
extern PyTypeObject job_context_type;

/* The operations a lock kind offers (kinds.c): mutex, semaphore, shared mutex, leader. */
typedef struct lock_ops {
    const char* kind;
    int (*acquire)(void* handle, int shared, int64_t timeout_ms, sqlock_cancel* cancel,
                   int64_t* token, sqlock_error** err);
    int (*release)(void* handle, int shared, sqlock_error** err);
    int (*owns)(void* handle, int shared);
    /* The *_start function of the kind (waits without a thread, aio.c). */
    int (*start)(void* handle, int shared, int64_t timeout_ms, sqlock_acquire_fn done, void* user,
                 sqlock_acquire** out, sqlock_error** err);
    void (*close)(void* handle);
} lock_ops;

/* Lock(db, kind, name, count, strategy, ttl_ms, retry_min_ms, retry_max_ms, renew): one
 * handle of any kind (lock.c). */
typedef struct {
    PyObject_HEAD void* handle;
    const lock_ops* ops;
    int kind;
    recorder* events;
    int forgotten;
} lock_object;
extern PyTypeObject lock_type;

enum lock_kind { KIND_MUTEX = 0, KIND_SEMAPHORE = 1, KIND_SHARED_MUTEX = 2, KIND_LEADER = 3 };

/* The options a lock is opened with (the Python keyword arguments, milliseconds). */
typedef struct lock_settings {
    const char* name;
    long long count; /* semaphore permits, shared mutex max readers */
    int strategy;
    long long ttl_ms, retry_min_ms, retry_max_ms;
    int renew;
} lock_settings;

/* Opens the handle of @p kind in *out with the callbacks routed to @p events (kinds.c). */
int open_kind(int kind, void** out, sqlock_db* db, const lock_settings* s, recorder* events,
              sqlock_error** err);
/* The operations of @p kind, or NULL for an unknown kind. */
const lock_ops* ops_of(int kind);

/* Kind-specific reads (kinds.c), each returning a new reference or NULL with an exception. */
PyObject* mutex_details(void* handle);    /* (token|None, lost_reason, hold_count) */
PyObject* semaphore_permit(void* handle); /* permit number */
PyObject* leader_details(void* handle);   /* (is_leader, term) */
PyObject* leader_current(void* handle);   /* dict or None */

/* ------------------------------------------------------------------ asyncio (aio.c) */

/* Adds Notifier, Acquire, Grant and HAS_ASYNC to the module; -1 with an exception. */
int aio_add_types(PyObject* module);

/* ------------------------------------------------------------------ waiting (wait.c) */

/* The code wait_for() returns when a Python signal handler raised (exception set). */
#define WAIT_INTERRUPTED (-1000)

/* Waits for a grant with the GIL released, in one call of @p ops->acquire (with @p cancel).
 * @p interruptible (the main thread only; @p cancel is then unused): the signals Python
 * handles cancel the wait and their handlers run (Ctrl-C raises KeyboardInterrupt: nothing is
 * held then; a handler that does not raise lets the wait go on). A grant that comes with a
 * signal pending is released before the handler runs. Returns the sqlock code, or
 * WAIT_INTERRUPTED. */
int wait_for(const lock_ops* ops, void* handle, int shared, int64_t timeout_ms, int interruptible,
             sqlock_cancel* cancel, int64_t* token, sqlock_error** err);

#endif
