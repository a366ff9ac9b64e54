#include "strategies/strategy.hpp"

#include <algorithm>

namespace sqlock::detail {

std::chrono::steady_clock::time_point lease_end(std::chrono::steady_clock::time_point sent,
                                                std::chrono::milliseconds ttl) {
    // The database counts the TTL from when it ran the statement, which is after `sent`; the
    // margin also covers clock-rate differences between this host and the server.
    const auto margin = std::min<std::chrono::milliseconds>(ttl / 20, std::chrono::seconds(1));
    return sent + ttl - margin;
}

std::unique_ptr<lock_strategy> make_strategy(strategy s, backend_kind backend) {
    switch (s) {
    case strategy::unique_key:
        return make_unique_key_strategy();
    case strategy::select_for_update:
        return make_select_for_update_strategy();
    case strategy::optimistic_version:
        return make_optimistic_version_strategy();
    }
    throw error(errc::invalid_argument,
                "unknown strategy value for a " + std::string(to_string(backend)) + " lock");
}

} // namespace sqlock::detail
