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
    {"migrate", (PyCFunction)database_migrate, METH_NOARGS, "migrate() -> None"},
    {"reap", (PyCFunction)database_reap, METH_NOARGS, "reap() -> int"},
    {"fencing_condition", (PyCFunction)database_fencing_condition, METH_VARARGS,
     "fencing_condition(name_placeholder, token_placeholder) -> str"},
    {"backend", (PyCFunction)database_backend, METH_NOARGS, "backend() -> str"},
    {"close", (PyCFunction)database_close, METH_NOARGS, "close() -> None"},
    {"forget", (PyCFunction)database_forget, METH_NOARGS,
     "forget() -> None: drop the handle without closing it (a child after fork())"},
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
