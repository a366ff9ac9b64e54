/* Job: one sqlock_job (a scheduled job that succeeds at most once per slot across a fleet),
 * and JobContext, what its Python function is handed while it runs.
 *
 * sqlock_job_run() calls the job's function on the calling thread: run() releases the GIL
 * around the whole firing and takes it back only while the Python function runs (the same
 * thread, so no foreign thread ever runs Python). An exception of the function is recorded as
 * a failure (its text as the attempt's message), then raised from run() once the attempt is
 * in the ledger. */
#include "common.h"

#include <string.h>

/* ---------------------------------------------------------------- JobContext */

typedef struct {
    PyObject_HEAD const sqlock_job_context* context; /* NULL once the function returned */
} context_object;

static const sqlock_job_context* live_context(context_object* self) {
    if (!self->context)
        PyErr_SetString(PyExc_ValueError, "the job's context is valid only while it runs");
    return self->context;
}

static PyObject* context_token(context_object* self, void* unused) {
    (void)unused;
    const sqlock_job_context* c = live_context(self);
    return c ? PyLong_FromLongLong(c->token) : NULL;
}

static PyObject* context_slot(context_object* self, void* unused) {
    (void)unused;
    const sqlock_job_context* c = live_context(self);
    return c ? PyUnicode_FromString(c->slot) : NULL;
}

static PyObject* context_stop_requested(context_object* self, PyObject* unused) {
    (void)unused;
    const sqlock_job_context* c = live_context(self);
    return c ? PyBool_FromLong(sqlock_job_stop_requested(c)) : NULL;
}

static PyObject* context_set_message(context_object* self, PyObject* args) {
    const char* message;
    if (!PyArg_ParseTuple(args, "s", &message))
        return NULL;
    const sqlock_job_context* c = live_context(self);
    if (!c)
        return NULL;
    sqlock_job_set_message(c, message);
    Py_RETURN_NONE;
}

