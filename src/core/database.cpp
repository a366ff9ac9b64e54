#include "backends/backend.hpp"
#include "core/database_impl.hpp"
#include "core/embedded.hpp"
#include "core/owner.hpp"
#include "core/sql_text.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>

namespace sqlock {

std::string_view to_string(backend_kind kind) noexcept {
    switch (kind) {
    case backend_kind::postgresql:
        return "postgresql";
    case backend_kind::mysql:
        return "mysql";
    case backend_kind::sqlite:
        return "sqlite";
    }
    return "unknown";
}

namespace detail {

std::string quote_identifier(backend_kind kind, std::string_view identifier) {
    // MySQL quotes with `...`, PostgreSQL and SQLite with "..."; the quote doubles inside.
    const char quote = kind == backend_kind::mysql ? '`' : '"';
    std::string out(1, quote);
    for (const char c : identifier) {
        if (c == quote)
            out += quote;
        out += c;
    }
    out += quote;
    return out;
}

namespace {

std::string_view backend_dir(backend_kind kind) {
    switch (kind) {
    case backend_kind::postgresql:
        return "postgres";
    case backend_kind::mysql:
        return "mysql";
    case backend_kind::sqlite:
        return "sqlite";
    }
    return "";
}

} // namespace

std::int64_t column_int(const std::optional<std::string>& text) noexcept {
    std::int64_t v = 0;
    if (text)
        std::from_chars(text->data(), text->data() + text->size(), v);
    return v;
}

// --- pool ------------------------------------------------------------------------------------

pooled_session::~pooled_session() {
    if (m_session)
        m_owner->give_back(std::move(m_session));
}

void pooled_session::discard() noexcept {
    if (!m_session)
        return;
    m_session.reset();
    m_owner->forget_session();
}

database_impl::database_impl(connection_config config, const connect_options& options)
    : m_config(std::move(config)), m_options(options) {
    validate_table_prefix(m_options.table_prefix);
    if (m_options.connect_timeout.count() <= 0)
        throw error(errc::invalid_argument, "connect_timeout must be positive");
    if (m_options.io_timeout.count() < 0)
        throw error(errc::invalid_argument, "io_timeout must not be negative");
    if (m_options.pool_size == 0)
        throw error(errc::invalid_argument, "pool_size must be >= 1");
    if (m_options.clock_step_threshold.count() <= 0)
        throw error(errc::invalid_argument, "clock_step_threshold must be positive");
    m_config.connect_timeout = m_options.connect_timeout;
    m_config.io_timeout = m_options.io_timeout;

    const auto& prefix = m_options.table_prefix;
    for (const char* table :
         {"locks", "token_seq", "token_counter", "migrations", "locks_expires_idx",
          "locks_token_on_insert", "holds", "audit", "locks_token_on_update", "token_hwm",
          "token_incarnation", "recover_tokens", "clock_steps", "jobs", "job_runs",
          "job_runs_slot_idx", "job_runs_started_idx", "job_runs_prune_idx"}) {
        m_identifiers.emplace_back(table, quote_identifier(m_config.kind, prefix + table));
    }
    m_locks_table = prefix + "locks";
    // The notification channel appears inside a string literal (pg_notify('...')), so it is
    // substituted unquoted; the prefix's characters are limited to [A-Za-z0-9_].
    m_identifiers.emplace_back("channel", prefix + "release");

    const auto dir = std::string("sql/") + std::string(backend_dir(m_config.kind)) + "/";
    for (std::size_t i = 0; i < statement_count; ++i) {
        const auto text = find_embedded(dir + std::string(statement_names[i]) + ".sql");
        if (!text)
            throw std::logic_error("sqlock was built without " + dir +
                                   std::string(statement_names[i]) + ".sql");
        m_catalog.text[i] = expand(*text);
        m_catalog.noop[i] = split_script(*text).empty(); // only comments: nothing to send
        m_catalog.read_back[i] = text->find("-- sqlock: read-back") != std::string_view::npos;
        m_catalog.server_clock[i] = text->find("-- sqlock: server-clock") != std::string_view::npos;
        m_catalog.skip_if_unchanged[i] =
            text->find("-- sqlock: skip-if-unchanged") != std::string_view::npos;
    }
}

std::string database_impl::expand(std::string_view sql) const {
    return expand_identifiers(sql, m_identifiers);
}

std::unique_ptr<session> database_impl::watched(std::unique_ptr<session> s) noexcept {
    s->watch_clock(&m_clock_watch);
    return s;
}

std::unique_ptr<session> database_impl::open_session() {
    m_connects_attempted.fetch_add(1, std::memory_order_relaxed);
    switch (m_config.kind) {
    case backend_kind::postgresql:
        return watched(open_postgres_session(m_config, m_catalog));
    case backend_kind::mysql:
        return watched(open_mysql_session(m_config, m_catalog));
    case backend_kind::sqlite:
        return watched(open_sqlite_session(m_config, m_catalog));
    }
    throw std::logic_error("unknown backend");
}

pooled_session database_impl::checkout() {
    std::unique_lock lock(m_pool_mutex);
    const auto deadline = std::chrono::steady_clock::now() + m_options.connect_timeout;
    while (m_idle.empty() && m_open >= m_options.pool_size) {
        if (m_pool_cv.wait_until(lock, deadline) == std::cv_status::timeout && m_idle.empty() &&
            m_open >= m_options.pool_size)
            throw error(errc::timeout,
                        "all " + std::to_string(m_options.pool_size) + " pooled connections to " +
                            m_config.redacted_url + " stayed busy for " +
                            std::to_string(m_options.connect_timeout.count()) +
                            " ms (raise connect_options::pool_size?)",
                        std::string(to_string(m_config.kind)));
    }
    if (!m_idle.empty()) {
        auto s = std::move(m_idle.back());
        m_idle.pop_back();
        return pooled_session(this, std::move(s));
    }
    ++m_open; // reserve the slot, connect outside the lock
    lock.unlock();
    try {
        return pooled_session(this, open_session());
    } catch (...) {
        lock.lock();
        --m_open;
        m_pool_cv.notify_one();
        throw;
    }
}

void database_impl::forget_session() noexcept {
    std::lock_guard lock(m_pool_mutex);
    --m_open;
    m_pool_cv.notify_one();
}

void database_impl::give_back(std::unique_ptr<session> s) noexcept {
    s->unlisten(); // a waiter's session: a pooled one must not collect every release
    std::lock_guard lock(m_pool_mutex);
    if (s->usable()) {
        m_idle.push_back(std::move(s));
    } else {
        --m_open;
        s.reset();
    }
    m_pool_cv.notify_one();
}

// --- wake-ups ---------------------------------------------------------------------------------

std::uint64_t wake_hub::generation(const std::string& name) {
    std::lock_guard lock(m_mutex);
    const auto it = m_generations.find(name);
    return it == m_generations.end() ? 0 : it->second;
}

void wake_hub::wake(const std::string& name) {
    {
        std::lock_guard lock(m_mutex);
        ++m_generations[name];
    }
    m_cv.notify_all();
}

void wake_hub::wait(const std::string& name, std::uint64_t seen,
                    std::chrono::steady_clock::time_point until) {
    std::unique_lock lock(m_mutex);
    m_cv.wait_until(lock, until, [&] {
        const auto it = m_generations.find(name);
        return it != m_generations.end() && it->second != seen;
    });
}

database_impl::~database_impl() = default;

std::optional<pooled_session> database_impl::try_checkout_idle() noexcept {
    std::lock_guard lock(m_pool_mutex);
    // Keep one only while others can still get a session without waiting: another idle one,
    // or room to open one.
    if (m_idle.empty() || (m_idle.size() == 1 && m_open >= m_options.pool_size))
        return std::nullopt;
    auto s = std::move(m_idle.back());
    m_idle.pop_back();
    return pooled_session(this, std::move(s));
}

bool database_impl::listen_for_releases(session& s) noexcept {
    if (!notifies_releases())
        return false;
    if (s.listening())
        return true;
    try {
        return s.usable() && s.listen(m_options.table_prefix + "release");
    } catch (...) {
        return false; // the next attempt on this session reports what broke
    }
}

void database_impl::await_release(session* s, const std::string& name, std::uint64_t seen,
                                  std::chrono::steady_clock::time_point until) {
    if (!s || !s->listening()) {
        m_wakeups.wait(name, seen, until);
        return;
    }
    // Notifications arrive on `s`; a local unlock only moves the generation: look at both,
    // in slices short enough that a local hand-over is not delayed noticeably.
    constexpr auto slice = std::chrono::milliseconds(50);
    for (;;) {
        const auto now = std::chrono::steady_clock::now();
        if (now >= until || m_wakeups.generation(name) != seen)
            return;
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - now);
        try {
            for (const auto& released : s->wait_notifications(std::min(left, slice)))
                if (released == name)
                    return;
        } catch (...) {
            return;
        }
    }
}

bool turnstile::enter(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(m_mutex);
    const auto free = [this] {
        return !m_busy;
    };
    if (deadline == std::chrono::steady_clock::time_point::max())
        m_cv.wait(lock, free);
    else if (!m_cv.wait_until(lock, deadline, free))
        return false;
    m_busy = true;
    return true;
}

void turnstile::leave() noexcept {
    {
        std::lock_guard lock(m_mutex);
        m_busy = false;
    }
    m_cv.notify_one();
}

std::shared_ptr<turnstile> database_impl::local_gate(const std::string& name) {
    std::lock_guard lock(m_gates_mutex);
    auto& slot = m_gates[name];
    auto gate = slot.lock();
    if (!gate) {
        gate = std::make_shared<turnstile>();
        slot = gate;
    }
    if (m_gates.size() > 1024) // forget names nobody waits for any more
        std::erase_if(m_gates, [](const auto& entry) { return entry.second.expired(); });
    return gate;
}

std::string database_impl::lock_file_for(std::string_view lock_name) const {
    if (m_config.kind != backend_kind::sqlite)
        return {};
    // Two independent 64-bit FNV-1a hashes of prefix + name: a file name of fixed length for
    // any lock name. A collision would only make two names share one lock (more exclusion,
    // never less).
    auto fnv = [&](std::uint64_t hash) {
        for (const char c : m_options.table_prefix + '\0' + std::string(lock_name)) {
            hash ^= static_cast<unsigned char>(c);
            hash *= 0x100000001b3ULL;
        }
        return hash;
    };
    char file[64];
    std::snprintf(file, sizeof file, "%016llx%016llx.lock",
                  static_cast<unsigned long long>(fnv(0xcbf29ce484222325ULL)),
                  static_cast<unsigned long long>(fnv(0x84222325cbf29ce4ULL)));
    return m_config.path + "-sqlock/" + file;
}

std::unique_ptr<session> database_impl::pin(std::string_view lock_name) {
    if (m_config.kind == backend_kind::sqlite) {
        auto config = m_config;
        config.purpose = session_purpose::lock_holder;
        config.lock_file = lock_file_for(lock_name);
        {
            std::lock_guard lock(m_pool_mutex);
            for (auto it = m_idle_lock_files.begin(); it != m_idle_lock_files.end(); ++it) {
                if (it->first == config.lock_file) {
                    auto s = std::move(it->second);
                    m_idle_lock_files.erase(it);
                    return s;
                }
            }
        }
        return watched(open_sqlite_session(config, m_catalog));
    }
    {
        std::lock_guard lock(m_pool_mutex);
        if (pools_lock_sessions() && !m_idle.empty()) {
            // One kind of session on PostgreSQL: the pool's idle one becomes the lock's, so a
            // process with one lock keeps one connection (DESIGN §12).
            auto s = std::move(m_idle.back());
            m_idle.pop_back();
            --m_open;
            m_pool_cv.notify_one(); // room for another pooled session
            return s;
        }
        if (!m_idle_holders.empty()) {
            auto s = std::move(m_idle_holders.back());
            m_idle_holders.pop_back();
            return s;
        }
    }
    {
        // MariaDB lock sessions differ from pooled ones (autocommit off, the process id as a
        // connection attribute): a pooled session sitting idle is closed first, so that the
        // lock's connection replaces it rather than adding to it (DESIGN §12).
        std::unique_ptr<session> spare;
        std::lock_guard lock(m_pool_mutex);
        if (!m_idle.empty()) {
            spare = std::move(m_idle.back());
            m_idle.pop_back();
            --m_open;
            m_pool_cv.notify_one();
        }
    }
    auto config = m_config;
    config.purpose = session_purpose::lock_holder;
    config.client_identity = this_process().id;
    m_connects_attempted.fetch_add(1, std::memory_order_relaxed);
    return watched(config.kind == backend_kind::postgresql
                       ? open_postgres_session(config, m_catalog)
                       : open_mysql_session(config, m_catalog));
}

void database_impl::unpin(std::string_view lock_name, std::unique_ptr<session> s) noexcept {
    if (!s)
        return;
    s->rollback(); // no-op unless a transaction is still open
    s->unlisten(); // no-op unless it waited for releases
    if (!s->usable())
        return; // closes it
    if (pools_lock_sessions()) {
        std::lock_guard lock(m_pool_mutex);
        if (m_open < m_options.pool_size) {
            m_idle.push_back(std::move(s));
            ++m_open;
            m_pool_cv.notify_one();
            return;
        }
    }
    if (m_config.kind == backend_kind::sqlite) {
        // Kept open for the next grant of the same name (opening a lock file costs an open,
        // a dozen stats and three prepares); the least recently used goes first.
        try {
            auto file = lock_file_for(lock_name);
            std::lock_guard lock(m_pool_mutex);
            if (m_idle_lock_files.size() >= m_options.pool_size && !m_idle_lock_files.empty())
                m_idle_lock_files.erase(m_idle_lock_files.begin());
            m_idle_lock_files.emplace_back(std::move(file), std::move(s));
        } catch (...) {
            // out of memory: close it
        }
        return;
    }
    std::lock_guard lock(m_pool_mutex);
    if (m_idle_holders.size() < m_options.pool_size)
        m_idle_holders.push_back(std::move(s));
}

void database_impl::rethrow_with_context(const error& e) const {
    if (e.code() == errc::schema_missing) {
        throw error(errc::schema_missing,
                    "lock table \"" + m_locks_table + "\" is missing in " + m_config.redacted_url +
                        ": run \"sqlock migrate\" (" + e.what() + ")",
                    e.backend(), e.native_code(), e.sqlstate());
    }
    throw e;
}

result database_impl::run(statement id, std::initializer_list<param> params) {
    try {
        if (session* routed = route_scope::current(*this)) {
            m_statements_sent.fetch_add(1, std::memory_order_relaxed);
            record_clock_step(*routed);
            return routed->execute(id, params);
        }
        auto s = checkout();
        m_statements_sent.fetch_add(1, std::memory_order_relaxed);
        record_clock_step(*s); // a step noticed earlier, if any (rare)
        return s->execute(id, params);
    } catch (const error& e) {
        rethrow_with_context(e);
    }
}

namespace {
thread_local route_scope* t_innermost_route = nullptr;
} // namespace

route_scope::route_scope(const database_impl& db, session* s) noexcept
    : m_db(&db), m_session(s), m_outer(t_innermost_route) {
    t_innermost_route = this;
}

route_scope::~route_scope() {
    t_innermost_route = m_outer;
}

session* route_scope::current(const database_impl& db) noexcept {
    for (auto* r = t_innermost_route; r; r = r->m_outer) {
        if (r->m_db == &db)
            return r->m_session && r->m_session->usable() ? r->m_session : nullptr;
    }
    return nullptr;
}

void database_impl::on_clock_step(std::chrono::milliseconds step) noexcept {
    try {
        if (m_options.on_clock_step) {
            m_options.on_clock_step(step);
        } else if (!m_clock_step_logged.exchange(true)) {
            std::fprintf(stderr,
                         "sqlock: the clock of %s stepped by %+.3f s between two replies "
                         "(noticed by %s; locks are unaffected, see `sqlock status`)\n",
                         m_config.redacted_url.c_str(), static_cast<double>(step.count()) / 1000,
                         this_process().id.c_str());
        }
    } catch (...) {
        // A throwing handler must not fail the statement that noticed the step.
    }
}

void database_impl::record_clock_step(session& s) noexcept {
    // Rare (a step), so one more statement on the session at hand; at most one per 10 s.
    const auto step = m_clock_watch.take_unrecorded(std::chrono::seconds(10));
    if (!step)
        return;
    try {
        const auto& me = this_process();
        const auto observer = me.host + ":" + std::to_string(me.pid);
        s.execute(statement::record_clock_step,
                  {std::string_view(observer), static_cast<std::int64_t>(step->count())});
    } catch (...) {
        // Best effort: tables older than schema 5, a server gone meanwhile. The lock is unaffected.
    }
}

namespace {
/// Raises `value` to `to` (never lowers it), against concurrent raises.
void raise_to(std::atomic<std::int64_t>& value, std::int64_t to) noexcept {
    auto seen = value.load();
    while (seen < to && !value.compare_exchange_weak(seen, to)) {
    }
}
} // namespace

void database_impl::cover_token_durably(std::int64_t token) {
    raise_to(m_token_seen, token);
    if (token_covered(token))
        return;
    const auto r = run(statement::fu_raise_hwm, {token, token_reserve_block});
    const std::int64_t hwm =
        r.rows.empty() || r.rows.front().empty() ? 0 : column_int(r.rows.front().front());
    if (hwm < token)
        throw error(errc::schema_missing, "the fencing-token high-water mark in " +
                                              m_config.redacted_url +
                                              " is missing or below token " +
                                              std::to_string(token) + ": run sqlock migrate");
    raise_to(m_durable_token_hwm, hwm);
}

bool database_impl::reserves_on_lock_session() const noexcept {
    return !m_catalog.is_noop(statement::fu_raise_hwm);
}

bool database_impl::token_covered(std::int64_t token) const noexcept {
    return !reserves_on_lock_session() || token <= m_durable_token_hwm.load();
}

void database_impl::reserve_tokens_on(session& s, std::int64_t at_least) {
    // Half a block of headroom: tokens drawn meanwhile by other processes (which reserve
    // their own) rarely use it up; when they do, the caller reserves again from the token it
    // got (at_least).
    if (!reserves_on_lock_session() ||
        m_durable_token_hwm.load() >=
            std::max(m_token_seen.load(), at_least) + token_reserve_block / 2)
        return;
    m_statements_sent.fetch_add(1, std::memory_order_relaxed);
    const auto r = s.execute(statement::fu_raise_hwm, {std::int64_t{0}, token_reserve_block});
    if (s.in_transaction())
        s.commit(); // MariaDB lock sessions: autocommit is off
    raise_to(m_durable_token_hwm,
             r.rows.empty() || r.rows.front().empty() ? 0 : column_int(r.rows.front().front()));
}

result database_impl::run_async_release(statement id, std::initializer_list<param> params) {
    try {
        const batch_item items[] = {
            {statement::async_begin, {}},
            {statement::async_commit_off, {}},
            {id, std::vector<param>(params)},
            {statement::async_commit, {}},
        };
        if (session* routed = route_scope::current(*this)) {
            m_statements_sent.fetch_add(1, std::memory_order_relaxed);
            try {
                auto results = routed->execute_batch(items);
                return std::move(results[2]);
            } catch (...) {
                routed->rollback(); // not ours to close: end its failed transaction instead
                throw;
            }
        }
        auto s = checkout();
        m_statements_sent.fetch_add(1, std::memory_order_relaxed); // one round trip
        try {
            auto results = s->execute_batch(items);
            return std::move(results[2]);
        } catch (...) {
            // Never pool a session left inside a failed transaction or with the release's
            // relaxed durability still set (SQLite: synchronous = NORMAL until async_commit).
            s.discard();
            throw;
        }
    } catch (const error& e) {
        rethrow_with_context(e);
    }
}

std::vector<database_impl::migration> database_impl::migrations() const {
    std::vector<migration> out;
    const auto dir = std::string("migrations/") + std::string(backend_dir(m_config.kind)) + "/";
    for (const auto& f : embedded_files()) {
        if (!f.path.starts_with(dir))
            continue;
        const auto file = f.path.substr(dir.size()); // NNNN_what.sql
        int version = 0;
        const auto [end, ec] = std::from_chars(file.data(), file.data() + file.size(), version);
        if (ec != std::errc{} || *end != '_')
            throw std::logic_error("migration file without a version: " + std::string(f.path));
        out.push_back({version, std::string(file), expand(f.content)});
    }
    std::sort(out.begin(), out.end(),
              [](const migration& a, const migration& b) { return a.version < b.version; });
    return out;
}

} // namespace detail

