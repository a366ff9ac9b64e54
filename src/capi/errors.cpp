// The C API's error objects: codes, their names, and the accessors of sqlock_error.
#include "capi/errors.hpp"

#include <cstdlib>

namespace sqlock::capi {

namespace {

/// Handed out when there is no memory for an error of its own; sqlock_error_free() keeps it.
/// (Its message fits std::string's inline buffer: making it allocates nothing.)
sqlock_error out_of_memory{SQLOCK_E_NO_MEMORY, "out of memory", {}, {}, 0, false, false};

} // namespace

int code_of(errc code) noexcept {
    switch (code) {
    case errc::invalid_argument:
        return SQLOCK_E_INVALID_ARGUMENT;
    case errc::connection:
        return SQLOCK_E_CONNECTION;
    case errc::timeout:
        return SQLOCK_E_TIMEOUT;
    case errc::conflict:
        return SQLOCK_E_CONFLICT;
    case errc::lock_lost:
        return SQLOCK_E_LOCK_LOST;
    case errc::schema_missing:
        return SQLOCK_E_SCHEMA_MISSING;
    case errc::schema_mismatch:
        return SQLOCK_E_SCHEMA_MISMATCH;
    case errc::unsupported:
        return SQLOCK_E_UNSUPPORTED;
    case errc::topology:
        return SQLOCK_E_TOPOLOGY;
    case errc::backend:
        return SQLOCK_E_BACKEND;
    }
    return SQLOCK_E_INTERNAL;
}

int fail(sqlock_error** err, int code, const char* message) noexcept {
    if (!err)
        return code;
    try {
        auto* e = new sqlock_error;
        e->code = code;
        e->message = message;
        e->retryable =
            code == SQLOCK_E_CONNECTION || code == SQLOCK_E_TIMEOUT || code == SQLOCK_E_CONFLICT;
        *err = e;
    } catch (...) {
        *err = &out_of_memory;
    }
    return code;
}

sqlock_error* copy_error(const sqlock_error& e) noexcept {
    if (&e == &out_of_memory)
        return &out_of_memory;
    try {
        return new sqlock_error(e);
    } catch (...) {
        return &out_of_memory;
    }
}

int fail(sqlock_error** err, const error& e) noexcept {
    const int code = code_of(e.code());
    if (!err)
        return code;
    try {
        auto* out = new sqlock_error{
            code,          e.what(),         e.sqlstate(), e.backend(), e.native_code(),
            e.retryable(), is_server_full(e)};
        *err = out;
    } catch (...) {
        *err = &out_of_memory;
    }
    return code;
}

void require(const void* p, const char* what) {
    if (!p)
        throw error(errc::invalid_argument, std::string(what) + " must not be NULL");
}

} // namespace sqlock::capi

using sqlock::capi::out_of_memory;

extern "C" {

const char* sqlock_code_name(int code) {
    switch (code) {
    case SQLOCK_OK:
        return "ok";
    case SQLOCK_NOT_GRANTED:
        return "not_granted";
    case SQLOCK_E_INVALID_ARGUMENT:
        return "invalid_argument";
    case SQLOCK_E_CONNECTION:
        return "connection";
    case SQLOCK_E_TIMEOUT:
        return "timeout";
    case SQLOCK_E_CONFLICT:
        return "conflict";
    case SQLOCK_E_LOCK_LOST:
        return "lock_lost";
    case SQLOCK_E_SCHEMA_MISSING:
        return "schema_missing";
    case SQLOCK_E_SCHEMA_MISMATCH:
        return "schema_mismatch";
    case SQLOCK_E_UNSUPPORTED:
        return "unsupported";
    case SQLOCK_E_TOPOLOGY:
        return "topology";
    case SQLOCK_E_BACKEND:
        return "backend";
    case SQLOCK_E_CANCELED:
        return "canceled";
    case SQLOCK_E_NO_MEMORY:
        return "no_memory";
    case SQLOCK_E_INTERNAL:
        return "internal";
    default:
        return "unknown";
    }
}

int sqlock_error_code(const sqlock_error* error) {
    return error ? error->code : SQLOCK_E_INVALID_ARGUMENT;
}

const char* sqlock_error_message(const sqlock_error* error) {
    return error ? error->message.c_str() : "";
}

const char* sqlock_error_sqlstate(const sqlock_error* error) {
    return error ? error->sqlstate.c_str() : "";
}

int sqlock_error_native_code(const sqlock_error* error) {
    return error ? error->native_code : 0;
}

const char* sqlock_error_backend(const sqlock_error* error) {
    return error ? error->backend.c_str() : "";
}

int sqlock_error_retryable(const sqlock_error* error) {
    return error && error->retryable ? 1 : 0;
}

int sqlock_error_server_full(const sqlock_error* error) {
    return error && error->server_full ? 1 : 0;
}

void sqlock_error_free(sqlock_error* error) {
    if (error != &out_of_memory)
        delete error;
}

void sqlock_free(void* memory) {
    std::free(memory);
}

} // extern "C"
