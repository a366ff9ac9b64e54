/* Cancel: one sqlock_cancel token. request() may be called from any thread. */
#include "common.h"

static int cancel_init(cancel_object* self, PyObject* args, PyObject* kwargs) {
    if (!PyArg_ParseTuple(args, "") || (kwargs && PyDict_Size(kwargs))) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "Cancel() takes no arguments");
        return -1;
    }
    sqlock_error* err = NULL;
    const int rc = sqlock_cancel_new(&self->cancel, &err);
    if (rc != SQLOCK_OK) {
        raise_sqlock(rc, err);
        return -1;
    }
    return 0;
}

static void cancel_dealloc(cancel_object* self) {
    sqlock_cancel_free(self->cancel);
    Py_TYPE(self)->tp_free((PyObject*)self);
}

static PyObject* cancel_request(cancel_object* self, PyObject* unused) {
    (void)unused;
    sqlock_cancel_request(self->cancel);
    Py_RETURN_NONE;
}

static PyObject* cancel_requested(cancel_object* self, PyObject* unused) {
    (void)unused;
    return PyBool_FromLong(sqlock_cancel_requested(self->cancel));
}

static PyObject* cancel_reset(cancel_object* self, PyObject* unused) {
    (void)unused;
    sqlock_cancel_reset(self->cancel);
    Py_RETURN_NONE;
}

static PyMethodDef cancel_methods[] = {
    {"request", (PyCFunction)cancel_request, METH_NOARGS, "request($self, /)\n--\n\n-> None"},
    {"requested", (PyCFunction)cancel_requested, METH_NOARGS, "requested($self, /)\n--\n\n-> bool"},
    {"reset", (PyCFunction)cancel_reset, METH_NOARGS, "reset($self, /)\n--\n\n-> None"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject cancel_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sqlock._sqlock.Cancel",
    .tp_basicsize = sizeof(cancel_object),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Cancel(): a cancel token for waits (request() from any thread)",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)cancel_init,
    .tp_dealloc = (destructor)cancel_dealloc,
    .tp_methods = cancel_methods,
};
