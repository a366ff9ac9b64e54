// Operations on the lock table: list, find, reap, force release, recorded clock steps, and
// the fencing condition for a caller's own SQL.
#include "backends/backend.hpp"
#include "backends/local_queue.hpp"
#include "base/embedded.hpp"
#include "base/owner.hpp"
#include "base/rows.hpp"
#include "database/database_impl.hpp"
#include "database/stale_leases.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <map>
#include <tuple>

namespace sqlock {

std::string database::fencing_condition(std::string_view name_placeholder,
                                        std::string_view token_placeholder) const {
    // sql/<backend>/fencing_condition.sql: comment lines, then the condition, :name and :token
    // standing for the caller's placeholders.
    const auto path =
        "sql/" + std::string(detail::backend_dir(backend())) + "/fencing_condition.sql";
    const auto file = detail::find_embedded(path);
    if (!file)
        throw std::logic_error("sqlock was built without " + path);
    std::string text;
    for (std::size_t at = 0; at < file->size();) {
        const auto end = std::min(file->find('\n', at), file->size());
        const auto line = file->substr(at, end - at);
        if (!line.starts_with("--") && !line.empty())
            text += (text.empty() ? "" : " ") + std::string(line);
        at = end + 1;
    }
    text = m_impl->expand(text);
    std::string out;
    for (std::size_t at = 0; at < text.size();) {
        if (text.compare(at, 5, ":name") == 0) {
            out += name_placeholder;
            at += 5;
        } else if (text.compare(at, 6, ":token") == 0) {
            out += token_placeholder;
            at += 6;
        } else {
            out += text[at++];
        }
    }
    return out;
}

namespace {

/// One row of list_locks / find_lock.
lock_info lock_info_of(detail::lock_listing_row r) {
    lock_info info;
    info.name = std::move(r.name);
    info.owner = std::move(r.owner);
    info.host = std::move(r.host);
    info.pid = r.pid;
    info.strategy = std::move(r.strategy);
    info.token = r.token;
    info.hold_count = r.hold_count;
    info.acquired_at = std::move(r.acquired_at);
    info.expires_at = std::move(r.expires_at);
    info.expires_in = std::chrono::milliseconds(r.expires_in_ms);
    info.held_for = info.owner.empty() ? std::chrono::milliseconds(0)
                                       : std::chrono::milliseconds(r.held_for_ms);
    return info;
}

/// SQLite: the callers waiting in each lock's queue file (local_queue.hpp), first in line
/// first. The file tells their order, not who they are or since when.
void add_queued_tickets(detail::database_impl& db, std::vector<lock_info>& locks) {
    for (auto& l : locks) {
        const auto tickets =
            detail::tickets_in_line(detail::queue_file_for(db.lock_file_for(l.name)));
        std::int64_t position = 0;
        for (const auto t : tickets)
            l.waiters.push_back({"ticket " + std::to_string(t), std::nullopt, ++position});
    }
}

/// "host:pid" of an owner id ("host:pid:nonce/handle.thread") or of PostgreSQL's
/// application_name ("sqlock host:pid", or an owner id while a lock session locks).
std::string_view host_and_pid(std::string_view id) {
    if (id.starts_with("sqlock "))
        id.remove_prefix(7);
    const auto colon = id.find(':');
    const auto end = colon == std::string_view::npos ? colon : id.find(':', colon + 1);
    return id.substr(0, std::min(end, id.find('/')));
}

/// Whether a session that list_waiters reports as `who` belongs to the process that holds
/// lease `l`: PostgreSQL names sessions "sqlock host:pid", MariaDB's connector "pid N".
bool holders_session(const detail::backend_traits& traits, std::string_view who,
                     const lock_info& l) {
    if (l.owner.empty())
        return false;
    if (traits.sessions_named_by_owner)
        return host_and_pid(who) == host_and_pid(l.owner);
    return who == "pid " + std::to_string(l.pid);
}

/// PostgreSQL and MariaDB: the waiters list_waiters finds, per name, first in line first. A
/// session that has a name's queue (granted) is the lease's holder or the next in line: a
/// waiter unless it is the holder's process. Waiters the server hides mark the rows instead.
void add_server_waiters(detail::database_impl& db, std::vector<lock_info>& locks) {
    const auto& traits = db.traits();
    detail::result res;
    try {
        res = db.run(detail::statement::list_waiters, {});
    } catch (const error&) {
        // No right to read the server's lock views: say so rather than fail the listing.
        for (auto& l : locks)
            l.waiters_hidden = l.waiters.empty() && l.strategy != "select_for_update";
        return;
    }
    const auto rows = detail::decode_rows<detail::waiter_row>(res);
    std::map<std::string, std::vector<const detail::waiter_row*>, std::less<>> by_name;
    bool hidden = false;
    for (const auto& w : rows) {
        if (w.name)
            by_name[*w.name].push_back(&w);
        else
            hidden = true;
    }
    for (auto& l : locks) {
        if (hidden && l.strategy != "select_for_update")
            l.waiters_hidden = true;
        const auto found = by_name.find(l.name);
        if (found == by_name.end())
            continue;
        for (const auto* w : found->second) {
            const std::string& app = w->who;
            if (w->granted && holders_session(traits, app, l))
                continue;
            std::string who = std::string(traits.session_word) + " " + std::to_string(w->session);
            if (!app.empty())
                who += " (" + app + ")";
            l.waiters.push_back({std::move(who), std::chrono::milliseconds(w->waited_ms),
                                 static_cast<std::int64_t>(l.waiters.size() + 1)});
        }
    }
}

/// select_for_update rows whose holder list_locks cannot see (MariaDB, SQLite): asks the
/// server's lock monitor (MariaDB) or the lock files (SQLite), taking no lock; rows it cannot
/// tell about are marked holder_hidden. PostgreSQL's list_locks finds the holder itself.
void reveal_row_lock_holders(detail::database_impl& db, std::vector<lock_info>& locks) {
    const auto transactional = [](const lock_info& l) {
        return l.strategy == "select_for_update";
    };
    if (db.traits().lists_row_lock_holders ||
        std::none_of(locks.begin(), locks.end(), transactional))
        return;
    const auto found_held = [](lock_info& l, std::string who) {
        l.owner = std::move(who);
        l.acquired_at.clear(); // the row's times are its creation's, not the hold's
        l.held_for = std::chrono::milliseconds(0);
    };
    auto s = db.checkout();
    if (db.traits().lock_files) {
        for (auto& l : locks) {
            if (!transactional(l))
                continue;
            const auto holder = s->lock_file_holder(db.lock_file_for(l.name));
            if (!holder) {
                l.holder_hidden = true;
            } else if (*holder > 0) {
                // A lock file is local to its host: the holder is a process of this one.
                found_held(l, detail::this_process().host + ":" + std::to_string(*holder));
                l.host = detail::this_process().host;
                l.pid = *holder;
            } else if (*holder < 0) {
                found_held(l, "a process holding its lock file");
            }
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
            const std::string pid =
                r.client_pid > 0 ? " (pid " + std::to_string(r.client_pid) + ")" : "";
            if (r.waiting) {
                l.waiters.push_back(
                    {who + pid, std::chrono::milliseconds(r.waited_ms), std::nullopt});
            } else {
                found_held(l, who); // the owner id is the session; the pid is the client's
                l.pid = r.client_pid;
            }
        }
        // InnoDB grants a row's lock requests in the order they came: longest waiting first.
        std::stable_sort(l.waiters.begin(), l.waiters.end(),
                         [](const auto& a, const auto& b) { return a.waited_for > b.waited_for; });
        std::int64_t position = 0;
        for (auto& w : l.waiters)
            w.position = ++position;
    }
}

/// reap() with dry_run: what it would delete (lock rows past `grace` ms; ledger rows past
/// `keep` ms, when given), deleting nothing.
reap_result reap_dry_run(detail::database_impl& db, std::int64_t grace,
                         std::optional<std::int64_t> keep) {
    const auto count = [&](detail::statement id, std::int64_t arg) {
        return static_cast<std::size_t>(
            detail::decode_single<detail::expired_count_row>(db.run(id, {arg})).expired);
    };
    reap_result out;
    out.expired = count(detail::statement::count_expired, grace);
    if (keep)
        out.history_expired = count(detail::statement::job_prune_count, *keep);
    out.batches = 1;
    return out;
}

/// Runs `id` with {batch, arg} until a run deletes fewer than `batch` rows (bounded batches,
/// never one long statement), adding the rows deleted to `deleted` and the statements to
/// out.batches.
void delete_in_batches(detail::database_impl& db, detail::statement id, std::int64_t batch,
                       std::int64_t arg, reap_result& out, std::size_t& deleted) {
    for (;;) {
        const auto res = detail::run_reap(db, id, {batch, arg});
        ++out.batches;
        deleted += res.affected_rows;
        if (res.affected_rows < static_cast<std::uint64_t>(batch))
            break;
    }
}

} // namespace

std::vector<lock_info> database::list() {
    auto rows = detail::decode_rows<detail::lock_listing_row>(
        m_impl->run(detail::statement::list_locks, {}));
    std::vector<lock_info> out;
    out.reserve(rows.size());
    for (auto& r : rows)
        out.push_back(lock_info_of(std::move(r)));
    reveal_row_lock_holders(*m_impl, out);
    if (m_impl->traits().queues_waiters_locally)
        add_queued_tickets(*m_impl, out);
    else if (!out.empty())
        add_server_waiters(*m_impl, out);
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
    if (options.dry_run)
        return reap_dry_run(*m_impl, grace,
                            options.prune_history ? std::optional(keep) : std::nullopt);
    reap_result out;
    if (options.settle.count() < 0)
        throw error(errc::invalid_argument, "reap settle time must not be negative");
    const auto batch = static_cast<std::int64_t>(std::min<std::size_t>(options.batch, 1'000'000));
    // SQLite: a DELETE takes the one write lock even when it deletes nothing, and a reaper
    // passing often would keep renewals waiting for it; a read first finds nothing to do.
    const bool read_first = m_impl->traits().writes_take_the_database;
    const auto nothing = [&](detail::statement count, std::int64_t arg) {
        if (!read_first)
            return false;
        ++out.batches;
        return detail::decode_single<detail::expired_count_row>(m_impl->run(count, {arg}))
                   .expired == 0;
    };
    if (!nothing(detail::statement::count_expired, grace)) // free rows: never anyone's lock
        delete_in_batches(*m_impl, detail::statement::reap_expired, batch, grace, out, out.deleted);
    // Held rows whose lease ended, once seen unchanged for their TTL (a read, then deletes).
    m_impl->stale_leases().reap(*m_impl, batch, grace, options.settle, out);
    if (options.prune_history && !nothing(detail::statement::job_prune_count, keep))
        delete_in_batches(*m_impl, detail::statement::job_prune, batch, keep, out,
                          out.history_deleted);
    return out;
}

std::optional<lock_info> database::find(std::string_view name) {
    auto row = detail::decode_first<detail::lock_listing_row>(
        m_impl->run(detail::statement::find_lock, {name}));
    if (!row)
        return std::nullopt;
    std::vector<lock_info> one{lock_info_of(std::move(*row))};
    reveal_row_lock_holders(*m_impl, one);
    if (m_impl->traits().queues_waiters_locally)
        add_queued_tickets(*m_impl, one);
    else
        add_server_waiters(*m_impl, one);
    return std::move(one.front());
}

force_release_result database::force_release(std::string_view name, std::string_view actor) {
    using detail::statement;
    force_release_result out;
    auto s = m_impl->checkout();
    try {
        const auto before = detail::decode_first<detail::inspect_lock_row>(
            s->execute(statement::inspect_lock, {name}));
        if (!before)
            return out;
        out.previous_owner = before->owner;
        out.previous_token = before->token;
        out.strategy = before->strategy;
        if (out.strategy == "select_for_update") {
            if (m_impl->traits().lock_files) {
                // The lock is a process's write lock on the name's lock file: nothing from
                // outside that process can end it but ending the process.
                const auto holder = s->lock_file_holder(m_impl->lock_file_for(name));
                if (holder && *holder == 0)
                    return out; // nobody holds it: nothing to release
                throw error(errc::unsupported,
                            "cannot force-release select_for_update lock \"" + std::string(name) +
                                "\" on " + std::string(to_string(backend())) +
                                ": it is a write lock on its lock file, held by " +
                                (holder && *holder > 0
                                     ? "process " + std::to_string(*holder) + " on this host"
                                     : std::string("a process of this host")) +
                                "; end that process to release it");
            }
            if (!m_impl->traits().ends_row_lock_holders)
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
        if (const auto held = detail::decode_first<detail::inspect_lock_row>(
                s->execute(statement::inspect_lock, {name}))) {
            out.previous_owner = held->owner;
            out.previous_token = held->token;
        }
        // Only a held row is freed (an expired holder's too: its token moves past the old
        // grant). A free row has nobody to fence off: no token bump, no audit row.
        const auto freed = s->execute(statement::force_release, {name});
        if (freed.affected_rows == 0) {
            s->rollback();
            out.new_token = out.previous_token;
            return out;
        }
        const auto after = detail::decode_first<detail::inspect_lock_row>(
            s->execute(statement::inspect_lock, {name}));
        out.new_token = after ? after->token : 0;
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
    for (auto& r : detail::decode_rows<detail::clock_step_row>(res))
        out.push_back({std::move(r.seen_at), std::move(r.observer),
                       std::chrono::milliseconds(r.step_ms), std::chrono::milliseconds(r.age_ms)});
    return out;
}

std::uint64_t database::clock_steps_noticed() const noexcept {
    return m_impl->clock_steps_seen().steps;
}

} // namespace sqlock
