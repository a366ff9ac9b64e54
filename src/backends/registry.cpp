// Finding a backend: the module beside libsqlock, loaded once on first use of its URL scheme,
// or (static builds) the backends linked in. See backends/module.hpp.
#include "backends/module.hpp"
#include "sqlock/error.hpp"

#include <array>
#include <cstdlib>
#include <dlfcn.h>
#include <mutex>
#include <string>
#include <unistd.h>

#ifdef SQLOCK_BUILTIN_POSTGRESQL
extern "C" const sqlock::detail::backend_module* sqlock_backend_postgresql() noexcept;
#endif
#ifdef SQLOCK_BUILTIN_MYSQL
extern "C" const sqlock::detail::backend_module* sqlock_backend_mysql() noexcept;
#endif
#ifdef SQLOCK_BUILTIN_SQLITE
extern "C" const sqlock::detail::backend_module* sqlock_backend_sqlite() noexcept;
#endif

namespace sqlock::detail {

namespace {

struct backend_slot {
    std::mutex mutex;
    const backend_module* module = nullptr; ///< set once, never unset (modules stay loaded)
};

std::array<backend_slot, 3> g_backends;

#ifndef SQLOCK_STATIC_BUILD
/// The Debian package that ships the module of `kind` (see CPack in CMakeLists.txt).
std::string package_of(backend_kind kind) {
    return "libsqlock" + std::to_string(SQLOCK_VERSION_MAJOR) + "-" + std::string(to_string(kind));
}
#endif

const backend_module* linked_in(backend_kind kind) noexcept {
    switch (kind) {
#ifdef SQLOCK_BUILTIN_POSTGRESQL
    case backend_kind::postgresql:
        return sqlock_backend_postgresql();
#endif
#ifdef SQLOCK_BUILTIN_MYSQL
    case backend_kind::mysql:
        return sqlock_backend_mysql();
#endif
#ifdef SQLOCK_BUILTIN_SQLITE
    case backend_kind::sqlite:
        return sqlock_backend_sqlite();
#endif
    default:
        return nullptr;
    }
}

const backend_module* load_module(backend_kind kind) {
    const std::string name(to_string(kind));
#ifdef SQLOCK_STATIC_BUILD
    throw error(errc::unsupported,
                "this sqlock was built without the " + name + " backend (SQLOCK_WITH_" +
                    (kind == backend_kind::postgresql ? "POSTGRESQL"
                     : kind == backend_kind::mysql    ? "MYSQL"
                                                      : "SQLITE") +
                    "=OFF)",
                name);
#else
    const std::string file = backend_module_dir() + "/sqlock-" + name + ".so";
    const std::string install = "install the package " + package_of(kind) +
                                " (or set SQLOCK_MODULE_DIR to where sqlock-" + name + ".so is)";
    void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char* why = dlerror();
        if (access(file.c_str(), F_OK) != 0)
            throw error(errc::unsupported,
                        "the " + name + " backend is not installed: there is no " + file + "; " +
                            install,
                        name);
        throw error(errc::unsupported,
                    "the " + name + " backend cannot be loaded from " + file + ": " +
                        (why ? why : "unknown error") +
                        " (is its database client library installed?)",
                    name);
    }
    using entry_point = const backend_module* (*)() noexcept;
    const auto entry =
        reinterpret_cast<entry_point>(dlsym(handle, ("sqlock_backend_" + name).c_str()));
    const backend_module* module = entry ? entry() : nullptr;
    if (!module || module->abi != backend_module_abi || module->kind != kind ||
        std::string_view(module->version) != SQLOCK_VERSION_STRING) {
        const std::string built_for =
            module ? std::string("sqlock ") + module->version : std::string("something else");
        dlclose(handle);
        throw error(errc::unsupported,
                    file + " is not the " + name +
                        " backend of sqlock " SQLOCK_VERSION_STRING " (it was built for " +
                        built_for + "): " + install,
                    name);
    }
    return module; // the handle stays open: sessions of this module may live until exit
#endif
}

} // namespace

std::string backend_module_dir() {
    if (const char* dir = secure_getenv("SQLOCK_MODULE_DIR"); dir && *dir)
        return dir;
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&backend_for), &info) != 0 && info.dli_fname) {
        const std::string library = info.dli_fname;
        const auto slash = library.rfind('/');
        return (slash == std::string::npos ? std::string(".") : library.substr(0, slash)) +
               "/" SQLOCK_MODULE_SUBDIR;
    }
    return SQLOCK_MODULE_INSTALL_DIR;
}

const backend_module& backend_for(backend_kind kind) {
    auto& slot = g_backends.at(static_cast<std::size_t>(kind));
    std::lock_guard lock(slot.mutex);
    if (!slot.module) {
        const backend_module* module = linked_in(kind);
        slot.module = module ? module : load_module(kind);
    }
    return *slot.module;
}

} // namespace sqlock::detail
