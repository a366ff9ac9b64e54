// The C API's option structs: their defaults (the _init functions), their reading into the C++
// options, and the callback gate.
#include "capi/options.hpp"

#include "capi/errors.hpp"

#include <chrono>

namespace sqlock::capi {

namespace {

std::chrono::milliseconds ms(std::int64_t value) {
    return std::chrono::milliseconds(value);
}

std::int64_t count_ms(std::chrono::milliseconds value) {
    return static_cast<std::int64_t>(value.count());
}

} // namespace

int c_reason(loss_reason reason) noexcept {
    switch (reason) {
    case loss_reason::none:
        return SQLOCK_LOSS_NONE;
    case loss_reason::lost:
        return SQLOCK_LOSS_LOST;
    case loss_reason::unknown:
        return SQLOCK_LOSS_UNKNOWN;
    }
    return SQLOCK_LOSS_UNKNOWN;
}

void callback_gate::lost(const lock_lost_event& event) noexcept {
    std::lock_guard lock(m_mutex);
    if (m_closed || !m_on_lost)
        return;
    const sqlock_lost_event c{sizeof(sqlock_lost_event), event.name.c_str(), event.token,
                              c_reason(event.reason), event.message.c_str()};
    m_on_lost(&c, m_user);
}

void callback_gate::at_risk(const lock_at_risk_event& event) noexcept {
    std::lock_guard lock(m_mutex);
    if (m_closed || !m_on_at_risk)
        return;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        event.lease_end - std::chrono::steady_clock::now());
    const sqlock_at_risk_event c{
        sizeof(sqlock_at_risk_event), event.name.c_str(), event.token,
        event.at_risk ? 1 : 0,        count_ms(left),     event.message.c_str()};
    m_on_at_risk(&c, m_user);
}

void callback_gate::close() noexcept {
    std::lock_guard lock(m_mutex);
    m_closed = true;
}

strategy to_strategy(int value) {
    switch (value) {
    case SQLOCK_UNIQUE_KEY:
        return strategy::unique_key;
    case SQLOCK_SELECT_FOR_UPDATE:
        return strategy::select_for_update;
    case SQLOCK_OPTIMISTIC_VERSION:
        return strategy::optimistic_version;
    default:
        throw error(errc::invalid_argument, "unknown strategy " + std::to_string(value) +
                                                " (use SQLOCK_UNIQUE_KEY, SQLOCK_SELECT_FOR_UPDATE "
                                                "or SQLOCK_OPTIMISTIC_VERSION)");
    }
}

connect_options to_connect_options(const sqlock_db_options& o) {
    if (o.pool_size < 1)
        throw error(errc::invalid_argument, "pool_size must be at least 1");
    connect_options out;
    if (o.table_prefix)
        out.table_prefix = o.table_prefix;
    out.connect_timeout = ms(o.connect_timeout_ms);
    out.io_timeout = ms(o.io_timeout_ms);
    out.pool_size = static_cast<std::size_t>(o.pool_size);
    out.check_schema = o.check_schema != 0;
    out.require_synchronous_replication = o.require_synchronous_replication != 0;
    if (o.password_file)
        out.password_file = o.password_file;
    return out;
}

namespace {

/// Sets `on_lost` and `on_at_risk` (of mutex_options or leader_options) to go through a new
/// gate for the C callbacks, if there are any.
template <class CppOptions>
void route_callbacks(CppOptions& out, sqlock_lost_fn on_lost, sqlock_at_risk_fn on_at_risk,
                     void* user, std::shared_ptr<callback_gate>& gate) {
    gate.reset();
    if (!on_lost && !on_at_risk)
        return;
    gate = std::make_shared<callback_gate>(on_lost, on_at_risk, user);
    if (on_lost)
        out.on_lost = [gate](const lock_lost_event& e) {
            gate->lost(e);
        };
    if (on_at_risk)
        out.on_at_risk = [gate](const lock_at_risk_event& e) {
            gate->at_risk(e);
        };
}

} // namespace

mutex_options to_mutex_options(const sqlock_lock_options& o, std::shared_ptr<callback_gate>& gate) {
    mutex_options out;
    out.strategy = to_strategy(o.strategy);
    out.ttl = ms(o.ttl_ms);
    out.retry_min = ms(o.retry_min_ms);
    out.retry_max = ms(o.retry_max_ms);
    out.renew = o.renew != 0;
    route_callbacks(out, o.on_lost, o.on_at_risk, o.callback_user, gate);
    return out;
}

leader_options to_leader_options(const sqlock_leader_options& o,
                                 std::shared_ptr<callback_gate>& gate) {
    leader_options out;
    out.ttl = ms(o.ttl_ms);
    out.retry_min = ms(o.retry_min_ms);
    out.retry_max = ms(o.retry_max_ms);
    route_callbacks(out, o.on_lost, o.on_at_risk, o.callback_user, gate);
    return out;
}

void copy_truncated(char* out, std::size_t size, const std::string& text) noexcept {
    if (size == 0)
        return;
    const std::size_t n = text.size() < size ? text.size() : size - 1;
    std::memcpy(out, text.data(), n);
    out[n] = '\0';
}

sqlock_db_options default_db_options() noexcept {
    const connect_options cpp;
    sqlock_db_options o{};
    o.struct_size = sizeof o;
    o.table_prefix = nullptr;
    o.connect_timeout_ms = count_ms(cpp.connect_timeout);
    o.io_timeout_ms = count_ms(cpp.io_timeout);
    o.pool_size = static_cast<std::int64_t>(cpp.pool_size);
    o.check_schema = cpp.check_schema ? 1 : 0;
    o.require_synchronous_replication = cpp.require_synchronous_replication ? 1 : 0;
    o.password_file = nullptr;
    return o;
}

sqlock_lock_options default_lock_options() noexcept {
    const mutex_options cpp;
    sqlock_lock_options o{};
    o.struct_size = sizeof o;
    o.strategy = SQLOCK_UNIQUE_KEY;
    o.ttl_ms = count_ms(cpp.ttl);
    o.retry_min_ms = count_ms(cpp.retry_min);
    o.retry_max_ms = count_ms(cpp.retry_max);
    o.renew = cpp.renew ? 1 : 0;
    return o;
}

sqlock_leader_options default_leader_options() noexcept {
    const leader_options cpp;
    sqlock_leader_options o{};
    o.struct_size = sizeof o;
    o.ttl_ms = count_ms(cpp.ttl);
    o.retry_min_ms = count_ms(cpp.retry_min);
    o.retry_max_ms = count_ms(cpp.retry_max);
    return o;
}

sqlock_job_options default_job_options() noexcept {
    sqlock_job_options o{};
    o.struct_size = sizeof o;
    o.wait_ms = -1; // a negative wait: the C++ default (one period)
    return o;
}

} // namespace sqlock::capi

extern "C" {

void sqlock_db_options_init(sqlock_db_options* options) {
    if (options)
        *options = sqlock::capi::default_db_options();
}

void sqlock_lock_options_init(sqlock_lock_options* options) {
    if (options)
        *options = sqlock::capi::default_lock_options();
}

void sqlock_leader_options_init(sqlock_leader_options* options) {
    if (options)
        *options = sqlock::capi::default_leader_options();
}

void sqlock_job_options_init(sqlock_job_options* options) {
    if (options)
        *options = sqlock::capi::default_job_options();
}

} // extern "C"
