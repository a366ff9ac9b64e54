// Operations on the lock table: list, find, reap, force release, recorded clock steps, and
// the fencing condition for a caller's own SQL.
#include "core/database_impl.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <tuple>

namespace sqlock {

std::string database::fencing_condition(std::string_view name_placeholder,
                                        std::string_view token_placeholder) const {
    const std::string name(name_placeholder);
    const std::string token(token_placeholder);
    if (backend() == backend_kind::sqlite) {
        // No clock: a lease is its holder's until a waiter dropped it (schema 7).
        return "EXISTS (SELECT 1 FROM " + m_impl->expand("{locks}") + " WHERE name = " + name +
               " AND token = " + token + " AND owner <> '')";
    }
    const std::string call = m_impl->expand("{holds}") + "(" + name + ", " + token + ")";
    return backend() == backend_kind::mysql ? call + " = 1" : call;
}

namespace {

/// One row of list_locks / find_lock.
lock_info lock_info_of(const detail::row& r) {
    lock_info info;
    info.name = r.at(0).value_or("");
    info.owner = r.at(1).value_or("");
    info.host = r.at(2).value_or("");
    info.pid = detail::column_int(r.at(3));
    info.strategy = r.at(4).value_or("");
    info.token = detail::column_int(r.at(5));
    info.hold_count = detail::column_int(r.at(6));
    info.acquired_at = r.at(7).value_or("");
    info.expires_at = r.at(8).value_or("");
    info.expires_in = std::chrono::milliseconds(detail::column_int(r.at(9)));
    info.held_for = info.owner.empty() ? std::chrono::milliseconds(0)
                                       : std::chrono::milliseconds(detail::column_int(r.at(10)));
    return info;
}

/// select_for_update rows whose holder list_locks cannot see (MariaDB, SQLite): asks the
/// server's lock monitor (MariaDB) or the lock files (SQLite), taking no lock; rows it cannot
/// tell about are marked holder_hidden. PostgreSQL's list_locks finds the holder itself.
void reveal_row_lock_holders(detail::database_impl& db, backend_kind kind,
                             std::vector<lock_info>& locks) {
    const auto transactional = [](const lock_info& l) {
        return l.strategy == "select_for_update";
    };
    if (kind == backend_kind::postgresql || std::none_of(locks.begin(), locks.end(), transactional))
        return;
    const auto found_held = [](lock_info& l, std::string who) {
        l.owner = std::move(who);
        l.acquired_at.clear(); // the row's times are its creation's, not the hold's
        l.held_for = std::chrono::milliseconds(0);
    };
    auto s = db.checkout();
    if (kind == backend_kind::sqlite) {
        for (auto& l : locks) {
            if (!transactional(l))
                continue;
            const auto held = s->lock_file_held(db.lock_file_for(l.name));
            if (!held)
                l.holder_hidden = true;
            else if (*held)
                found_held(l, "a process holding its lock file");
        }
        return;
    }
    std::string table = db.expand("{locks}");
    std::erase_if(table, [](char c) { return c == '`' || c == '"'; });
    const auto reports = s->row_locks(table);
    for (auto& l : locks) {
        if (!transactional(l))
            continue;
        if (!reports) {
            l.holder_hidden = true;
            continue;
        }
        for (const auto& r : *reports) {
            if (r.key_length != l.name.size() || !std::string_view(l.name).starts_with(r.key))
                continue;
            const std::string who = "connection " + std::to_string(r.session_id);
            if (r.waiting)
                l.waiters.push_back({who, std::chrono::milliseconds(r.waited_ms), std::nullopt});
            else
                found_held(l, who);
        }
        std::stable_sort(l.waiters.begin(), l.waiters.end(),
                         [](const auto& a, const auto& b) { return a.waited_for > b.waited_for; });
    }
}

} // namespace

std::vector<lock_info> database::list() {
    const auto res = m_impl->run(detail::statement::list_locks, {});
    std::vector<lock_info> out;
    out.reserve(res.rows.size());
    for (const auto& r : res.rows)
        out.push_back(lock_info_of(r));
    reveal_row_lock_holders(*m_impl, backend(), out);
    // A semaphore's or shared_mutex's locks together, in a reader's order: its writer gate,
    // then its permits by number ("permit 2" before "permit 10"), then its queue. Names compare
    // as bytes, the same on every backend (an ORDER BY follows the database's collation).
    const auto order = [](const lock_info& l) {
        const auto role = l.role();
        const auto space = role.find(' ');
        std::int64_t rank = role.empty() ? -2 : -1; // a mutex; a role without a number (writer)
        if (space != std::string_view::npos) {
            const auto what = role.substr(space + 1);
            std::int64_t k = 0;
            const auto [end, ec] = std::from_chars(what.data(), what.data() + what.size(), k);
            rank = ec == std::errc{} && end == what.data() + what.size()
                       ? k
                       : std::numeric_limits<std::int64_t>::max(); // the queue
        }
        return std::tuple(l.primitive_name(), rank, role);
    };
    std::stable_sort(out.begin(), out.end(),
                     [&](const lock_info& a, const lock_info& b) { return order(a) < order(b); });
    return out;
}

std::size_t database::reap(std::size_t batch) {
    reap_options options;
    options.batch = batch;
    return reap(options).deleted;
}

reap_result database::reap(const reap_options& options) {
    if (options.batch == 0)
        throw error(errc::invalid_argument, "reap batch size must be at least 1");
    if (options.older_than.count() < 0)
        throw error(errc::invalid_argument, "reap grace (older_than) must not be negative");
    if (options.keep_history < std::chrono::hours(24))
        throw error(errc::invalid_argument,
                    "run-ledger retention (keep_history) must be at least one day");
    const auto grace = static_cast<std::int64_t>(options.older_than.count());
    const auto keep = static_cast<std::int64_t>(options.keep_history.count());
    reap_result out;
    if (options.dry_run) {
        const auto res = m_impl->run(detail::statement::count_expired, {grace});
        out.expired = static_cast<std::size_t>(detail::column_int(res.rows.at(0).at(0)));
        if (options.prune_history) {
            const auto hist = m_impl->run(detail::statement::job_prune_count, {keep});
            out.history_expired =
                static_cast<std::size_t>(detail::column_int(hist.rows.at(0).at(0)));
        }
        out.batches = 1;
        return out;
    }
    if (options.settle.count() < 0)
        throw error(errc::invalid_argument, "reap settle time must not be negative");
    const auto batch = static_cast<std::int64_t>(std::min<std::size_t>(options.batch, 1'000'000));
    for (;;) { // free (released) rows: deleting them never ends anyone's lock
        const auto res = m_impl->run_reap(detail::statement::reap_expired, {batch, grace});
        ++out.batches;
        out.deleted += res.affected_rows;
        if (res.affected_rows < static_cast<std::uint64_t>(batch))
            break;
    }
    m_impl->reap_stale_leases(batch, grace, options.settle, out);
    while (options.prune_history) { // the run ledger (sqlock::job), the same bounded batches
        const auto res = m_impl->run_reap(detail::statement::job_prune, {batch, keep});
        ++out.batches;
        out.history_deleted += res.affected_rows;
        if (res.affected_rows < static_cast<std::uint64_t>(batch))
            break;
    }
    return out;
}

detail::result detail::database_impl::run_reap(statement id, std::initializer_list<param> params) {
    for (int tries = 1;; ++tries) {
        try {
            return run(id, params);
        } catch (const error& e) {
            if (e.code() != errc::conflict || tries >= 5)
                throw;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2 * tries)); // let the winner finish
    }
}

