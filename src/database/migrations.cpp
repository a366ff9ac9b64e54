// Migrations: the versioned schema scripts embedded in the library, applying them under a
// migration lock, printing them for a DBA, and checking a handle's schema version.
#include "backends/backend.hpp"
#include "base/embedded.hpp"
#include "base/rows.hpp"
#include "database/database_impl.hpp"

#include <algorithm>
#include <charconv>
#include <thread>

namespace sqlock::detail {

namespace {

/// A migration header's "-- sqlock: compatible-from N" (the oldest library schema version
/// that can share the tables once it is applied); without one, the migration's own version.
int compatible_from(std::string_view script, int version) {
    constexpr std::string_view marker = "-- sqlock: compatible-from ";
    const auto at = script.find(marker);
    if (at == std::string_view::npos)
        return version;
    int from = 0;
    const char* begin = script.data() + at + marker.size();
    const auto [end, ec] = std::from_chars(begin, script.data() + script.size(), from);
    if (ec != std::errc{} || from < 1 || from > version)
        throw std::logic_error("migration " + std::to_string(version) +
                               ": bad \"compatible-from\" header");
    return from;
}

} // namespace

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
        out.push_back(
            {version, std::string(file), expand(f.content), compatible_from(f.content, version)});
    }
    std::sort(out.begin(), out.end(),
              [](const migration& a, const migration& b) { return a.version < b.version; });
    return out;
}

namespace {

using migration = database_impl::migration;

std::vector<int> applied_versions(session& s) {
    std::vector<int> versions;
    for (const auto& r :
         decode_rows<migration_version_row>(s.execute(statement::migrations_applied, {})))
        versions.push_back(static_cast<int>(r.version));
    return versions;
}

/// One try at migration `m` on `s`: nothing when it is recorded as applied; else its script,
/// each DDL statement waiting at most `lock_wait` for a table lock, and its record. Inside one
/// transaction where DDL is transactional (a failed try leaves nothing); elsewhere the
/// scripts are idempotent statement by statement (IF NOT EXISTS), so a try may run again.
void apply_once(session& s, const migration& m, bool transactional,
                std::chrono::milliseconds lock_wait) {
    if (transactional)
        s.begin();
    // Re-read inside the transaction: on SQLite, BEGIN IMMEDIATE is what serialises
    // concurrent migrators, so an earlier read may be stale.
    const auto applied = applied_versions(s);
    if (std::find(applied.begin(), applied.end(), m.version) == applied.end()) {
        s.execute(statement::migrate_lock_wait, {std::int64_t{lock_wait.count()}});
        s.execute_script(m.sql);
        s.execute(statement::migration_record, {std::int64_t{m.version}, std::string_view(m.name),
                                                std::int64_t{m.compatible_from}});
    }
    if (transactional)
        s.commit();
}

/// Applies `m`, trying again while its DDL cannot get a table lock within the lock wait
/// (errc::timeout), with pauses between tries (so lock traffic flows), until `deadline`.
void apply_patiently(session& s, const migration& m, bool transactional,
                     const migrate_options& options,
                     std::chrono::steady_clock::time_point deadline) {
    auto pause = std::chrono::milliseconds(250);
    for (int tries = 1;; ++tries) {
        try {
            apply_once(s, m, transactional, options.lock_wait);
            return;
        } catch (const error& e) {
            if (transactional)
                s.rollback();
            if (e.code() != errc::timeout)
                throw;
            if (std::chrono::steady_clock::now() + pause >= deadline)
                throw error(
                    errc::timeout,
                    "migration " + m.name + " could not get the table locks its DDL needs in " +
                        std::to_string(tries) + " tries over " +
                        std::to_string(options.wait.count()) +
                        " ms: lock holders keep transactions open on the lock tables (a "
                        "select_for_update holder for as long as it holds). Each try held lock "
                        "traffic up for at most " +
                        std::to_string(options.lock_wait.count()) +
                        " ms. Run it again when they are released, or give it longer (wait) (" +
                        e.what() + ")",
                    e.backend(), e.native_code(), e.sqlstate());
        }
        std::this_thread::sleep_for(pause);
        pause = std::min<std::chrono::milliseconds>(pause * 2, std::chrono::seconds(4));
    }
}

} // namespace

