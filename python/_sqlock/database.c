/* Database: one sqlock_db (a connection pool to one lock database). */
#include "common.h"

static int database_init(database_object* self, PyObject* args, PyObject* kwargs) {
    static char* keywords[] = {"url",
                               "table_prefix",
                               "connect_timeout_ms",
                               "io_timeout_ms",
                               "pool_size",
                               "password_file",
                               "require_synchronous_replication",
                               NULL};
    const char *url, *prefix = NULL, *password_file = NULL;
    long long connect_ms = 0, io_ms = -1, pool = 0;
    int sync_replication = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s|zLLLzp", keywords, &url, &prefix, &connect_ms,
                                     &io_ms, &pool, &password_file, &sync_replication))
        return -1;
    sqlock_db_options o;
    sqlock_db_options_init(&o);
    o.table_prefix = prefix;
    o.password_file = password_file;
    o.require_synchronous_replication = sync_replication;
    if (connect_ms > 0)
        o.connect_timeout_ms = connect_ms;
    if (io_ms >= 0)
        o.io_timeout_ms = io_ms;
    if (pool > 0)
        o.pool_size = pool;
    sqlock_error* err = NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = sqlock_db_open(&self->db, url, &o, &err);
    Py_END_ALLOW_THREADS if (rc != SQLOCK_OK) {
        self->db = NULL;
        raise_sqlock(rc, err);
        return -1;
    }
    return 0;
}

static void database_close_handle(database_object* self) {
    if (self->db && !self->forgotten)
        sqlock_db_close(self->db);
    self->db = NULL;
}

static void database_dealloc(database_object* self) {
    database_close_handle(self);
    Py_TYPE(self)->tp_free((PyObject*)self);
}

/* The open handle, or NULL with an exception (closed). */
static sqlock_db* open_db(database_object* self) {
    if (!self->db)
        PyErr_SetString(PyExc_ValueError, "the database handle is closed");
    return self->db;
}

static PyObject* database_migrate(database_object* self, PyObject* unused) {
    (void)unused;
    sqlock_db* db = open_db(self);
    if (!db)
        return NULL;
    sqlock_error* err = NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = sqlock_db_migrate(db, &err);
    Py_END_ALLOW_THREADS if (rc != SQLOCK_OK) return raise_sqlock(rc, err);
    Py_RETURN_NONE;
}

static PyObject* database_reap(database_object* self, PyObject* unused) {
    (void)unused;
    sqlock_db* db = open_db(self);
    if (!db)
        return NULL;
    sqlock_error* err = NULL;
    int64_t deleted = 0;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = sqlock_db_reap(db, &deleted, &err);
    Py_END_ALLOW_THREADS if (rc != SQLOCK_OK) return raise_sqlock(rc, err);
    return PyLong_FromLongLong(deleted);
}

static PyObject* database_fencing_condition(database_object* self, PyObject* args) {
    const char *name_ph, *token_ph;
    if (!PyArg_ParseTuple(args, "ss", &name_ph, &token_ph))
        return NULL;
    sqlock_db* db = open_db(self);
    if (!db)
        return NULL;
    sqlock_error* err = NULL;
    char* text = NULL;
    const int rc = sqlock_db_fencing_condition(db, name_ph, token_ph, &text, &err);
    if (rc != SQLOCK_OK)
        return raise_sqlock(rc, err);
    PyObject* result = PyUnicode_FromString(text);
    sqlock_free(text);
    return result;
}

/* A dict per waiter of row @p index, or None when the server hides waiters. */
static PyObject* waiters_of(const sqlock_status* status, size_t index,
                            const sqlock_lock_info* row) {
    if (row->waiters_hidden)
        Py_RETURN_NONE;
    PyObject* list = PyList_New(0);
    for (size_t i = 0; list && i < (size_t)row->waiter_count; ++i) {
        sqlock_waiter_info w;
        w.struct_size = sizeof w;
        sqlock_error* err = NULL;
        const int rc = sqlock_status_waiter(status, index, i, &w, &err);
        if (rc != SQLOCK_OK) {
            Py_DECREF(list);
            return raise_sqlock(rc, err);
        }
        PyObject* item =
            Py_BuildValue("{s:s,s:L,s:L}", "who", w.who, "waited_for_ms",
                          (long long)w.waited_for_ms, "position", (long long)w.position);
        if (!item || PyList_Append(list, item) < 0) {
            Py_XDECREF(item);
            Py_DECREF(list);
            return NULL;
        }
        Py_DECREF(item);
    }
    return list;
}