void detail::database_impl::reap_stale_leases(std::int64_t batch, std::int64_t grace,
                                              std::chrono::milliseconds settle, reap_result& out) {
    using clock = std::chrono::steady_clock;
    const auto give_up = clock::now() + settle;
    std::lock_guard guard(m_reap_mutex); // one pass at a time per handle: one set of sightings
    for (;;) {
        const auto candidates = run_reap(statement::reap_candidates, {batch, grace});
        ++out.batches;
        const auto now = clock::now();
        std::map<std::string, lease_sighting> seen;
        for (const auto& r : candidates.rows) {
            const auto name = r.at(0).value_or("");
            std::optional<lease_sighting> sighting;
            if (const auto it = m_reap_sightings.find(name); it != m_reap_sightings.end())
                sighting = it->second;
            const auto ttl = std::chrono::milliseconds(column_int(r.at(3)));
            observe(sighting, column_int(r.at(1)), column_int(r.at(2)), ttl,
                    std::chrono::milliseconds(std::max<std::int64_t>(ttl.count(), 1)), now);
            seen.emplace(name, *sighting);
        }
        m_reap_sightings = seen; // leases renewed, released or gone are forgotten
        clock::time_point next = clock::time_point::max();
        std::size_t waiting = 0;
        bool dropped_any = false;
        for (const auto& [name, sighting] : seen) {
            if (now < stale_after(sighting)) {
                ++waiting;
                next = std::min(next, stale_after(sighting));
                continue;
            }
            const auto res = run_reap(statement::drop_stale_lease,
                                      {std::string_view(name), sighting.token, sighting.lease_seq});
            ++out.batches;
            out.deleted += res.affected_rows;
            dropped_any = true;
            m_reap_sightings.erase(name);
        }
        out.deferred = waiting;
        const bool full = candidates.rows.size() >= static_cast<std::size_t>(batch);
        if (full && dropped_any)
            continue; // the next page
        if (waiting == 0 || next > give_up)
            return; // done, or the rest settles in a later pass of this handle
        std::this_thread::sleep_until(next);
    }
}