static PyGetSetDef context_getset[] = {
    {"token", (getter)context_token, NULL, "the fencing token of this attempt", NULL},
    {"slot", (getter)context_slot, NULL, "the slot key this attempt runs for", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef context_methods[] = {
    {"stop_requested", (PyCFunction)context_stop_requested, METH_NOARGS,
     "stop_requested($self, /)\n--\n\n-> bool: True once the job's lock was lost: stop the work"},
    {"set_message", (PyCFunction)context_set_message, METH_VARARGS,
     "set_message($self, message, /)\n--\n\nthe message recorded with the attempt in the ledger"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject job_context_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sqlock._sqlock.JobContext",
    .tp_basicsize = sizeof(context_object),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "What a job's function is handed while it runs (token, slot, stop_requested())",
    .tp_getset = context_getset,
    .tp_methods = context_methods,
};

/* ---------------------------------------------------------------- the call */

/* One firing: the function, the thread state to resume it on, and what it raised. */
typedef struct {
    PyObject* fn;
    PyThreadState* thread;
    PyObject *type, *value, *traceback;
} job_call;

/* The exit status of the function's return value @p r (None: 0; an int: itself). */
static int status_of(PyObject* r) {
    if (r == Py_None)
        return 0;
    const long status = PyLong_Check(r) ? PyLong_AsLong(r) : 1;
    if (status == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 1;
    }
    return status == 0 ? 0 : (status > 0 && status < 256 ? (int)status : 1);
}

/* Records the pending exception as the attempt's failure, and keeps it for run(). */
static int failed_with_exception(const sqlock_job_context* context, job_call* call) {
    PyErr_Fetch(&call->type, &call->value, &call->traceback);
    PyErr_NormalizeException(&call->type, &call->value, &call->traceback);
    PyObject* text = call->value ? PyObject_Repr(call->value) : NULL;
    const char* message = text ? PyUnicode_AsUTF8(text) : NULL;
    sqlock_job_set_message(context, message ? message : "the job raised an exception");
    Py_XDECREF(text);
    PyErr_Clear();
    return 1;
}

static int trampoline(const sqlock_job_context* context, void* user) {
    job_call* call = user;
    PyEval_RestoreThread(call->thread);
    int status = 1;
    context_object* ctx = PyObject_New(context_object, &job_context_type);
    if (ctx) {
        ctx->context = context;
        PyObject* r = PyObject_CallOneArg(call->fn, (PyObject*)ctx);
        ctx->context = NULL;
        Py_DECREF(ctx);
        status = r ? status_of(r) : failed_with_exception(context, call);
        Py_XDECREF(r);
    } else {
        status = failed_with_exception(context, call);
    }
    call->thread = PyEval_SaveThread();
    return status;
}

/* ---------------------------------------------------------------- Job */

typedef struct {
    PyObject_HEAD sqlock_job* job;
    int forgotten;
} job_object;

static int job_init(job_object* self, PyObject* args, PyObject* kwargs) {
    static char* keywords[] = {"db",      "name",     "period_ms", "slot",
                               "wait_ms", "strategy", "ttl_ms",    NULL};
    PyObject* db;
    const char *name, *slot = NULL;
    long long period_ms = 0, wait_ms = -1, ttl_ms = 0;
    int strategy = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!s|LzLiL", keywords, &database_type, &db,
                                     &name, &period_ms, &slot, &wait_ms, &strategy, &ttl_ms))
        return -1;
    if (!((database_object*)db)->db) {
        PyErr_SetString(PyExc_ValueError, "the database handle is closed");
        return -1;
    }
    sqlock_lock_options lock;
    sqlock_lock_options_init(&lock);
    lock.strategy = strategy;
    if (ttl_ms > 0)
        lock.ttl_ms = ttl_ms;
    sqlock_job_options o;
    sqlock_job_options_init(&o);
    o.period_ms = period_ms;
    o.slot = slot;
    o.wait_ms = wait_ms;
    o.lock = &lock;
    sqlock_error* err = NULL;
    const int rc = sqlock_job_open(&self->job, ((database_object*)db)->db, name, &o, &err);
    if (rc != SQLOCK_OK) {
        self->job = NULL;
        raise_sqlock(rc, err);
        return -1;
    }
    return 0;
}

static void job_close_handle(job_object* self) {
    if (self->job && !self->forgotten)
        sqlock_job_close(self->job);
    self->job = NULL;
}

static void job_dealloc(job_object* self) {
    job_close_handle(self);
    Py_TYPE(self)->tp_free((PyObject*)self);
}

static PyObject* result_dict(const sqlock_job_result* r) {
    return Py_BuildValue("{s:i,s:L,s:O,s:i,s:L,s:L,s:L,s:s,s:s,s:s}", "outcome", r->outcome,
                         "token", (long long)r->token, "takeover", r->takeover ? Py_True : Py_False,
                         "exit_status", r->exit_status, "duration_ms", (long long)r->duration_ms,
                         "done_by_pid", (long long)r->done_by_pid, "done_by_token",
                         (long long)r->done_by_token, "slot", r->slot, "done_by_host",
                         r->done_by_host, "message", r->message);
}

static PyObject* job_run(job_object* self, PyObject* fn) {
    if (!self->job) {
        PyErr_SetString(PyExc_ValueError, "the job handle is closed");
        return NULL;
    }
    job_call call = {.fn = fn};
    sqlock_job_result result;
    memset(&result, 0, sizeof result);
    result.struct_size = sizeof result;
    sqlock_error* err = NULL;
    call.thread = PyEval_SaveThread();
    const int rc = sqlock_job_run(self->job, trampoline, &call, &result, &err);
    PyEval_RestoreThread(call.thread);
    if (call.type) { /* the attempt is recorded: now the function's exception */
        sqlock_error_free(err);
        PyErr_Restore(call.type, call.value, call.traceback);
        return NULL;
    }
    if (rc != SQLOCK_OK)
        return raise_sqlock(rc, err);
    return result_dict(&result);
}

static PyObject* job_close(job_object* self, PyObject* unused) {
    (void)unused;
    job_close_handle(self);
    Py_RETURN_NONE;
}

static PyObject* job_forget(job_object* self, PyObject* unused) {
    (void)unused;
    self->forgotten = 1;
    self->job = NULL;
    Py_RETURN_NONE;
}

static PyMethodDef job_methods[] = {
    {"run", (PyCFunction)job_run, METH_O, "run($self, fn, /)\n--\n\n-> dict: fires the job"},
    {"close", (PyCFunction)job_close, METH_NOARGS, "close($self, /)\n--\n\n-> None"},
    {"forget", (PyCFunction)job_forget, METH_NOARGS,
     "forget($self, /)\n--\n\n-> None: drop the handle without closing it (a child after fork())"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject job_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sqlock._sqlock.Job",
    .tp_basicsize = sizeof(job_object),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Job(db, name, ...): a scheduled job (internal: use sqlock.Job)",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)job_init,
    .tp_dealloc = (destructor)job_dealloc,
    .tp_methods = job_methods,
};