void run_migrations(database_impl& db, const std::vector<migration>& list,
                    const migrate_options& options) {
    if (options.lock_wait.count() < 1 || options.wait.count() < 0)
        throw error(errc::invalid_argument,
                    "migrate: lock_wait must be at least 1 ms and wait not negative");
    const auto deadline = std::chrono::steady_clock::now() + options.wait;
    const bool transactional = db.traits().transactional_ddl;
    const std::string key = "sqlock_migrate:" + db.options().table_prefix;
    auto s = db.checkout();
    s->execute(statement::migrate_lock, {std::string_view(key)});
    try {
        s->execute(statement::migrations_bootstrap, {});
        for (const auto& m : list)
            apply_patiently(*s, m, transactional, options, deadline);
        s->execute(statement::migrate_lock_wait_end, {});
    } catch (...) {
        s.discard(); // a failed step may leave its lock wait set: never pool it
        throw;       // (the server drops the migration lock with the session)
    }
    s->execute(statement::migrate_unlock, {std::string_view(key)});
}

} // namespace sqlock::detail

namespace sqlock {

void database::migrate() {
    migrate(migrate_options{});
}

void database::migrate(const migrate_options& options) {
    try {
        detail::run_migrations(*m_impl, m_impl->migrations(), options);
        m_impl->note_schema_version(expected_schema_version(backend()), true);
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
        out += "INSERT INTO " + expand("{migrations}") +
               " (version, name, compatible_from) VALUES (" + std::to_string(m.version) + ", '" +
               m.name + "', " + std::to_string(m.compatible_from) + ");\n";
    }
    return out;
}

int database::expected_schema_version(backend_kind kind) {
    (void)kind; // every backend has the same migration versions (a unit test checks)
    return 9;
}

int database::oldest_usable_schema_version(backend_kind kind) {
    (void)kind;
    // Schema 8 only records each migration's compatibility, and 9 adds the quorum table
    // (quorum_mutex alone uses it): nothing a lock of schema 7 reads or writes.
    return 7;
}

int database::schema_version() {
    try {
        auto s = m_impl->checkout();
        const auto versions = detail::applied_versions(*s);
        return versions.empty() ? 0 : versions.back();
    } catch (const error& e) {
        if (e.code() == errc::schema_missing)
            return 0;
        throw;
    }
}

} // namespace sqlock

namespace sqlock {

void detail::database_impl::require_schema() {
    if (m_schema_version.load() < 0 || m_schema_usable.load())
        return; // not checked (check_schema off), or usable
    auto s = checkout();
    int version = 0;
    try {
        const auto versions = detail::applied_versions(*s);
        version = versions.empty() ? 0 : versions.back();
    } catch (const error& e) {
        if (e.code() != errc::schema_missing)
            throw;
    }
    note_schema_version(version, false);
    refuse_schema(*s, version, false);
    note_schema_version(version, true);
}

void detail::database_impl::refuse_schema(session& s, int version, bool newer_only) const {
    const int mine = database::expected_schema_version(kind());
    const int oldest = database::oldest_usable_schema_version(kind());
    const std::string backend_name(to_string(kind()));
    const std::string tables = "the sqlock tables in " + m_config.redacted_url +
                               " are at schema version " + std::to_string(version);
    if (version > mine) {
        const auto compat = decode_first<migrations_compat_row>(
            s.execute(statement::migrations_compat, {std::int64_t{mine}}));
        const std::int64_t needed =
            compat ? compat->compatible_from.value_or(version) : std::int64_t{version};
        if (needed <= mine)
            return; // newer, and every migration above ours says we may share them
        throw error(errc::schema_mismatch,
                    tables + ", which needs a library of schema " + std::to_string(needed) +
                        " or newer; this one is at " + std::to_string(mine) +
                        ": upgrade sqlock on this host",
                    backend_name);
    }
    if (newer_only || version >= oldest)
        return;
    if (version == 0)
        throw error(errc::schema_missing,
                    "lock table \"" + m_locks_table + "\" is missing in " + m_config.redacted_url +
                        ": run \"sqlock migrate\"",
                    backend_name);
    throw error(errc::schema_mismatch,
                tables + ", older than this library can use (" + std::to_string(oldest) + " to " +
                    std::to_string(mine) + "): run \"sqlock migrate\"",
                backend_name);
}

} // namespace sqlock

namespace sqlock {

std::vector<migration_state> database::migration_status() {
    std::vector<int> applied;
    try {
        auto s = m_impl->checkout();
        applied = detail::applied_versions(*s);
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

} // namespace sqlock