// --- public database ---------------------------------------------------------------------------

database::database(std::shared_ptr<detail::database_impl> impl) : m_impl(std::move(impl)) {}

backend_kind database::backend() const noexcept {
    return m_impl->kind();
}
const std::string& database::url() const noexcept {
    return m_impl->config().redacted_url;
}
const std::string& database::table_prefix() const noexcept {
    return m_impl->options().table_prefix;
}

database connect(std::string_view url, const connect_options& options) {
    auto impl = std::make_shared<detail::database_impl>(detail::parse_url(url), options);
    // Connect once now, so a wrong password or an unreachable server is reported here, and
    // refuse lock tables newer than this library (older ones are reported at the first lock,
    // so that connect() followed by migrate() works).
    database db(std::move(impl));
    if (options.check_schema) {
        const int version = db.schema_version();
        const int expected = database::expected_schema_version(db.backend());
        if (version > expected)
            throw error(errc::schema_mismatch,
                        "the sqlock tables in " + db.url() + " are at schema version " +
                            std::to_string(version) + ", newer than this library's " +
                            std::to_string(expected) + ": upgrade sqlock",
                        std::string(to_string(db.backend())));
        db.impl()->note_schema_version(version);
    } else {
        db.impl()->checkout();
    }
    return db;
}

namespace {

std::string migrate_lock_key(const database& db) {
    return "sqlock_migrate:" + db.table_prefix();
}

std::vector<int> applied_versions(detail::session& s) {
    std::vector<int> versions;
    for (const auto& r : s.execute(detail::statement::migrations_applied, {}).rows)
        versions.push_back(static_cast<int>(detail::column_int(r.at(0))));
    return versions;
}

} // namespace

