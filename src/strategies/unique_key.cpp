// strategy::unique_key — a lease row under the lock name's primary key.
//
// Statements per operation (each one round trip, autocommit, one durable commit):
//   acquire / take over expired / re-enter : acquire_unique_key (INSERT ... ON CONFLICT/ON
//                                             DUPLICATE KEY ... RETURNING token)
//   release (last hold)                    : release_lease    (DELETE ... owner AND token)
//   release (re-entrant hold)              : release_decrement (UPDATE hold_count - 1 ...)
// Only when a reply is lost (connection error) one extra inspect_lock resolves the doubt by
// reading the row by owner: an outcome is never guessed and never blindly retried.
#include "core/owner.hpp"
#include "strategies/strategy.hpp"

namespace sqlock::detail {

namespace {

struct lock_row {
    std::string owner;
    std::int64_t token = 0;
    std::int64_t hold_count = 0;
    std::int64_t expires_in_ms = 0;
};

std::optional<lock_row> inspect(database_impl& db, std::string_view name) {
    const auto res = db.run(statement::inspect_lock, {name});
    if (res.rows.empty())
        return std::nullopt;
    const auto& r = res.rows.front();
    return lock_row{r.at(0).value_or(""), column_int(r.at(1)), column_int(r.at(2)),
                    column_int(r.at(3))};
}

[[noreturn]] void throw_lost(const database_impl& db, const lock_request& req, std::string why) {
    throw error(errc::lock_lost,
                "lock \"" + std::string(req.name) + "\" in " + db.config().redacted_url +
                    " was lost: " + why,
                std::string(to_string(db.kind())));
}

class unique_key_strategy final : public lock_strategy {
public:
    std::optional<grant> try_acquire(database_impl& db, const lock_request& req,
                                     std::chrono::milliseconds /*wait: polls instead*/) override {
        const auto sent = std::chrono::steady_clock::now();
        try {
            return acquire_statement(db, req, nullptr);
        } catch (const error& e) {
            if (e.code() != errc::connection)
                throw;
            // The reply was lost: the grant may or may not have happened. Read the row back.
            const auto row = inspect(db, req.name);
            if (row && row->owner == req.owner && row->expires_in_ms > 0)
                return grant{row->token, row->hold_count, lease_end(sent, req.ttl), {}};
            throw;
        }
    }

    grant reenter(database_impl& db, const lock_request& req, const grant& held) override {
        const auto g = acquire_statement(db, req, held.token);
        if (!g || g->token != held.token)
            throw_lost(db, req, "its lease expired or was taken over before the re-entrant lock");
        return *g;
    }

    grant renew(database_impl& db, const lock_request& req, const grant& held) override {
        return renew_lease(db, req, held);
    }

    void release(database_impl& db, const lock_request& req, const grant& held) override {
        const bool last = held.hold_count <= 1;
        std::uint64_t affected = 0;
        try {
            affected =
                last ? db.run_async_release(statement::release_lease,
                                            {req.name, req.owner, held.token})
                           .affected_rows
                     : db.run_async_release(statement::release_decrement,
                                            {req.name, req.owner, held.token, held.hold_count})
                           .affected_rows;
        } catch (const error& e) {
            if (e.code() != errc::connection)
                throw;
            const auto row = inspect(db, req.name);
            const bool still_ours = row && row->owner == req.owner && row->token == held.token;
            if (last && !still_ours)
                return; // our DELETE went through (or the lease moved on)
            if (!last && still_ours && row->hold_count == held.hold_count - 1)
                return;
            throw;
        }
        if (affected == 0)
            throw_lost(db, req,
                       "its lease expired and was taken over (token " + std::to_string(held.token) +
                           " no longer owns the row)");
    }

private:
    static std::optional<grant> acquire_statement(database_impl& db, const lock_request& req,
                                                  param held_token) {
        const auto& me = this_process();
        // Twice at most: a backend whose INSERT branch only creates a free row (MariaDB, so
        // that tokens are drawn under the row lock) says so in the 4th column; the repeat
        // then takes that row.
        for (int attempt = 0;; ++attempt) {
            const auto sent = std::chrono::steady_clock::now();
            const auto res =
                db.run(statement::acquire_unique_key,
                       {req.name, req.owner, static_cast<std::int64_t>(req.ttl.count()),
                        std::string_view(me.host), me.pid, held_token});
            if (res.rows.empty())
                return std::nullopt;
            const auto& r = res.rows.front();
            if (column_int(r.at(2)) == 1)
                return grant{
                    column_int(r.at(0)), column_int(r.at(1)), lease_end(sent, req.ttl), {}};
            const bool created_free_row = column_int(r.at(3)) == 1;
            if (!created_free_row || attempt > 0 ||
                !std::holds_alternative<std::nullptr_t>(held_token))
                return std::nullopt; // held by someone else (or a re-entry that found no row)
        }
    }
};

} // namespace

std::unique_ptr<lock_strategy> make_unique_key_strategy() {
    return std::make_unique<unique_key_strategy>();
}

} // namespace sqlock::detail
