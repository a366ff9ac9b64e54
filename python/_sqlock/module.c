/* The _sqlock extension module: its functions and types (see common.h). */
#include "common.h"

static PyObject* api_version(PyObject* module, PyObject* unused) {
    (void)module;
    (void)unused;
    return PyLong_FromLong(sqlock_c_api_version());
}

static PyObject* version(PyObject* module, PyObject* unused) {
    (void)module;
    (void)unused;
    return PyUnicode_FromString(sqlock_version_string());
}

static PyObject* code_name(PyObject* module, PyObject* code) {
    (void)module;
    const long value = PyLong_AsLong(code);
    if (value == -1 && PyErr_Occurred())
        return NULL;
    return PyUnicode_FromString(sqlock_code_name((int)value));
}

static PyMethodDef module_functions[] = {
    {"api_version", api_version, METH_NOARGS,
     "api_version($module, /)\n--\n\n-> int: the loaded C API's"},
    {"version", version, METH_NOARGS, "version($module, /)\n--\n\n-> str: the sqlock release"},
    {"code_name", code_name, METH_O, "code_name($module, code, /)\n--\n\n-> str"},
    {"set_error_factory", set_error_factory, METH_O,
     "set_error_factory($module, factory, /)\n--\n\nbuilds the exception of a failure"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_definition = {
    PyModuleDef_HEAD_INIT,
    "sqlock._sqlock",
    "The thin C layer of sqlock over libsqlock-c (internal: import sqlock)",
    -1,
    module_functions,
    NULL,
    NULL,
    NULL,
    NULL,
};

static int add_type(PyObject* module, PyTypeObject* type, const char* name) {
    if (PyType_Ready(type) < 0)
        return -1;
    Py_INCREF(type);
    if (PyModule_AddObject(module, name, (PyObject*)type) < 0) {
        Py_DECREF(type);
        return -1;
    }
    return 0;
}

PyMODINIT_FUNC PyInit__sqlock(void) {
    if (sqlock_c_api_version() / 1000 != SQLOCK_C_API_VERSION_MAJOR ||
        sqlock_c_api_version() < SQLOCK_C_API_VERSION) {
        PyErr_Format(PyExc_ImportError, "libsqlock-c has C API %d, this module needs %d.x",
                     sqlock_c_api_version(), SQLOCK_C_API_VERSION_MAJOR);
        return NULL;
    }
    PyObject* module = PyModule_Create(&module_definition);
    if (!module)
        return NULL;
    if (add_type(module, &database_type, "Database") < 0 ||
        add_type(module, &cancel_type, "Cancel") < 0 || add_type(module, &lock_type, "Lock") < 0 ||
        add_type(module, &job_type, "Job") < 0 ||
        add_type(module, &job_context_type, "JobContext") < 0 || aio_add_types(module) < 0 ||
        PyModule_AddIntConstant(module, "NOT_GRANTED", SQLOCK_NOT_GRANTED) < 0 ||
        PyModule_AddIntConstant(module, "CANCEL_CHECK_MS", SQLOCK_CANCEL_CHECK_MS) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
