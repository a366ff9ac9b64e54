/* Waiting for a grant without holding the GIL, and letting Ctrl-C end the wait. Python runs
 * its signal handlers only on the main thread, between bytecodes: a thread blocked in C does
 * not see SIGINT. So while the main thread waits, each signal Python handles is routed
 * through forward(): it runs the handler that was there (Python's C-level one, which only
 * records the signal) and requests the wait's cancel token, which is async-signal-safe
 * (sqlock_cancel_request: a flag and a byte to a pipe). The wait is one call of libsqlock-c,
 * keeping its place in the lock's queues until granted or cancelled; cancelled, the Python
 * handlers run (PyErr_CheckSignals): one that raises (KeyboardInterrupt) ends the wait with
 * nothing held, otherwise it goes on with the time left (in a new place in line). */
#include "common.h"

#include <signal.h>
#include <time.h>

/* The signals whose handlers a main-thread wait forwards (when one is installed). */
static const int watched[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGALRM, SIGUSR1, SIGUSR2};
#define WATCHED (sizeof watched / sizeof watched[0])

static struct sigaction previous[WATCHED]; /* written before forward() is installed */
static int installed[WATCHED];
static sqlock_cancel* main_cancel; /* the main thread's waits' token, made on first use */

static void forward(int sig, siginfo_t* info, void* context) {
    for (size_t i = 0; i < WATCHED; ++i) {
        if (watched[i] != sig)
            continue;
        const struct sigaction* p = &previous[i];
        if (p->sa_flags & SA_SIGINFO)
            p->sa_sigaction(sig, info, context);
        else if (p->sa_handler != SIG_DFL && p->sa_handler != SIG_IGN)
            p->sa_handler(sig);
        break;
    }
    sqlock_cancel_request(main_cancel);
}

/* Routes the handled signals through forward() (those with no handler keep their default:
 * they end the process, or are ignored). Main thread only. */
static void install_forwarding(void) {
    for (size_t i = 0; i < WATCHED; ++i) {
        installed[i] = 0;
        if (sigaction(watched[i], NULL, &previous[i]) != 0)
            continue;
        const int has_handler =
            (previous[i].sa_flags & SA_SIGINFO) ||
            (previous[i].sa_handler != SIG_DFL && previous[i].sa_handler != SIG_IGN);
        if (!has_handler)
            continue;
        struct sigaction mine = previous[i];
        mine.sa_flags |= SA_SIGINFO;
        mine.sa_sigaction = forward;
        installed[i] = sigaction(watched[i], &mine, NULL) == 0;
    }
}

static void remove_forwarding(void) {
    for (size_t i = 0; i < WATCHED; ++i)
        if (installed[i])
            sigaction(watched[i], &previous[i], NULL);
}

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

int wait_for(const lock_ops* ops, void* handle, int shared, int64_t timeout_ms, int interruptible,
             sqlock_cancel* cancel, int64_t* token, sqlock_error** err) {
    if (!interruptible || timeout_ms == 0) {
        const int rc = attempt(ops, handle, shared, timeout_ms, cancel, token, err);
        return rc == SQLOCK_OK && interrupted(ops, handle, shared, 1) ? WAIT_INTERRUPTED : rc;
    }
    if (!main_cancel && sqlock_cancel_new(&main_cancel, err) != SQLOCK_OK)
        return SQLOCK_E_NO_MEMORY;
    const int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
    for (;;) {
        const int64_t left = deadline < 0 ? -1 : deadline - now_ms();
        if (deadline >= 0 && left <= 0)
            return SQLOCK_NOT_GRANTED;
        sqlock_cancel_reset(main_cancel);
        install_forwarding();
        const int rc = attempt(ops, handle, shared, left, main_cancel, token, err);
        remove_forwarding();
        if (rc == SQLOCK_E_CANCELED) { /* a signal: its handler runs now */
            sqlock_error_free(*err);
            *err = NULL;
            if (PyErr_CheckSignals() < 0)
                return WAIT_INTERRUPTED;
            continue;
        }
        if (interrupted(ops, handle, shared, rc == SQLOCK_OK)) {
            sqlock_error_free(*err);
            *err = NULL;
            return WAIT_INTERRUPTED;
        }
        return rc;
    }
}
