// Internal: how the core finds a backend. Each backend is a module of its own
// (<libdir>/sqlock<major>/sqlock-<name>.so, loaded on the first use of its URL scheme) or, in a
// static build, linked into libsqlock. Either way it is reached through one entry point,
// sqlock_backend_<name>(), that returns its backend_module.
#pragma once

#include "base/config.hpp"
#include "base/session.hpp"
#include "sqlock/version.hpp"

#include <memory>

namespace sqlock::detail {

/// Bumped whenever session, connection_config, sql_catalog or backend_module change shape:
/// a module built against another layout is refused rather than called.
inline constexpr int backend_module_abi = 2;

/// What a backend gives the core.
struct backend_module {
    int abi;             ///< backend_module_abi of the build that made the module
    const char* version; ///< SQLOCK_VERSION_STRING of that build: modules match their core
    backend_kind kind;
    /// Opens one connection with the session settings sqlock relies on. Throws sqlock::error
    /// (errc::connection for unreachable servers and failed authentication; the message never
    /// contains the password).
    std::unique_ptr<session> (*open_session)(const connection_config& config,
                                             const sql_catalog& catalog);
};

/// The backend for `kind`: loaded from its module on first use (then kept for the life of the
/// process), or the one linked in. Thread-safe. Throws sqlock::error(errc::unsupported) when
/// the module is not installed, cannot be loaded, or was built for another sqlock; the
/// message names the file and the package to install. A failed load is tried again on the
/// next call.
const backend_module& backend_for(backend_kind kind);

/// Where backend modules are looked for: $SQLOCK_MODULE_DIR when set, else the
/// sqlock<major> directory beside the loaded libsqlock (the build tree and every install
/// prefix have the same layout).
std::string backend_module_dir();

} // namespace sqlock::detail

/// Defines the entry point of backend `name` (postgresql, mysql, sqlite): one per module.
#define SQLOCK_BACKEND_ENTRY_POINT(name, open_function)                                            \
    extern "C" const ::sqlock::detail::backend_module* sqlock_backend_##name() noexcept {          \
        static const ::sqlock::detail::backend_module module{                                      \
            ::sqlock::detail::backend_module_abi, SQLOCK_VERSION_STRING,                           \
            ::sqlock::backend_kind::name, &::sqlock::detail::open_function};                       \
        return &module;                                                                            \
    }