void database::migrate() {
    using detail::statement;
    const auto key = migrate_lock_key(*this);
    const bool transactional_ddl = backend() != backend_kind::mysql; // MySQL DDL auto-commits
    auto s = m_impl->checkout();
    try {
        s->execute(statement::migrate_lock, {key});
        try {
            s->execute(statement::migrations_bootstrap, {});
            for (const auto& m : m_impl->migrations()) {
                if (transactional_ddl)
                    s->begin();
                // Re-read inside the transaction: on SQLite, BEGIN IMMEDIATE is what
                // serialises concurrent migrators, so an earlier read may be stale.
                const auto applied = applied_versions(*s);
                if (std::find(applied.begin(), applied.end(), m.version) != applied.end()) {
                    if (transactional_ddl)
                        s->commit();
                    continue;
                }
                s->execute_script(m.sql);
                s->execute(statement::migration_record,
                           {std::int64_t{m.version}, std::string_view(m.name)});
                if (transactional_ddl)
                    s->commit();
            }
        } catch (...) {
            if (transactional_ddl)
                s->rollback();
            try {
                s->execute(statement::migrate_unlock, {key});
            } catch (const error&) {
                // The session is probably broken; the server drops its lock with it.
            }
            throw;
        }
        s->execute(statement::migrate_unlock, {key});
        m_impl->note_schema_version(expected_schema_version(backend()));
    } catch (const error& e) {
        throw error(e.code(), "migrating " + m_impl->config().redacted_url + " failed: " + e.what(),
                    e.backend(), e.native_code(), e.sqlstate());
    }
}