/* One row of a snapshot as a dict (keys: the sqlock_lock_info fields; held None: unknown). */
static PyObject* lock_row(const sqlock_status* status, size_t index) {
    sqlock_lock_info r;
    r.struct_size = sizeof r;
    sqlock_error* err = NULL;
    const int rc = sqlock_status_lock(status, index, &r, &err);
    if (rc != SQLOCK_OK)
        return raise_sqlock(rc, err);
    PyObject* waiters = waiters_of(status, index, &r);
    if (!waiters)
        return NULL;
    PyObject* held = r.held < 0 ? Py_None : PyBool_FromLong(r.held);
    if (held == Py_None)
        Py_INCREF(held);
    PyObject* row = Py_BuildValue(
        "{s:s,s:s,s:s,s:s,s:N,s:s,s:s,s:L,s:L,s:L,s:O,s:L,s:L,s:s,s:s,s:N}", "name", r.name,
        "primitive", r.primitive, "role", r.role, "strategy", r.strategy, "held", held, "owner",
        r.owner, "host", r.host, "pid", (long long)r.pid, "token", (long long)r.token, "hold_count",
        (long long)r.hold_count, "has_lease", r.has_lease ? Py_True : Py_False, "expires_in_ms",
        (long long)r.expires_in_ms, "held_for_ms", (long long)r.held_for_ms, "acquired_at",
        r.acquired_at, "expires_at", r.expires_at, "waiters", waiters);
    return row;
}

static PyObject* database_status(database_object* self, PyObject* args) {
    const char* name = NULL;
    if (!PyArg_ParseTuple(args, "z", &name))
        return NULL;
    sqlock_db* db = open_db(self);
    if (!db)
        return NULL;
    sqlock_error* err = NULL;
    sqlock_status* status = NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = sqlock_db_status(db, name, &status, &err);
    Py_END_ALLOW_THREADS if (rc != SQLOCK_OK) return raise_sqlock(rc, err);
    const size_t n = sqlock_status_count(status);
    PyObject* list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; ++i) {
        PyObject* row = lock_row(status, i);
        if (!row) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, row);
    }
    sqlock_status_free(status);
    return list;
}

/* One attempt of a ledger as a dict (ended_ms, duration_ms and exit_status None while
 * running or unknown, signal None when there was none). */
static PyObject* job_run_row(const sqlock_job_history* history, size_t index) {
    sqlock_job_run_info r;
    r.struct_size = sizeof r;
    sqlock_error* err = NULL;
    const int rc = sqlock_job_history_run(history, index, &r, &err);
    if (rc != SQLOCK_OK)
        return raise_sqlock(rc, err);
    PyObject* ended = r.ended_ms > 0 ? PyLong_FromLongLong(r.ended_ms) : Py_NewRef(Py_None);
    PyObject* duration =
        r.duration_ms >= 0 ? PyLong_FromLongLong(r.duration_ms) : Py_NewRef(Py_None);
    PyObject* status = r.has_exit_status ? PyLong_FromLong(r.exit_status) : Py_NewRef(Py_None);
    PyObject* signal = r.signal ? PyLong_FromLong(r.signal) : Py_NewRef(Py_None);
    if (!ended || !duration || !status || !signal) {
        Py_XDECREF(ended);
        Py_XDECREF(duration);
        Py_XDECREF(status);
        Py_XDECREF(signal);
        return NULL;
    }
    return Py_BuildValue("{s:s,s:s,s:L,s:s,s:s,s:L,s:L,s:L,s:N,s:N,s:s,s:N,s:N,s:s}", "name",
                         r.name, "slot", r.slot, "token", (long long)r.token, "owner", r.owner,
                         "host", r.host, "pid", (long long)r.pid, "period_ms",
                         (long long)r.period_ms, "started_ms", (long long)r.started_ms, "ended_ms",
                         ended, "duration_ms", duration, "outcome", r.outcome, "exit_status",
                         status, "signal", signal, "message", r.message);
}

static PyObject* database_job_history(database_object* self, PyObject* args) {
    const char* name;
    Py_ssize_t limit;
    if (!PyArg_ParseTuple(args, "sn", &name, &limit))
        return NULL;
    if (limit < 1) {
        PyErr_SetString(PyExc_ValueError, "limit must be at least 1");
        return NULL;
    }
    sqlock_db* db = open_db(self);
    if (!db)
        return NULL;
    sqlock_error* err = NULL;
    sqlock_job_history* history = NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = sqlock_db_job_history(db, name, (size_t)limit, &history, &err);
    Py_END_ALLOW_THREADS if (rc != SQLOCK_OK) return raise_sqlock(rc, err);
    const size_t n = sqlock_job_history_count(history);
    PyObject* list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; ++i) {
        PyObject* row = job_run_row(history, i);
        if (!row) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, row);
    }
    sqlock_job_history_free(history);
    return list;
}

