// The database handle: construction from a URL, the statement catalog, running statements
// (on the pool or the session a route_scope names), clock steps, and connect().
#include "backends/backend.hpp"
#include "backends/module.hpp"
#include "base/embedded.hpp"
#include "base/owner.hpp"
#include "base/sql_text.hpp"
#include "database/database_impl.hpp"

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace sqlock::detail {

std::string read_password_file(const std::string& path) {
    const std::string file = "password file \"" + path + "\"";
    auto fail = [&](const std::string& why) -> std::string {
        throw error(errc::invalid_argument, file + " " + why);
    };
    // O_NONBLOCK: a FIFO must not block here (it is refused below, as anything but a file is).
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return fail(std::string("cannot be opened: ") + std::strerror(errno));
    struct closer {
        int fd;
        ~closer() { ::close(fd); }
    } close_it{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0)
        return fail(std::string("cannot be read: ") + std::strerror(errno));
    if (!S_ISREG(st.st_mode))
        return fail("is not a regular file: give the path of a file that holds only the "
                    "password (chmod 600 FILE)");
    if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
        return fail(std::string("may be read or written by group or others (mode ") + mode +
                    "): it must be private to its owner; run \"chmod 600 " + path + "\"");
    }
    std::string password;
    char buffer[4096];
    for (;;) {
        const auto n = ::read(fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return fail(std::string("cannot be read: ") + std::strerror(errno));
        if (n == 0)
            break;
        password.append(buffer, static_cast<std::size_t>(n));
        if (password.size() > 65536)
            return fail("is larger than 64 KiB: it must hold only the password");
    }
    if (password.ends_with('\n'))
        password.pop_back();
    if (password.ends_with('\r'))
        password.pop_back();
    if (password.empty())
        return fail("is empty: write the password into it (one line)");
    if (password.find('\0') != std::string::npos || password.find('\n') != std::string::npos)
        return fail("must hold the password on one line, without NUL bytes");
    return password;
}

std::int64_t column_int(const std::optional<std::string>& text) noexcept {
    std::int64_t v = 0;
    if (text)
        std::from_chars(text->data(), text->data() + text->size(), v);
    return v;
}

database_impl::database_impl(connection_config config, const connect_options& options)
    : m_config(std::move(config)), m_options(options),
      m_catalog(
          [kind = m_config.kind](statement id) {
              const auto path = std::string("sql/") + std::string(backend_dir(kind)) + "/" +
                                std::string(name_of(id)) + ".sql";
              const auto text = find_embedded(path);
              if (!text)
                  throw std::logic_error("sqlock was built without " + path);
              return *text;
          },
          [this](std::string_view sql) { return expand(sql); }) {
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
    apply_backend_options(m_config, m_options);
    if (traits().lock_files) {
        // Lock files live beside the database under its canonical path: processes that name
        // one file by different paths (a symlinked directory, "./x.db") must share them, or a
        // select_for_update lock would not exclude across them. (Hard links are not resolved.)
        std::error_code ec;
        const auto canonical = std::filesystem::weakly_canonical(m_config.path, ec);
        m_sessions.place_lock_files((ec || canonical.empty() ? m_config.path : canonical.string()) +
                                    "-sqlock/");
    }

    const auto& prefix = m_options.table_prefix;
    for (const char* table :
         {"locks", "token_seq", "token_counter", "migrations", "locks_expires_idx",
          "locks_token_on_insert", "holds", "audit", "locks_token_on_update", "token_hwm",
          "token_incarnation", "recover_tokens", "clock_steps", "jobs", "job_runs",
          "job_runs_slot_idx", "job_runs_started_idx", "job_runs_prune_idx", "quorum"}) {
        m_identifiers.emplace_back(table, quote_identifier(m_config.kind, prefix + table));
    }
    m_locks_table = prefix + "locks";
    // The notification channel appears inside a string literal (pg_notify('...')), so it is
    // substituted unquoted; the prefix's characters are limited to [A-Za-z0-9_].
    m_identifiers.emplace_back("channel", prefix + "release");
}

const sql_catalog::entry& sql_catalog::get(statement id) const {
    auto& e = m_entries[static_cast<std::size_t>(id)];
    std::call_once(e.once, [&] {
        const auto text = m_source(id);
        e.text = m_expand(text);
        e.noop = split_script(text).empty(); // only comments: nothing to send
        e.read_back = text.find("-- sqlock: read-back") != std::string_view::npos;
        e.server_clock = text.find("-- sqlock: server-clock") != std::string_view::npos;
        e.skip_if_unchanged = text.find("-- sqlock: skip-if-unchanged") != std::string_view::npos;
        for (const int index : rewrite_placeholders(e.text, placeholder_style::question).order)
            e.used_params |= index < 64 ? std::uint64_t{1} << index : ~std::uint64_t{0};
    });
    return e;
}

std::string database_impl::expand(std::string_view sql) const {
    return expand_identifiers(sql, m_identifiers);
}

std::unique_ptr<session> database_impl::open_watched(const connection_config& config) {
    m_connects_attempted.fetch_add(1, std::memory_order_relaxed);
    return watched(backend_for(config.kind).open_session(config, m_catalog));
}

std::unique_ptr<session> database_impl::watched(std::unique_ptr<session> s) noexcept {
    s->watch_clock(&m_clock_watch);
    return s;
}

database_impl::~database_impl() = default;

error database_impl::with_context(const error& e) const {
    if (e.code() != errc::schema_missing)
        return e;
    return error(errc::schema_missing,
                 "lock table \"" + m_locks_table + "\" is missing in " + m_config.redacted_url +
                     ": run \"sqlock migrate\" (" + e.what() + ")",
                 e.backend(), e.native_code(), e.sqlstate());
}

result database_impl::run(statement id, std::initializer_list<param> params) {
    return run(id, std::span<const param>(params.begin(), params.size()));
}

result database_impl::run(statement id, std::span<const param> params) {
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

} // namespace sqlock::detail

namespace sqlock {

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

database detail::open_unconnected(std::string_view url, const connect_options& options) {
    auto config = detail::parse_url(url);
    if (!options.password_file.empty() && !detail::traits_of(config.kind).local_file) {
        if (!config.password.empty())
            throw error(errc::invalid_argument,
                        "the database URL " + config.redacted_url +
                            " has a password and a password file (\"" + options.password_file +
                            "\") gives one too: remove the password from the URL");
        config.password = detail::read_password_file(options.password_file);
    }
    return detail::database_access::wrap(
        std::make_shared<detail::database_impl>(std::move(config), options));
}

database connect(std::string_view url, const connect_options& options) {
    // Connect once now, so a wrong password or an unreachable server is reported here, and
    // refuse lock tables newer than this library (older ones are reported at the first lock,
    // so that connect() followed by migrate() works).
    auto db = detail::open_unconnected(url, options);
    std::optional<detail::connect_deadline> deadline;
    if (options.connect_deadline)
        deadline.emplace(*options.connect_deadline);
    if (options.check_schema) {
        const int version = db.schema_version();
        auto s = detail::impl_of(db).checkout();
        detail::impl_of(db).refuse_schema(*s, version,
                                          true); // newer tables this library cannot use
        const int oldest = database::oldest_usable_schema_version(db.backend());
        detail::impl_of(db).note_schema_version(version, version >= oldest);
    } else {
        detail::impl_of(db).checkout();
    }
    return db;
}

} // namespace sqlock

namespace sqlock::detail {

void database_impl::cover_token_durably(std::int64_t token) {
    m_tokens.cover(
        token,
        [this](std::int64_t at_least, std::int64_t block) {
            return run(statement::fu_raise_hwm, {at_least, block});
        },
        m_config.redacted_url);
}

void database_impl::reserve_tokens_on(session& s, std::int64_t at_least) {
    if (m_tokens.reserve_on(s, at_least))
        m_statements_sent.fetch_add(1, std::memory_order_relaxed);
}

} // namespace sqlock::detail

namespace sqlock {

topology_info database::topology() const {
    return m_impl->topology();
}

} // namespace sqlock
