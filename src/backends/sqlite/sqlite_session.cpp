// SQLite backend: one sqlite3 connection per session, WAL, waits for other writers through the
// wait hook (sqlite_waits.hpp), cached statements.
#include "backends/backend.hpp"
#include "backends/module.hpp"
#include "backends/sqlite/sqlite_waits.hpp"
#include "base/sql_text.hpp"

#include <array>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <sqlite3.h>
#include <string_view>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

namespace sqlock::detail {

namespace {

struct db_closer {
    void operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }
};
struct stmt_finalizer {
    void operator()(sqlite3_stmt* s) const noexcept { sqlite3_finalize(s); }
};

/// SQL function sqlock_busy_timeout(ms): -1 = do not wait, 0 = wait forever, else ms, set on
/// the session's busy_wait (its user data), so that a COMMIT can wait longer and put it back
/// (see sqlite_session::commit).
void set_busy_timeout(sqlite3_context* context, int, sqlite3_value** argv) {
    const auto ms = sqlite3_value_int64(argv[0]);
    const int timeout = ms < 0 ? 0
                        : ms == 0
                            ? busy_wait::forever
                            : static_cast<int>(std::min<sqlite3_int64>(ms, busy_wait::forever));
    static_cast<busy_wait*>(sqlite3_user_data(context))->set(timeout);
    sqlite3_result_int(context, 1);
}

class sqlite_session final : public session {
public:
    sqlite_session(const connection_config& config, const sql_catalog& catalog)
        : session(catalog), m_config(config) {
        const bool lock_holder = config.purpose == session_purpose::lock_holder;
        const std::string& file = lock_holder ? config.lock_file : config.path;
        if (lock_holder) {
            // Lock files live in a directory beside the database: <db>-sqlock/<hash>.lock.
            std::error_code ec;
            std::filesystem::create_directories(std::filesystem::path(file).parent_path(), ec);
        }
        sqlite3* raw = nullptr;
        // A reader's tool (config.create_file false) must not leave a new, empty database (and
        // its -wal/-shm) behind a mistyped path. Lock files are always created.
        const bool create = lock_holder || config.create_file;
        const int rc = sqlite3_open_v2(file.c_str(), &raw,
                                       SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX |
                                           (create ? SQLITE_OPEN_CREATE : 0),
                                       nullptr);
        m_db.reset(raw);
        if (rc != SQLITE_OK && !create && !std::filesystem::exists(file))
            throw error(errc::connection,
                        "sqlite: no database at " + config.redacted_url + ": there is no file \"" +
                            file + "\" (check the path; sqlock migrate creates the database)",
                        "sqlite", rc);
        if (rc != SQLITE_OK) {
            const std::string why = raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
            throw error(errc::connection,
                        "sqlite: cannot open " + (lock_holder ? file : config.redacted_url) + ": " +
                            why,
                        "sqlite", rc);
        }
        sqlite3_extended_result_codes(m_db.get(), 1);
        // Writers wait for each other up to the connect timeout instead of failing at once.
        const auto busy_ms =
            std::min<long long>(config.connect_timeout.count(), std::numeric_limits<int>::max());
        m_busy.emplace(m_db.get(), static_cast<int>(busy_ms));
        m_own_busy_ms = m_commit_busy_ms = static_cast<int>(busy_ms);
        if (lock_holder) {
            m_lock_holder = true;
            // fu_wait sets how long BEGIN IMMEDIATE waits for the lock file, from SQL.
            sqlite3_create_function_v2(m_db.get(), "sqlock_busy_timeout", 1, SQLITE_UTF8, &*m_busy,
                                       &set_busy_timeout, nullptr, nullptr, nullptr);
            return; // nothing is ever written to a lock file: no journal settings needed
        }
        m_gate = turn_gate::of(config.path);
        // WAL lets readers run beside the one writer; synchronous=FULL makes every grant
        // durable, so a power loss cannot roll the token counter back.
        exec_plain("PRAGMA journal_mode = WAL");
        exec_plain("PRAGMA synchronous = FULL");
        // A short-lived process (`sqlock run`) would spend ~1 ms of ~7 on the checkpoint (and
        // its fsync of the database file) when its last connection closes. Every commit is
        // already durable in the WAL, so skip that checkpoint, and keep the WAL short instead:
        // the next process to open the file rebuilds its index from the whole WAL, and a
        // checkpoint every 32 pages (a few `sqlock run`s) bounds what it reads.
        sqlite3_db_config(m_db.get(), SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
        exec_plain("PRAGMA wal_autocheckpoint = 32");
    }

protected:
    result do_execute(statement id, std::span<const param> params) override {
        const auto turn = take_turn();
        apply_busy_limit();
        sqlite3_stmt* stmt = prepared(id);
        sqlite3_reset(stmt);
        sqlite3_clear_bindings(stmt);
        for (std::size_t i = 0; i < params.size(); ++i) {
            const int index = static_cast<int>(i + 1);
            int rc = SQLITE_OK;
            if (const auto* v = std::get_if<std::int64_t>(&params[i])) {
                rc = sqlite3_bind_int64(stmt, index, *v);
            } else if (const auto* s = std::get_if<std::string_view>(&params[i])) {
                rc = sqlite3_bind_text64(stmt, index, s->data(), s->size(), SQLITE_TRANSIENT,
                                         SQLITE_UTF8);
            } else {
                rc = sqlite3_bind_null(stmt, index);
            }
            if (rc != SQLITE_OK)
                fail(rc, name_of(id));
        }
        return step_all(stmt, name_of(id));
    }

public:
    result query(std::string_view sql) override {
        const auto turn = take_turn();
        sqlite3_stmt* raw = nullptr;
        const int rc =
            sqlite3_prepare_v2(m_db.get(), sql.data(), static_cast<int>(sql.size()), &raw, nullptr);
        std::unique_ptr<sqlite3_stmt, stmt_finalizer> stmt(raw);
        if (rc != SQLITE_OK)
            fail(rc, "query");
        return step_all(stmt.get(), "query");
    }

    /// Statement by statement: SQLite has no ADD COLUMN IF NOT EXISTS, so an ALTER TABLE ... ADD
    /// COLUMN whose column exists already (a migration applied again) is skipped, like the
    /// other backends' IF NOT EXISTS.
    void execute_script(std::string_view sql) override {
        // SQLite's own parser finds the statements (trigger bodies hold semicolons).
        const std::string text(sql);
        const char* next = text.c_str();
        while (*next) {
            sqlite3_stmt* raw = nullptr;
            const char* tail = nullptr;
            int rc = sqlite3_prepare_v2(m_db.get(), next, -1, &raw, &tail);
            if (rc != SQLITE_OK) // the tail is not reliable then: find the statement's end
                tail = statement_end(next);
            const std::string_view statement(next, static_cast<std::size_t>(tail - next));
            std::unique_ptr<sqlite3_stmt, decltype(&sqlite3_finalize)> stmt(raw, &sqlite3_finalize);
            next = tail;
            if (rc == SQLITE_OK && stmt) {
                while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
                }
                if (rc == SQLITE_DONE)
                    rc = SQLITE_OK;
            }
            if (rc == SQLITE_OK)
                continue; // done, or only whitespace and comments
            const std::string why = sqlite3_errmsg(m_db.get());
            if (why.starts_with("duplicate column name") && adds_a_column(statement) &&
                !statement.empty())
                continue;
            stmt.reset();
            fail(rc, "script", why);
        }
    }
    // IMMEDIATE takes the write lock up front: a deferred transaction that later upgrades to a
    // write can fail with SQLITE_BUSY at once, ignoring the busy timeout. It waits as long as
    // a statement would now: not the 10 ms a statement of a lock attempt on this pooled session
    // was limited to (a job's BEGIN right after its lock was granted failed as "database is
    // locked" when another process wrote for longer).
    void begin() override {
        apply_busy_limit();
        exec_plain("BEGIN IMMEDIATE");
    }
    void commit() override {
        if (!m_lock_holder) {
            exec_plain("COMMIT");
            return;
        }
        // A lock file's COMMIT (the release) can meet another process's momentary lock on the
        // file (its BEGIN IMMEDIATE trying for the lock) and must not fail for it, whatever
        // the acquire allowed itself to wait (nothing for try_lock(), 10 ms for a caller queued
        // on SQLite): wait up to connect_timeout. Then put the acquire's timeout back, which
        // fu_wait (skip-if-unchanged) would not send again.
        struct restore {
            busy_wait& busy;
            int ms;
            ~restore() { busy.set(ms); }
        } put_back{*m_busy, m_busy->limit()};
        m_busy->set(m_commit_busy_ms);
        exec_plain("COMMIT");
    }
    void rollback() noexcept override {
        if (sqlite3_get_autocommit(m_db.get()) == 0)
            sqlite3_exec(m_db.get(), "ROLLBACK", nullptr, nullptr, nullptr);
    }
    bool usable() const noexcept override { return m_usable; }

