/* Lock: one handle of any kind (mutex, semaphore, shared mutex, leader election), its waits
 * and its recorded events. Grants belong to the OS thread that took them, as in libsqlock-c:
 * release on the thread that acquired. */
#include "common.h"

static int lock_init(lock_object* self, PyObject* args, PyObject* kwargs) {
    static char* keywords[] = {"db",     "kind",         "name",         "count", "strategy",
                               "ttl_ms", "retry_min_ms", "retry_max_ms", "renew", NULL};
    PyObject* db;
    lock_settings s = {0};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!is|LiLLLp", keywords, &database_type, &db,
                                     &self->kind, &s.name, &s.count, &s.strategy, &s.ttl_ms,
                                     &s.retry_min_ms, &s.retry_max_ms, &s.renew))
        return -1;
    self->ops = ops_of(self->kind);
    if (!self->ops) {
        PyErr_Format(PyExc_ValueError, "unknown lock kind %d", self->kind);
        return -1;
    }
    sqlock_db* handle_db = ((database_object*)db)->db;
    if (!handle_db) {
        PyErr_SetString(PyExc_ValueError, "the database handle is closed");
        return -1;
    }
    self->events = recorder_new();
    if (!self->events) {
        PyErr_NoMemory();
        return -1;
    }
    sqlock_error* err = NULL;
    const int rc = open_kind(self->kind, &self->handle, handle_db, &s, self->events, &err);
    if (rc != SQLOCK_OK) {
        self->handle = NULL;
        raise_sqlock(rc, err);
        return -1;
    }
    return 0;
}

/* Closes the handle (releasing what it holds: may wait for the database, so without the
 * GIL), then frees the recorder, which no callback can reach any more. A handle inherited
 * through fork() is left alone: closing it would release the parent's grants. */
static void lock_close_handle(lock_object* self) {
    if (self->forgotten)
        return;
    void* handle = self->handle;
    self->handle = NULL;
    if (handle) {
        Py_BEGIN_ALLOW_THREADS self->ops->close(handle);
        Py_END_ALLOW_THREADS
    }
    recorder_free(self->events);
    self->events = NULL;
}

static void lock_dealloc(lock_object* self) {
    lock_close_handle(self);
    Py_TYPE(self)->tp_free((PyObject*)self);
}

/* The open handle, or NULL with an exception. */
static void* open_handle(lock_object* self) {
    if (!self->handle)
        PyErr_SetString(PyExc_ValueError, self->forgotten
                                              ? "this lock was inherited through fork(): "
                                                "only the parent process may use it"
                                              : "the lock handle is closed");
    return self->handle;
}

static PyObject* lock_acquire(lock_object* self, PyObject* args) {
    int shared, interruptible;
    long long timeout_ms;
    PyObject* cancel;
    if (!PyArg_ParseTuple(args, "pLpO", &shared, &timeout_ms, &interruptible, &cancel))
        return NULL;
    if (cancel != Py_None && !PyObject_TypeCheck(cancel, &cancel_type)) {
        PyErr_SetString(PyExc_TypeError, "cancel must be a Cancel or None");
        return NULL;
    }
    void* handle = open_handle(self);
    if (!handle)
        return NULL;
    sqlock_cancel* token_cancel = cancel == Py_None ? NULL : ((cancel_object*)cancel)->cancel;
    sqlock_error* err = NULL;
    int64_t token = 0;
    const int rc =
        wait_for(self->ops, handle, shared, timeout_ms, interruptible, token_cancel, &token, &err);
    if (rc == WAIT_INTERRUPTED)
        return NULL;
    if (rc == SQLOCK_NOT_GRANTED)
        Py_RETURN_NONE;
    if (rc != SQLOCK_OK)
        return raise_sqlock(rc, err);
    recorder_reset(self->events);
    return PyLong_FromLongLong(token);
}

