// Internal: the lock protocol of one strategy, written once against database_impl/session.
// A strategy never sees backend types; dialect differences live in sql/<backend>/*.sql.
#pragma once

#include "core/database_impl.hpp"
#include "sqlock/mutex.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

namespace sqlock::detail {

/// A grant as the database confirmed it.
struct grant {
    std::int64_t token = 0;
    std::int64_t hold_count = 0;
};

/// Who asks for which lock, for how long.
struct lock_request {
    std::string_view name;
    std::string_view owner;
    std::chrono::milliseconds ttl;
};

class lock_strategy {
public:
    virtual ~lock_strategy() = default;

    /// One attempt at a new grant: the grant, or nullopt when someone else holds the lock.
    /// Throws sqlock::error; connection errors are retryable.
    virtual std::optional<grant> try_acquire(database_impl& db, const lock_request& req) = 0;

    /// Re-entry by the current holder: returns the new hold count. Throws errc::lock_lost when
    /// the grant `held` is no longer ours (expired or taken over): it is never resurrected.
    virtual std::int64_t reenter(database_impl& db, const lock_request& req, const grant& held) = 0;

    /// Gives back one hold of `held` (the last one deletes the lease). Throws errc::lock_lost
    /// when the row is no longer ours, other sqlock::error when the outcome is unknown.
    virtual void release(database_impl& db, const lock_request& req, const grant& held) = 0;
};

/// The implementation of `s`; throws errc::unsupported for strategies not built yet.
std::unique_ptr<lock_strategy> make_strategy(strategy s, backend_kind backend);

} // namespace sqlock::detail
