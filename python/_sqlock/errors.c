/* Failures of libsqlock-c as Python exceptions: the classes live in Python (sqlock/errors.py),
 * which registers a factory here; this file only hands it an error object's fields. */
#include "common.h"

static PyObject* error_factory = NULL;

PyObject* set_error_factory(PyObject* module, PyObject* factory) {
    (void)module;
    if (!PyCallable_Check(factory)) {
        PyErr_SetString(PyExc_TypeError, "the error factory must be callable");
        return NULL;
    }
    Py_INCREF(factory);
    Py_XSETREF(error_factory, factory);
    Py_RETURN_NONE;
}

/* The factory's exception for @p code and @p err, or a RuntimeError when none is set. */
static PyObject* make_error(int code, const sqlock_error* err) {
    const char* message = err ? sqlock_error_message(err) : sqlock_code_name(code);
    if (!error_factory)
        return PyObject_CallFunction(PyExc_RuntimeError, "s", message);
    return PyObject_CallFunction(error_factory, "issisii", code, message,
                                 sqlock_error_sqlstate(err), sqlock_error_native_code(err),
                                 sqlock_error_backend(err), sqlock_error_retryable(err),
                                 sqlock_error_server_full(err));
}

PyObject* raise_sqlock(int code, sqlock_error* err) {
    PyObject* exc = make_error(code, err);
    sqlock_error_free(err);
    if (!exc)
        return NULL; /* the factory failed: its exception stands */
    PyErr_SetObject((PyObject*)Py_TYPE(exc), exc);
    Py_DECREF(exc);
    return NULL;
}
