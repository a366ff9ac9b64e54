#include "sqlock/error.hpp"

#include <utility>

namespace sqlock {

std::string_view to_string(errc code) noexcept {
    switch (code) {
    case errc::invalid_argument:
        return "invalid_argument";
    case errc::connection:
        return "connection";
    case errc::timeout:
        return "timeout";
    case errc::conflict:
        return "conflict";
    case errc::lock_lost:
        return "lock_lost";
    case errc::schema_missing:
        return "schema_missing";
    case errc::schema_mismatch:
        return "schema_mismatch";
    case errc::unsupported:
        return "unsupported";
    case errc::topology:
        return "topology";
    case errc::backend:
        return "backend";
    }
    return "unknown";
}

error::error(errc code, const std::string& message, std::string backend, int native_code,
             std::string sqlstate)
    : std::runtime_error(message), m_code(code), m_backend(std::move(backend)),
      m_native_code(native_code), m_sqlstate(std::move(sqlstate)) {}

bool error::retryable() const noexcept {
    return m_code == errc::connection || m_code == errc::timeout || m_code == errc::conflict;
}

} // namespace sqlock