std::optional<lock_info> database::find(std::string_view name) {
    const auto res = m_impl->run(detail::statement::find_lock, {name});
    if (res.rows.empty())
        return std::nullopt;
    std::vector<lock_info> one{lock_info_of(res.rows.front())};
    reveal_row_lock_holders(*m_impl, backend(), one);
    return std::move(one.front());
}

force_release_result database::force_release(std::string_view name, std::string_view actor) {
    using detail::statement;
    force_release_result out;
    auto s = m_impl->checkout();
    try {
        const auto before = s->execute(statement::inspect_lock, {name});
        if (before.rows.empty())
            return out;
        out.previous_owner = before.rows[0].at(0).value_or("");
        out.previous_token = detail::column_int(before.rows[0].at(1));
        out.strategy = before.rows[0].at(4).value_or("");
        if (out.strategy == "select_for_update") {
            if (backend() != backend_kind::postgresql)
                throw error(errc::unsupported,
                            "cannot force-release select_for_update lock \"" + std::string(name) +
                                "\" on " + std::string(to_string(backend())) +
                                ": the server does not say which session holds it; end the "
                                "holder process (or KILL its mutex::server_session_id())");
            const auto ended = s->execute(statement::fu_terminate_holder, {name});
            out.sessions_ended = ended.rows.size();
            out.released = out.sessions_ended > 0;
            if (out.released) // nothing ended: nothing happened, nothing to record
                s->execute(statement::audit_record, {std::string_view("force_release"), name, actor,
                                                     std::string_view(out.previous_owner),
                                                     out.previous_token, out.previous_token});
            return out;
        }
        s->begin();
        // Read again inside the transaction: the owner and token reported are the ones freed.
        const auto held = s->execute(statement::inspect_lock, {name});
        if (!held.rows.empty()) {
            out.previous_owner = held.rows[0].at(0).value_or("");
            out.previous_token = detail::column_int(held.rows[0].at(1));
        }
        // Only a held row is freed (an expired holder's too: its token moves past the old
        // grant). A free row has nobody to fence off: no token bump, no audit row.
        const auto freed = s->execute(statement::force_release, {name});
        if (freed.affected_rows == 0) {
            s->rollback();
            out.new_token = out.previous_token;
            return out;
        }
        const auto after = s->execute(statement::inspect_lock, {name});
        out.new_token = after.rows.empty() ? 0 : detail::column_int(after.rows[0].at(1));
        s->execute(statement::audit_record,
                   {std::string_view("force_release"), name, actor,
                    std::string_view(out.previous_owner), out.previous_token, out.new_token});
        s->commit();
        out.released = true;
        // Waiters polling this name in this process can go at once.
        m_impl->wakeups().wake(std::string(name));
        return out;
    } catch (const error& e) {
        s->rollback();
        m_impl->rethrow_with_context(e);
    }
}

std::vector<clock_step_record> database::clock_steps(std::size_t limit) {
    const auto res = m_impl->run(detail::statement::list_clock_steps,
                                 {static_cast<std::int64_t>(std::max<std::size_t>(limit, 1))});
    std::vector<clock_step_record> out;
    for (const auto& r : res.rows)
        out.push_back({r.at(0).value_or(""), r.at(1).value_or(""),
                       std::chrono::milliseconds(detail::column_int(r.at(2))),
                       std::chrono::milliseconds(detail::column_int(r.at(3)))});
    return out;
}

std::uint64_t database::clock_steps_noticed() const noexcept {
    return m_impl->clock_steps_seen().steps;
}

} // namespace sqlock
