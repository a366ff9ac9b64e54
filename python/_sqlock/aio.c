/* Waits without a thread for asyncio (libsqlock-c's *_start functions, C API 1.2). One
 * Notifier per event loop: a pipe whose read end the loop watches (loop.add_reader), and a list
 * of ended operations. libsqlock-c reports an acquire or a release on its own threads through
 * on_done(), which runs no Python code and takes no GIL: it appends the operation's record to
 * the list and writes one byte to the pipe. The loop's reader callback (with the GIL) calls
 * drain() and resolves the operations' futures. So waiting tasks cost no thread of Python's,
 * and the loop is woken once per batch of outcomes. */
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

/* ---------------------------------------------------------------- the notifier's core */

/* One operation's outcome on its way to the loop. */
typedef struct record {
    struct record* next;
    unsigned long long id;
    int code;
    struct core* core;
} record;

/* What libsqlock-c's threads and the Python object share: freed with its last reference (the
 * object's, and one per operation in flight or in the list), and its pipe closed then, so
 * that no late report writes into a descriptor reused meanwhile. */
typedef struct core {
    pthread_mutex_t mutex;
    int refs;
    int closed; /* the Python object let go: reports are dropped */
    int fds[2];
    record* head;
    record* tail;
} core;

static void core_unref(core* c) {
    pthread_mutex_lock(&c->mutex);
    const int last = --c->refs == 0;
    pthread_mutex_unlock(&c->mutex);
    if (!last)
        return;
    close(c->fds[0]);
    close(c->fds[1]);
    pthread_mutex_destroy(&c->mutex);
    free(c);
}

/* A new record of operation @p id, holding a reference of @p c; NULL without memory. */
static record* record_new(core* c, unsigned long long id) {
    record* r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->id = id;
    r->core = c;
    pthread_mutex_lock(&c->mutex);
    ++c->refs;
    pthread_mutex_unlock(&c->mutex);
    return r;
}

static void record_free(record* r) {
    core* c = r->core;
    free(r);
    core_unref(c);
}

/* On a sqlock thread (or inside a start or cancel call): queues the outcome, wakes the loop. */
static void report(record* r, int code) {
    core* c = r->core;
    r->code = code;
    pthread_mutex_lock(&c->mutex);
    const int dropped = c->closed;
    if (!dropped) {
        if (c->tail)
            c->tail->next = r;
        else
            c->head = r;
        c->tail = r;
        ++c->refs; /* a drain may free the record (and its reference) before the write */
    }
    pthread_mutex_unlock(&c->mutex);
    if (dropped) {
        record_free(r);
        return;
    }
    const char byte = 1;
    const int saved = errno;
    /* EAGAIN: the pipe is full, so the loop is woken already and drains the whole list. */
    if (write(c->fds[1], &byte, 1) < 0 && errno != EAGAIN) {
        /* nothing else to do: the list keeps the outcome for the next drain */
    }
    errno = saved;
    core_unref(c);
}

static void on_acquired(sqlock_acquire* acquire, int code, void* user) {
    (void)acquire;
    report(user, code);
}

static void on_released(int code, void* user) {
    report(user, code);
}

/* ---------------------------------------------------------------- Grant */

typedef struct {
    PyObject_HEAD sqlock_grant* grant;
} grant_object;

static PyTypeObject grant_type;

static sqlock_grant* held_grant(grant_object* self) {
    if (!self->grant)
        PyErr_SetString(PyExc_ValueError, "the grant was released");
    return self->grant;
}

static void grant_dealloc(grant_object* self) {
    sqlock_grant_release_start(self->grant, NULL, NULL); /* never left held; NULL: nothing */
    Py_TYPE(self)->tp_free((PyObject*)self);
}

static PyObject* grant_token(grant_object* self, PyObject* unused) {
    (void)unused;
    sqlock_grant* g = held_grant(self);
    if (!g)
        return NULL;
    int64_t token = 0;
    sqlock_error* err = NULL;
    const int rc = sqlock_grant_token(g, &token, &err);
    return rc == SQLOCK_OK ? PyLong_FromLongLong(token) : raise_sqlock(rc, err);
}

