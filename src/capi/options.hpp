// Internal: the C API's option structs read into the C++ options, and the gate the lost and
// at-risk callbacks pass through.
#pragma once

#include "sqlock/database.hpp"
#include "sqlock/error.hpp"
#include "sqlock/leader.hpp"
#include "sqlock/mutex.hpp"
#include "sqlock/sqlock.h"

#include <cstddef>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

namespace sqlock::capi {

/// A caller's option struct as sqlock.h's "Option structs" reads it: `defaults` overlaid with
/// the first struct_size bytes of `*in` (none for NULL). A struct_size below `oldest` (the size
/// of the struct's first version) is refused; one beyond what this library knows only when
/// the bytes it does not know are not all zero.
template <class T>
T read_options(const T* in, const T& defaults, const char* what, std::size_t oldest = sizeof(T)) {
    if (!in)
        return defaults;
    const std::size_t size = in->struct_size;
    if (size < oldest)
        throw error(errc::invalid_argument, std::string(what) + ".struct_size is " +
                                                std::to_string(size) +
                                                ": fill the struct with its _init function first");
    const auto* bytes = reinterpret_cast<const unsigned char*>(in);
    for (std::size_t i = sizeof(T); i < size; ++i)
        if (bytes[i] != 0)
            throw error(errc::invalid_argument,
                        std::string(what) + " sets a field this library (C API " +
                            std::to_string(SQLOCK_C_API_VERSION) + ") does not know");
    T out = defaults;
    std::memcpy(static_cast<void*>(&out), in, size < sizeof(T) ? size : sizeof(T));
    out.struct_size = sizeof(T);
    return out;
}

/// The lost and at-risk callbacks of one handle. The C++ core calls them on its background
/// thread, possibly while (or after) the handle is closed; the gate makes close() wait for a
/// call in progress and refuse later ones, so that the caller's `user` pointer need only live
/// until close returns.
class callback_gate {
public:
    callback_gate(sqlock_lost_fn on_lost, sqlock_at_risk_fn on_at_risk, void* user)
        : m_on_lost(on_lost), m_on_at_risk(on_at_risk), m_user(user) {}

    /// Passes a loss on to the C callback (unless closed).
    void lost(const lock_lost_event& event) noexcept;
    /// Passes a change of risk on to the C callback (unless closed).
    void at_risk(const lock_at_risk_event& event) noexcept;
    /// No callback runs after this returns (one in progress is waited for).
    void close() noexcept;

    bool wants_lost() const noexcept { return m_on_lost != nullptr; }
    bool wants_at_risk() const noexcept { return m_on_at_risk != nullptr; }

private:
    std::mutex m_mutex; // held during a call, so that close() waits for it
    bool m_closed = false;
    const sqlock_lost_fn m_on_lost;
    const sqlock_at_risk_fn m_on_at_risk;
    void* const m_user;
};

/// The C API's sqlock_loss_reason of `reason`.
int c_reason(loss_reason reason) noexcept;

/// The strategy numbered `value` (sqlock_strategy); throws errc::invalid_argument otherwise.
strategy to_strategy(int value);

/// C++ connect options from C ones.
connect_options to_connect_options(const sqlock_db_options& o);

/// C++ lock options from C ones, the callbacks through a new gate stored in `gate` (null when
/// there are none).
mutex_options to_mutex_options(const sqlock_lock_options& o, std::shared_ptr<callback_gate>& gate);

/// C++ leader options from C ones, the callbacks as for to_mutex_options.
leader_options to_leader_options(const sqlock_leader_options& o,
                                 std::shared_ptr<callback_gate>& gate);

/// Copies `text` into `out[size]`, truncated to fit and always NUL-terminated.
void copy_truncated(char* out, std::size_t size, const std::string& text) noexcept;

/// The C defaults of each option struct (as its _init function sets them).
sqlock_db_options default_db_options() noexcept;
sqlock_lock_options default_lock_options() noexcept;
sqlock_leader_options default_leader_options() noexcept;
sqlock_job_options default_job_options() noexcept;

} // namespace sqlock::capi