    /// A select_for_update hold is a BEGIN IMMEDIATE on the lock file: SQLite's RESERVED lock,
    /// which its VFS checks without taking any lock (a POSIX F_GETLK on the reserved byte, and
    /// this process's own connections through SQLite's shared inode records, so that closing
    /// this handle never drops a lock this process holds). Opened read-only: a missing file
    /// is not created (nobody ever locked that name). The holder's pid comes from the kernel's
    /// lock table (the VFS keeps it to itself).
    std::optional<std::int64_t> lock_file_holder(const std::string& file) override {
        sqlite3* raw = nullptr;
        const int rc = sqlite3_open_v2(file.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
        const std::unique_ptr<sqlite3, int (*)(sqlite3*)> db(raw, &sqlite3_close);
        if (rc != SQLITE_OK)
            return std::filesystem::exists(file) ? std::nullopt : std::optional<std::int64_t>(0);
        sqlite3_file* f = nullptr;
        if (sqlite3_file_control(raw, "main", SQLITE_FCNTL_FILE_POINTER, &f) != SQLITE_OK ||
            f == nullptr || f->pMethods == nullptr)
            return std::nullopt;
        // Held, yet not named in the kernel's table: it changed hands between the two reads
        // (a writer collecting reader slots, say). Asked again a few times; then held by a
        // process that cannot be named (-1), never a guess (this process's own holds are
        // named there too, with its pid).
        for (int tries = 0; tries < 5; ++tries) {
            int reserved = 0;
            if (f->pMethods->xCheckReservedLock(f, &reserved) != SQLITE_OK)
                return std::nullopt;
            if (reserved == 0)
                return 0;
            if (const auto pid = reserved_lock_pid(file); pid > 0)
                return pid;
        }
        return -1;
    }

private:
    /// The process holding SQLite's RESERVED byte of `file` (the unix VFS locks byte
    /// 0x40000001, one past its PENDING byte, for a write transaction), or -1 when not known
    /// (the lock may be gone by now). Read from /proc/locks, not asked with F_GETLK on a
    /// descriptor of our own: closing any descriptor of a file drops every POSIX lock this
    /// process holds on it, so that would end a select_for_update hold of this very process.
    static std::int64_t reserved_lock_pid(const std::string& file) noexcept {
        constexpr unsigned long long reserved_byte = 0x40000001;
        struct stat st {};
        if (::stat(file.c_str(), &st) != 0)
            return -1;
        std::FILE* locks = std::fopen("/proc/locks", "re");
        if (!locks)
            return -1;
        // "1: POSIX  ADVISORY  WRITE 1234 fe:00:10960528 1073741825 1073741825" (a blocked
        // request reads "1: -> POSIX ..." and is skipped; OFD locks are "OFDLCK", pid -1).
        char line[256];
        std::int64_t found = -1;
        while (found < 0 && std::fgets(line, sizeof line, locks)) {
            char kind[16], type[16], end[32];
            long long pid = 0;
            unsigned int major_id = 0, minor_id = 0;
            unsigned long long inode = 0, start = 0;
            if (std::sscanf(line, "%*s %15s %*s %15s %lld %x:%x:%llu %llu %31s", kind, type, &pid,
                            &major_id, &minor_id, &inode, &start, end) != 8)
                continue;
            if (std::string_view(kind) != "POSIX" || std::string_view(type) != "WRITE" ||
                pid <= 0 || major_id != major(st.st_dev) || minor_id != minor(st.st_dev) ||
                inode != static_cast<unsigned long long>(st.st_ino) || start > reserved_byte)
                continue;
            if (std::string_view(end) == "EOF" || std::strtoull(end, nullptr, 10) >= reserved_byte)
                found = pid;
        }
        std::fclose(locks);
        return found;
    }

    /// Steps `stmt` to the end, collecting rows, then resets it (ending its implicit
    /// transaction and releasing its locks at once).
    result step_all(sqlite3_stmt* stmt, std::string_view what) {
        result out;
        for (;;) {
            const int rc = sqlite3_step(stmt);
            if (rc == SQLITE_ROW) {
                row r;
                const int columns = sqlite3_column_count(stmt);
                r.reserve(static_cast<std::size_t>(columns));
                for (int c = 0; c < columns; ++c) {
                    if (sqlite3_column_type(stmt, c) == SQLITE_NULL) {
                        r.emplace_back(std::nullopt);
                    } else {
                        const auto* text =
                            reinterpret_cast<const char*>(sqlite3_column_text(stmt, c));
                        const auto size = static_cast<std::size_t>(sqlite3_column_bytes(stmt, c));
                        r.emplace_back(std::string(text, size));
                    }
                }
                out.rows.push_back(std::move(r));
                continue;
            }
            if (rc == SQLITE_DONE)
                break;
            sqlite3_reset(stmt);
            fail(rc, what);
        }
        out.affected_rows = static_cast<std::uint64_t>(sqlite3_changes64(m_db.get()));
        sqlite3_reset(stmt);
        return out;
    }

    sqlite3_stmt* prepared(statement id) {
        auto& slot = m_statements[static_cast<std::size_t>(id)];
        if (!slot) {
            const auto sql =
                rewrite_placeholders(m_catalog[id], placeholder_style::question_numbered).text;
            sqlite3_stmt* raw = nullptr;
            const int rc = sqlite3_prepare_v3(m_db.get(), sql.c_str(), static_cast<int>(sql.size()),
                                              SQLITE_PREPARE_PERSISTENT, &raw, nullptr);
            if (rc != SQLITE_OK)
                fail(rc, name_of(id));
            slot.reset(raw);
        }
        return slot.get();
    }

    /// The end of the statement starting at `text`: past the first ";" that completes it.
    static const char* statement_end(const char* text) {
        std::string prefix;
        for (const char* p = text; *p; ++p) {
            prefix += *p;
            if (*p == ';' && sqlite3_complete(prefix.c_str()))
                return p + 1;
        }
        return text + prefix.size();
    }

    /// True for "ALTER TABLE ... ADD COLUMN ..." (leading "--" comment lines aside).
    static bool adds_a_column(std::string_view statement) {
        std::string folded; // upper case, without comment lines and whitespace
        bool comment = false;
        bool line_start = true;
        for (std::size_t i = 0; i < statement.size(); ++i) {
            const char c = statement[i];
            if (line_start && !comment && c == '-' && i + 1 < statement.size() &&
                statement[i + 1] == '-')
                comment = true;
            if (c == '\n') {
                comment = false;
                line_start = true;
                continue;
            }
            if (c != ' ' && c != '\t' && c != '\r')
                line_start = false;
            if (!comment && !std::isspace(static_cast<unsigned char>(c)))
                folded += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        }
        return folded.starts_with("ALTERTABLE") && folded.find("ADDCOLUMN") != std::string::npos;
    }

    /// Sets the busy timeout of a pooled session to the caller's busy_wait_limit, if any, else
    /// to the session's own (a lock file's waits are set by fu_wait).
    void apply_busy_limit() {
        if (m_lock_holder)
            return;
        const auto limit = busy_wait_limit::current();
        m_busy->set(limit ? static_cast<int>(std::min<long long>(limit->count(), m_own_busy_ms))
                          : m_own_busy_ms);
    }

    void exec_plain(const std::string& sql) {
        char* message = nullptr;
        const int rc = sqlite3_exec(m_db.get(), sql.c_str(), nullptr, nullptr, &message);
        if (rc != SQLITE_OK) {
            const std::string why = message ? message : sqlite3_errstr(rc);
            sqlite3_free(message);
            fail(rc, "script", why);
        }
    }

    [[noreturn]] void fail(int rc, std::string_view what, std::string why = {}) {
        const int code =
            sqlite3_extended_errcode(m_db.get()) ? sqlite3_extended_errcode(m_db.get()) : rc;
        if (why.empty())
            why = sqlite3_errmsg(m_db.get());
        errc category = classify_sqlite_code(code);
        // SQLite reports a missing table only as a generic SQLITE_ERROR with this text.
        if ((code & 0xff) == SQLITE_ERROR && why.starts_with("no such table")) {
            category = errc::schema_missing;
        }
        if (category == errc::connection)
            m_usable = false;
        throw error(category,
                    "sqlite: " + why + " (" + std::string(what) + ", code " + std::to_string(code) +
                        ", " + m_config.redacted_url + ")",
                    "sqlite", code);
    }

    connection_config m_config;
    std::unique_ptr<sqlite3, db_closer> m_db;
    std::array<std::unique_ptr<sqlite3_stmt, stmt_finalizer>, statement_count> m_statements;
    bool m_usable = true;
    std::shared_ptr<turn_gate> m_gate; ///< null for lock-file sessions (they wait in BEGIN)
    bool m_lock_holder = false;        ///< a session on a name's lock file
    /// Its waits for SQLite's locks (a lock file's are set by fu_wait, in SQL).
    std::optional<busy_wait> m_busy;
    int m_own_busy_ms = 0;    ///< a pooled session's limit without a busy_wait_limit
    int m_commit_busy_ms = 0; ///< a lock file's COMMIT waits this long (connect_timeout)

    /// The in-process turn for one autocommit statement (none inside an explicit
    /// transaction, whose BEGIN IMMEDIATE already holds SQLite's write lock).
    gate_turn take_turn() {
        if (!m_gate || sqlite3_get_autocommit(m_db.get()) == 0)
            return {};
        return gate_turn(*m_gate);
    }
};

} // namespace

std::unique_ptr<session> open_sqlite_session(const connection_config& config,
                                             const sql_catalog& catalog) {
    return std::make_unique<sqlite_session>(config, catalog);
}

} // namespace sqlock::detail

SQLOCK_BACKEND_ENTRY_POINT(sqlite, open_sqlite_session)