static PyObject* lock_release(lock_object* self, PyObject* args) {
    int shared;
    if (!PyArg_ParseTuple(args, "p", &shared))
        return NULL;
    void* handle = open_handle(self);
    if (!handle)
        return NULL;
    sqlock_error* err = NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = self->ops->release(handle, shared, &err);
    Py_END_ALLOW_THREADS if (rc != SQLOCK_OK) return raise_sqlock(rc, err);
    Py_RETURN_NONE;
}

static PyObject* lock_owns(lock_object* self, PyObject* args) {
    int shared;
    if (!PyArg_ParseTuple(args, "p", &shared))
        return NULL;
    void* handle = open_handle(self);
    return handle ? PyBool_FromLong(self->ops->owns(handle, shared)) : NULL;
}

static PyObject* lock_events(lock_object* self, PyObject* unused) {
    (void)unused;
    return self->events ? recorder_drain(self->events) : PyList_New(0);
}

static PyObject* lock_flags(lock_object* self, PyObject* unused) {
    (void)unused;
    if (!self->events)
        return Py_BuildValue("(ii)", 0, 0);
    return Py_BuildValue("(ii)", recorder_lost(self->events), recorder_at_risk(self->events));
}

static PyObject* lock_details(lock_object* self, PyObject* unused) {
    (void)unused;
    void* handle = open_handle(self);
    if (!handle)
        return NULL;
    switch (self->kind) {
    case KIND_MUTEX:
        return mutex_details(handle);
    case KIND_SEMAPHORE:
        return semaphore_permit(handle);
    case KIND_LEADER:
        return leader_details(handle);
    default:
        Py_RETURN_NONE;
    }
}

static PyObject* lock_current(lock_object* self, PyObject* unused) {
    (void)unused;
    void* handle = open_handle(self);
    if (!handle)
        return NULL;
    if (self->kind != KIND_LEADER) {
        PyErr_SetString(PyExc_TypeError, "current() is for leader elections");
        return NULL;
    }
    return leader_current(handle);
}

static PyObject* lock_close(lock_object* self, PyObject* unused) {
    (void)unused;
    lock_close_handle(self);
    Py_RETURN_NONE;
}

static PyObject* lock_forget(lock_object* self, PyObject* unused) {
    (void)unused;
    self->forgotten = 1;
    self->handle = NULL; /* and the recorder is never freed: nothing may reach either */
    Py_RETURN_NONE;
}

static PyMethodDef lock_methods[] = {
    {"acquire", (PyCFunction)lock_acquire, METH_VARARGS,
     "acquire($self, shared, timeout_ms, interruptible, cancel, /)\n--\n\n-> token or None "
     "(not granted)"},
    {"release", (PyCFunction)lock_release, METH_VARARGS,
     "release($self, shared, /)\n--\n\n-> None"},
    {"owns", (PyCFunction)lock_owns, METH_VARARGS,
     "owns($self, shared, /)\n--\n\n-> bool (calling thread)"},
    {"events", (PyCFunction)lock_events, METH_NOARGS,
     "events($self, /)\n--\n\n-> list of event tuples"},
    {"flags", (PyCFunction)lock_flags, METH_NOARGS, "flags($self, /)\n--\n\n-> (lost, at_risk)"},
    {"details", (PyCFunction)lock_details, METH_NOARGS,
     "details($self, /)\n--\n\n-> kind-specific state"},
    {"current", (PyCFunction)lock_current, METH_NOARGS,
     "current($self, /)\n--\n\n-> dict or None (leader)"},
    {"close", (PyCFunction)lock_close, METH_NOARGS, "close($self, /)\n--\n\n-> None"},
    {"forget", (PyCFunction)lock_forget, METH_NOARGS,
     "forget($self, /)\n--\n\n-> None: drop the handle without closing it (a child after fork())"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject lock_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sqlock._sqlock.Lock",
    .tp_basicsize = sizeof(lock_object),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Lock(db, kind, name, ...): a lock handle (internal: use sqlock.Mutex etc.)",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)lock_init,
    .tp_dealloc = (destructor)lock_dealloc,
    .tp_methods = lock_methods,
};