static PyObject* grant_permit(grant_object* self, PyObject* unused) {
    (void)unused;
    sqlock_grant* g = held_grant(self);
    if (!g)
        return NULL;
    int64_t permit = 0;
    sqlock_error* err = NULL;
    const int rc = sqlock_grant_permit(g, &permit, &err);
    return rc == SQLOCK_OK ? PyLong_FromLongLong(permit) : raise_sqlock(rc, err);
}

static PyObject* grant_owns(grant_object* self, PyObject* unused) {
    (void)unused;
    return PyBool_FromLong(sqlock_grant_owns(self->grant));
}

static PyObject* grant_lost_reason(grant_object* self, PyObject* unused) {
    (void)unused;
    return PyLong_FromLong(sqlock_grant_lost_reason(self->grant));
}

static PyObject* grant_release(grant_object* self, PyObject* unused) {
    (void)unused;
    sqlock_grant* g = held_grant(self);
    if (!g)
        return NULL;
    self->grant = NULL;
    sqlock_error* err = NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = sqlock_grant_release(g, &err);
    Py_END_ALLOW_THREADS if (rc != SQLOCK_OK) return raise_sqlock(rc, err);
    Py_RETURN_NONE;
}

static PyObject* grant_forget(grant_object* self, PyObject* unused) {
    (void)unused;
    self->grant = NULL; /* a forked child: the parent's grant is never released here */
    Py_RETURN_NONE;
}