static PyObject* job_info_row(const sqlock_job_list* list, size_t index) {
    sqlock_job_info j;
    j.struct_size = sizeof j;
    sqlock_error* err = NULL;
    const int rc = sqlock_job_list_job(list, index, &j, &err);
    if (rc != SQLOCK_OK)
        return raise_sqlock(rc, err);
    return Py_BuildValue("{s:s,s:L,s:L,s:L,s:s,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:i,s:L,s:L,"
                         "s:i,s:i}",
                         "name", j.name, "period_ms", (long long)j.period_ms, "first_fired_ms",
                         (long long)j.first_fired_ms, "last_fired_ms", (long long)j.last_fired_ms,
                         "last_outcome", j.last_outcome, "last_started_ms",
                         (long long)j.last_started_ms, "last_duration_ms",
                         (long long)j.last_duration_ms, "last_success_started_ms",
                         (long long)j.last_success_started_ms, "last_success_ended_ms",
                         (long long)j.last_success_ended_ms, "succeeded", (long long)j.succeeded,
                         "failed", (long long)j.failed, "lost", (long long)j.lost, "abandoned",
                         (long long)j.abandoned, "skipped", (long long)j.skipped, "running",
                         j.running, "running_since_ms", (long long)j.running_since_ms, "now_ms",
                         (long long)j.now_ms, "slot_done", j.slot_done, "overdue", j.overdue);
}

static PyObject* database_list_jobs(database_object* self, PyObject* unused) {
    (void)unused;
    sqlock_db* db = open_db(self);
    if (!db)
        return NULL;
    sqlock_error* err = NULL;
    sqlock_job_list* jobs = NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = sqlock_db_list_jobs(db, &jobs, &err);
    Py_END_ALLOW_THREADS if (rc != SQLOCK_OK) return raise_sqlock(rc, err);
    const size_t n = sqlock_job_list_count(jobs);
    PyObject* list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; ++i) {
        PyObject* row = job_info_row(jobs, i);
        if (!row) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, row);
    }
    sqlock_job_list_free(jobs);
    return list;
}

static PyObject* database_backend(database_object* self, PyObject* unused) {
    (void)unused;
    sqlock_db* db = open_db(self);
    return db ? PyUnicode_FromString(sqlock_db_backend(db)) : NULL;
}

static PyObject* database_close(database_object* self, PyObject* unused) {
    (void)unused;
    database_close_handle(self);
    Py_RETURN_NONE;
}

static PyObject* database_forget(database_object* self, PyObject* unused) {
    (void)unused;
    self->forgotten = 1;
    self->db = NULL;
    Py_RETURN_NONE;
}

static PyMethodDef database_methods[] = {
    {"migrate", (PyCFunction)database_migrate, METH_NOARGS, "migrate($self, /)\n--\n\n-> None"},
    {"reap", (PyCFunction)database_reap, METH_NOARGS, "reap($self, /)\n--\n\n-> int"},
    {"fencing_condition", (PyCFunction)database_fencing_condition, METH_VARARGS,
     "fencing_condition($self, name_placeholder, token_placeholder, /)\n--\n\n-> str"},
    {"status", (PyCFunction)database_status, METH_VARARGS,
     "status($self, name, /)\n--\n\n-> list[dict]: the lock rows (of one primitive's name)"},
    {"list_jobs", (PyCFunction)database_list_jobs, METH_NOARGS,
     "list_jobs($self, /)\n--\n\n-> list of dicts, by name"},
    {"job_history", (PyCFunction)database_job_history, METH_VARARGS,
     "job_history($self, name, limit, /)\n--\n\n-> list[dict]: a job's newest attempts, newest "
     "first"},
    {"backend", (PyCFunction)database_backend, METH_NOARGS, "backend($self, /)\n--\n\n-> str"},
    {"close", (PyCFunction)database_close, METH_NOARGS, "close($self, /)\n--\n\n-> None"},
    {"forget", (PyCFunction)database_forget, METH_NOARGS,
     "forget($self, /)\n--\n\n-> None: drop the handle without closing it (a child after fork())"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject database_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sqlock._sqlock.Database",
    .tp_basicsize = sizeof(database_object),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Database(url, ...): a sqlock_db connection pool (internal: use sqlock.connect)",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)database_init,
    .tp_dealloc = (destructor)database_dealloc,
    .tp_methods = database_methods,
};