std::string database::migration_script() const {
    return m_impl->migration_script();
}

std::string migration_script_for(std::string_view url, const connect_options& options) {
    return detail::database_impl(detail::parse_url(url), options).migration_script();
}

std::string detail::database_impl::migration_script() const {
    std::string out = "-- sqlock schema for " + std::string(to_string(kind())) +
                      ", table prefix \"" + m_options.table_prefix + "\"\n";
    out += "-- Apply in order. sqlock records applied versions in the migrations table below.\n\n";
    out += m_catalog[detail::statement::migrations_bootstrap];
    out += ";\n\n";
    for (const auto& m : migrations()) {
        out += "-- " + m.name + "\n" + m.sql;
        if (!out.ends_with("\n"))
            out += "\n";
        out += "\n";
    }
    // Record the versions, as migrate() would, so sqlock sees the schema as current.
    for (const auto& m : migrations()) {
        out += "INSERT INTO " + expand("{migrations}") + " (version, name) VALUES (" +
               std::to_string(m.version) + ", '" + m.name + "');\n";
    }
    return out;
}

int database::expected_schema_version(backend_kind kind) {
    (void)kind; // every backend has the same migration versions (a unit test checks)
    return 7;
}

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

int database::schema_version() {
    try {
        auto s = m_impl->checkout();
        const auto versions = applied_versions(*s);
        return versions.empty() ? 0 : versions.back();
    } catch (const error& e) {
        if (e.code() == errc::schema_missing)
            return 0;
        throw;
    }
}

