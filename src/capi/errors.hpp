// Internal: the C API's error objects, and the guard every entry point runs its body in, so
// that no C++ exception crosses the C boundary.
#pragma once

#include "sqlock/error.hpp"
#include "sqlock/sqlock.h"

#include <exception>
#include <new>
#include <string>

/// The details of a failure, as the C API hands them out (sqlock.h: sqlock_error_*()).
struct sqlock_error {
    int code = SQLOCK_E_INTERNAL;
    std::string message;
    std::string sqlstate;
    std::string backend;
    int native_code = 0;
    bool retryable = false;
    bool server_full = false;
};

namespace sqlock::capi {

/// The C code of a C++ error category.
int code_of(errc code) noexcept;

/// Stores a new error of `code` with `message` in *err (when err is not null) and returns
/// `code`. Never throws: without memory for it, *err gets the shared out-of-memory error.
int fail(sqlock_error** err, int code, const char* message) noexcept;
/// The same for a sqlock::error: its category, message, SQLSTATE, native code and backend.
int fail(sqlock_error** err, const error& e) noexcept;

/// A copy of `e` for a caller to free; the shared out-of-memory error when there is no memory
/// for one (or `e` is that one). Never throws.
sqlock_error* copy_error(const sqlock_error& e) noexcept;

/// What a message is about: "lock \"NAME\"" (kind "lock"), made only when a message is.
struct subject {
    const char* kind;
    const std::string& name;
    std::string text() const { return std::string(kind) + " \"" + name + "\""; }
};

/// Throws errc::invalid_argument "`what` must not be NULL" when `p` is null.
void require(const void* p, const char* what);

/// Runs `body` (which returns a sqlock_code) with *err cleared first, turning every exception
/// into a code and an error object: sqlock::error into its category, std::bad_alloc into
/// SQLOCK_E_NO_MEMORY, anything else into SQLOCK_E_INTERNAL.
template <class Body>
int guarded(sqlock_error** err, Body&& body) noexcept {
    if (err)
        *err = nullptr;
    try {
        return body();
    } catch (const error& e) {
        return fail(err, e);
    } catch (const std::bad_alloc&) {
        return fail(err, SQLOCK_E_NO_MEMORY, "out of memory");
    } catch (const std::exception& e) {
        return fail(err, SQLOCK_E_INTERNAL, e.what());
    } catch (...) {
        return fail(err, SQLOCK_E_INTERNAL, "an unknown exception inside sqlock");
    }
}

/// Runs `body` (returning T) for a function without an error parameter: `fallback` when it
/// throws.
template <class T, class Body>
T quietly(T fallback, Body&& body) noexcept {
    try {
        return body();
    } catch (...) {
        return fallback;
    }
}

} // namespace sqlock::capi