static PyMethodDef grant_methods[] = {
    {"token", (PyCFunction)grant_token, METH_NOARGS, "token($self, /)\n--\n\n-> int"},
    {"permit", (PyCFunction)grant_permit, METH_NOARGS, "permit($self, /)\n--\n\n-> int"},
    {"owns", (PyCFunction)grant_owns, METH_NOARGS, "owns($self, /)\n--\n\n-> bool"},
    {"lost_reason", (PyCFunction)grant_lost_reason, METH_NOARGS,
     "lost_reason($self, /)\n--\n\n-> int"},
    {"release", (PyCFunction)grant_release, METH_NOARGS,
     "release($self, /)\n--\n\n-> None: releases here (blocking, without the GIL)"},
    {"forget", (PyCFunction)grant_forget, METH_NOARGS,
     "forget($self, /)\n--\n\n-> None: drop it unreleased (a child after fork())"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject grant_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sqlock._sqlock.Grant",
    .tp_basicsize = sizeof(grant_object),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A grant taken without a thread (internal); released when dropped",
    .tp_dealloc = (destructor)grant_dealloc,
    .tp_methods = grant_methods,
};

/* ---------------------------------------------------------------- Acquire */

typedef struct {
    PyObject_HEAD sqlock_acquire* acquire;
    unsigned long long id;
} acquire_object;

static void acquire_dealloc(acquire_object* self) {
    sqlock_acquire_free(self->acquire); /* cancels it if in flight; an untaken grant goes back */
    Py_TYPE(self)->tp_free((PyObject*)self);
}

static PyObject* acquire_cancel(acquire_object* self, PyObject* unused) {
    (void)unused;
    sqlock_acquire_cancel(self->acquire);
    Py_RETURN_NONE;
}

/* -> Grant (granted), None (not granted); raises for a cancel or a failure. */
static PyObject* acquire_result(acquire_object* self, PyObject* unused) {
    (void)unused;
    sqlock_grant* g = NULL;
    sqlock_error* err = NULL;
    const int rc = sqlock_acquire_result(self->acquire, &g, &err);
    if (rc == SQLOCK_NOT_GRANTED)
        Py_RETURN_NONE;
    if (rc != SQLOCK_OK)
        return raise_sqlock(rc, err);
    grant_object* out = PyObject_New(grant_object, &grant_type);
    if (!out) {
        sqlock_grant_release_start(g, NULL, NULL);
        return NULL;
    }
    out->grant = g;
    return (PyObject*)out;
}

static PyObject* acquire_id(acquire_object* self, void* closure) {
    (void)closure;
    return PyLong_FromUnsignedLongLong(self->id);
}

static PyMethodDef acquire_methods[] = {
    {"cancel", (PyCFunction)acquire_cancel, METH_NOARGS, "cancel($self, /)\n--\n\n-> None"},
    {"result", (PyCFunction)acquire_result, METH_NOARGS,
     "result($self, /)\n--\n\n-> Grant or None (not granted); raises on a cancel or failure"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef acquire_getset[] = {
    {"id", (getter)acquire_id, NULL, "the id its outcome comes back with from drain()", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject acquire_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sqlock._sqlock.Acquire",
    .tp_basicsize = sizeof(acquire_object),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An acquire in flight (internal); cancelled when dropped",
    .tp_dealloc = (destructor)acquire_dealloc,
    .tp_methods = acquire_methods,
    .tp_getset = acquire_getset,
};

/* ---------------------------------------------------------------- Notifier */

typedef struct {
    PyObject_HEAD core* core;
    unsigned long long next_id;
} notifier_object;

static int notifier_init(notifier_object* self, PyObject* args, PyObject* kwargs) {
    if (!PyArg_ParseTuple(args, "") || (kwargs && PyDict_Size(kwargs))) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "Notifier() takes no arguments");
        return -1;
    }
    core* c = calloc(1, sizeof *c);
    if (!c) {
        PyErr_NoMemory();
        return -1;
    }
    if (pipe2(c->fds, O_CLOEXEC | O_NONBLOCK) != 0) {
        free(c);
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    pthread_mutex_init(&c->mutex, NULL);
    c->refs = 1;
    self->core = c;
    return 0;
}

/* Lets go of the core: reports still to come are dropped (and free their records). */
static void notifier_close_core(notifier_object* self) {
    core* c = self->core;
    if (!c)
        return;
    self->core = NULL;
    pthread_mutex_lock(&c->mutex);
    c->closed = 1;
    record* pending = c->head;
    c->head = c->tail = NULL;
    pthread_mutex_unlock(&c->mutex);
    while (pending) {
        record* next = pending->next;
        record_free(pending);
        pending = next;
    }
    core_unref(c);
}

static void notifier_dealloc(notifier_object* self) {
    notifier_close_core(self);
    Py_TYPE(self)->tp_free((PyObject*)self);
}

static core* open_core(notifier_object* self) {
    if (!self->core)
        PyErr_SetString(PyExc_ValueError, "the notifier is closed");
    return self->core;
}

static PyObject* notifier_fileno(notifier_object* self, PyObject* unused) {
    (void)unused;
    core* c = open_core(self);
    return c ? PyLong_FromLong(c->fds[0]) : NULL;
}

/* -> [(id, code), ...]: the outcomes reported since the last drain, oldest first. */
static PyObject* notifier_drain(notifier_object* self, PyObject* unused) {
    (void)unused;
    core* c = open_core(self);
    if (!c)
        return NULL;
    char buffer[256];
    while (read(c->fds[0], buffer, sizeof buffer) > 0) {
    } /* the bytes only wake; the list is the truth */
    pthread_mutex_lock(&c->mutex);
    record* r = c->head;
    c->head = c->tail = NULL;
    pthread_mutex_unlock(&c->mutex);
    PyObject* out = PyList_New(0);
    while (r) {
        record* next = r->next;
        PyObject* item = out ? Py_BuildValue("(Ki)", r->id, r->code) : NULL;
        if (item && PyList_Append(out, item) < 0)
            Py_CLEAR(out);
        Py_XDECREF(item);
        if (!item)
            Py_CLEAR(out);
        record_free(r);
        r = next;
    }
    return out;
}

/* acquire(lock, shared, timeout_ms) -> Acquire: starts an acquire of @p lock. */
static PyObject* notifier_acquire(notifier_object* self, PyObject* args) {
    PyObject* lock;
    int shared;
    long long timeout_ms;
    if (!PyArg_ParseTuple(args, "O!pL", &lock_type, &lock, &shared, &timeout_ms))
        return NULL;
    core* c = open_core(self);
    lock_object* l = (lock_object*)lock;
    if (!c)
        return NULL;
    if (!l->handle) {
        PyErr_SetString(PyExc_ValueError, "the lock handle is closed");
        return NULL;
    }
    acquire_object* out = PyObject_New(acquire_object, &acquire_type);
    if (!out)
        return NULL;
    out->acquire = NULL;
    out->id = ++self->next_id;
    record* r = record_new(c, out->id);
    if (!r) {
        Py_DECREF(out);
        return PyErr_NoMemory();
    }
    sqlock_error* err = NULL;
    const int rc =
        l->ops->start(l->handle, shared, timeout_ms, on_acquired, r, &out->acquire, &err);
    if (rc != SQLOCK_OK) {
        record_free(r); /* a start that failed never reports */
        Py_DECREF(out);
        return raise_sqlock(rc, err);
    }
    return (PyObject*)out;
}

/* release(grant) -> id: starts the release of @p grant (consumed); its outcome comes back
 * from drain() as (id, code). */
static PyObject* notifier_release(notifier_object* self, PyObject* arg) {
    if (!PyObject_TypeCheck(arg, &grant_type)) {
        PyErr_SetString(PyExc_TypeError, "release() takes a Grant");
        return NULL;
    }
    core* c = open_core(self);
    if (!c)
        return NULL;
    grant_object* g = (grant_object*)arg;
    if (!held_grant(g))
        return NULL;
    const unsigned long long id = ++self->next_id;
    record* r = record_new(c, id);
    if (!r)
        return PyErr_NoMemory();
    sqlock_grant* grant = g->grant;
    g->grant = NULL;
    sqlock_grant_release_start(grant, on_released, r);
    return PyLong_FromUnsignedLongLong(id);
}

static PyObject* notifier_close(notifier_object* self, PyObject* unused) {
    (void)unused;
    notifier_close_core(self);
    Py_RETURN_NONE;
}

static PyMethodDef notifier_methods[] = {
    {"fileno", (PyCFunction)notifier_fileno, METH_NOARGS,
     "fileno($self, /)\n--\n\n-> int: the descriptor to watch for reading"},
    {"drain", (PyCFunction)notifier_drain, METH_NOARGS,
     "drain($self, /)\n--\n\n-> list of (id, code) reported since the last drain"},
    {"acquire", (PyCFunction)notifier_acquire, METH_VARARGS,
     "acquire($self, lock, shared, timeout_ms, /)\n--\n\n-> Acquire"},
    {"release", (PyCFunction)notifier_release, METH_O,
     "release($self, grant, /)\n--\n\n-> int: the id of the release's outcome"},
    {"close", (PyCFunction)notifier_close, METH_NOARGS, "close($self, /)\n--\n\n-> None"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject notifier_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sqlock._sqlock.Notifier",
    .tp_basicsize = sizeof(notifier_object),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Notifier(): the outcomes of waits without a thread, for one event loop",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)notifier_init,
    .tp_dealloc = (destructor)notifier_dealloc,
    .tp_methods = notifier_methods,
};

int aio_add_types(PyObject* module) {
    if (PyType_Ready(&grant_type) < 0 || PyType_Ready(&acquire_type) < 0 ||
        PyType_Ready(&notifier_type) < 0)
        return -1;
    PyObject* types[] = {(PyObject*)&grant_type, (PyObject*)&acquire_type,
                         (PyObject*)&notifier_type};
    const char* names[] = {"Grant", "Acquire", "Notifier"};
    for (int i = 0; i < 3; ++i) {
        Py_INCREF(types[i]);
        if (PyModule_AddObject(module, names[i], types[i]) < 0) {
            Py_DECREF(types[i]);
            return -1;
        }
    }
    /* Whether this libsqlock-c waits without threads: built without Asio, every *_start
     * says unsupported before it looks at its arguments. */
    const int rc = sqlock_mutex_lock_start(NULL, 0, NULL, NULL, NULL, NULL);
    return PyModule_AddIntConstant(module, "HAS_ASYNC", rc != SQLOCK_E_UNSUPPORTED);
}