std::vector<lock_info> database::list() {
    const auto res = m_impl->run(detail::statement::list_locks, {});
    std::vector<lock_info> out;
    out.reserve(res.rows.size());
    for (const auto& r : res.rows) {
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
        info.held_for = info.owner.empty()
                            ? std::chrono::milliseconds(0)
                            : std::chrono::milliseconds(detail::column_int(r.at(10)));
        out.push_back(std::move(info));
    }
    return out;
}

void detail::database_impl::require_schema() {
    const int expected = database::expected_schema_version(kind());
    const int seen = m_schema_version.load();
    if (seen < 0 || seen == expected)
        return; // not checked (check_schema off), or current
    int version = 0;
    try {
        auto s = checkout();
        const auto versions = applied_versions(*s);
        version = versions.empty() ? 0 : versions.back();
    } catch (const error& e) {
        if (e.code() != errc::schema_missing)
            throw;
    }
    note_schema_version(version);
    if (version == expected)
        return;
    const std::string backend_name(to_string(kind()));
    if (version == 0)
        throw error(errc::schema_missing,
                    "lock table \"" + m_locks_table + "\" is missing in " + m_config.redacted_url +
                        ": run \"sqlock migrate\"",
                    backend_name);
    throw error(errc::schema_mismatch,
                "the sqlock tables in " + m_config.redacted_url + " are at schema version " +
                    std::to_string(version) + (version < expected ? ", older" : ", newer") +
                    " than this library's " + std::to_string(expected) +
                    (version < expected ? ": run \"sqlock migrate\"" : ": upgrade sqlock"),
                backend_name);
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
        const auto res = m_impl->run(detail::statement::reap_expired, {batch, grace});
        ++out.batches;
        out.deleted += res.affected_rows;
        if (res.affected_rows < static_cast<std::uint64_t>(batch))
            break;
    }
    m_impl->reap_stale_leases(batch, grace, options.settle, out);
    while (options.prune_history) { // the run ledger (sqlock::job), the same bounded batches
        const auto res = m_impl->run(detail::statement::job_prune, {batch, keep});
        ++out.batches;
        out.history_deleted += res.affected_rows;
        if (res.affected_rows < static_cast<std::uint64_t>(batch))
            break;
    }
    return out;
}

