/* Waiting for a grant without holding the GIL, and letting Ctrl-C end the wait. Python runs
 * its signal handlers only on the main thread, between bytecodes: a thread blocked in C
 * cannot see SIGINT. So an interruptible wait asks libsqlock-c in slices and runs the
 * handlers (PyErr_CheckSignals) between them. */
#include "common.h"

#include <time.h>

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One call of ops->acquire with the GIL released. */
static int attempt(const lock_ops* ops, void* handle, int shared, int64_t timeout_ms,
                   sqlock_cancel* cancel, int64_t* token, sqlock_error** err) {
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = ops->acquire(handle, shared, timeout_ms, cancel, token, err);
    Py_END_ALLOW_THREADS return rc;
}

/* A slice that ran out because the server had no free connection slot is waited out, as
 * libsqlock-c's own slices do: the wait fails so only at its own deadline. */
static int server_full_slice(int rc, sqlock_error** err) {
    if (rc != SQLOCK_E_TIMEOUT || !*err || !sqlock_error_server_full(*err))
        return 0;
    sqlock_error_free(*err);
    *err = NULL;
    return 1;
}

/* Runs the signal handlers; if one raised while @p granted, gives the grant back first. */
static int interrupted(const lock_ops* ops, void* handle, int shared, int granted) {
    if (PyErr_CheckSignals() == 0)
        return 0;
    if (granted) {
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        Py_BEGIN_ALLOW_THREADS ops->release(handle, shared, NULL);
        Py_END_ALLOW_THREADS PyErr_Restore(type, value, traceback);
    }
    return 1;
}

int wait_sliced(const lock_ops* ops, void* handle, int shared, int64_t timeout_ms, int64_t slice_ms,
                sqlock_cancel* cancel, int64_t* token, sqlock_error** err) {
    if (slice_ms <= 0 || timeout_ms == 0) {
        const int rc = attempt(ops, handle, shared, timeout_ms, cancel, token, err);
        return rc == SQLOCK_OK && interrupted(ops, handle, shared, 1) ? WAIT_INTERRUPTED : rc;
    }
    const int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
    for (;;) {
        const int64_t left = deadline < 0 ? -1 : deadline - now_ms();
        const int last = left >= 0 && left <= slice_ms;
        const int64_t step = last ? (left > 0 ? left : 0) : slice_ms;
        int rc = attempt(ops, handle, shared, step, cancel, token, err);
        if (!last && server_full_slice(rc, err))
            rc = SQLOCK_NOT_GRANTED;
        if (interrupted(ops, handle, shared, rc == SQLOCK_OK)) {
            sqlock_error_free(*err);
            *err = NULL;
            return WAIT_INTERRUPTED;
        }
        if (rc != SQLOCK_NOT_GRANTED || last)
            return rc;
    }
}