void detail::database_impl::reap_stale_leases(std::int64_t batch, std::int64_t grace,
                                              std::chrono::milliseconds settle, reap_result& out) {
    using clock = std::chrono::steady_clock;
    const auto give_up = clock::now() + settle;
    std::lock_guard guard(m_reap_mutex); // one pass at a time per handle: one set of sightings
    for (;;) {
        const auto candidates = run(statement::reap_candidates, {batch, grace});
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
            const auto res = run(statement::drop_stale_lease,
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
    for (auto& info : list())
        if (info.name == name)
            return info;
    return std::nullopt;
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
            s->execute(statement::audit_record, {std::string_view("force_release"), name, actor,
                                                 std::string_view(out.previous_owner),
                                                 out.previous_token, out.previous_token});
            return out;
        }
        s->begin();
        s->execute(statement::force_release, {name});
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

std::vector<migration_state> database::migration_status() {
    std::vector<int> applied;
    try {
        auto s = m_impl->checkout();
        applied = applied_versions(*s);
    } catch (const error& e) {
        if (e.code() != errc::schema_missing)
            throw;
    }
    std::vector<migration_state> out;
    for (const auto& m : m_impl->migrations())
        out.push_back({m.version, m.name,
                       std::find(applied.begin(), applied.end(), m.version) != applied.end()});
    return out;
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

namespace sqlock::detail {

bool session::needs_sending(statement id, std::span<const param> params) {
    if (m_catalog.is_noop(id))
        return false;
    const auto index = static_cast<std::size_t>(id);
    if (!m_catalog.skip_if_unchanged[index])
        return true;
    // Compare only the parameters this backend's SQL uses ($N present in the text).
    const auto& text = m_catalog.text[index];
    std::vector<std::optional<std::string>> used;
    for (std::size_t i = 0; i < params.size(); ++i) {
        // (Appending rather than "x" + string: GCC 12 -O3 warns falsely on the latter.)
        std::string placeholder(1, '$');
        placeholder.append(std::to_string(i + 1));
        if (text.find(placeholder) == std::string::npos) {
            used.emplace_back(std::nullopt);
        } else if (const auto* n = std::get_if<std::int64_t>(&params[i])) {
            used.emplace_back(std::to_string(*n));
        } else if (const auto* v = std::get_if<std::string_view>(&params[i])) {
            std::string quoted(1, '\'');
            quoted.append(*v);
            used.emplace_back(std::move(quoted));
        } else {
            used.emplace_back("NULL");
        }
    }
    auto& last = m_last_params[index];
    if (last && *last == used)
        return false;
    last = std::move(used);
    return true;
}

void session::show_clock(statement id, const result& res,
                         std::chrono::steady_clock::time_point sent) {
    if (m_clock == nullptr || !m_catalog.returns_server_clock(id) || res.rows.empty() ||
        res.rows.front().empty() || !res.rows.front().back())
        return;
    m_clock->observe(column_int(res.rows.front().back()), sent, std::chrono::steady_clock::now());
}

result session::execute(statement id, std::span<const param> params) {
    if (!needs_sending(id, params))
        return {};
    try {
        const auto sent = std::chrono::steady_clock::now();
        auto res = do_execute(id, params);
        show_clock(id, res, sent);
        return res;
    } catch (...) {
        m_last_params[static_cast<std::size_t>(id)].reset(); // unknown state: send next time
        throw;
    }
}

std::vector<result> session::execute_batch(std::span<const batch_item> items) {
    std::vector<result> out(items.size());
    std::vector<batch_item> to_send;
    std::vector<std::size_t> slots;
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (needs_sending(items[i].id, items[i].params)) {
            to_send.push_back(items[i]);
            slots.push_back(i);
        }
    }
    std::vector<result> sent(to_send.size());
    const auto sent_at = std::chrono::steady_clock::now();
    try {
        do_execute_batch(to_send, sent);
    } catch (...) {
        for (const auto& item : to_send)
            m_last_params[static_cast<std::size_t>(item.id)].reset();
        throw;
    }
    for (std::size_t k = 0; k < slots.size(); ++k) {
        show_clock(to_send[k].id, sent[k], sent_at);
        out[slots[k]] = std::move(sent[k]);
    }
    return out;
}

void session::do_execute_batch(std::span<const batch_item> items, std::vector<result>& out) {
    for (std::size_t i = 0; i < items.size(); ++i)
        out[i] = do_execute(items[i].id, items[i].params);
}

} // namespace sqlock::detail
