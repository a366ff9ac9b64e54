// sqlock_latency_bench — uncontended acquire + release latency: sqlock against the same
// statements sent through the bare driver, and against what users would pick instead.
//
// For every database given (--url, repeatable) it builds these variants, each on its own lock
// name and its own connection(s):
//   sqlock      sqlock::mutex lock() + unlock(), one per strategy, one sqlock::database
//   bare        the statements sqlock sends for that strategy in the steady state, taken from
//               the library's own catalog (library_sql.hpp: the SQL embedded in libsqlock, as
//               its backends send it), prepared, through libpq / Connector/C++ 1.1 / the
//               sqlite3 C API, with the same session settings and parameters
//   baselines   PostgreSQL pg_advisory_lock + pg_advisory_unlock; MariaDB GET_LOCK +
//               RELEASE_LOCK; SQLite flock(2) on a file; everywhere a naive INSERT + DELETE
//               (two autocommit, durable statements) on a table of its own
// and times single acquire + release pairs. Variants are INTERLEAVED: every round runs a batch
// of each variant, the order rotating from round to round, so all of them share the machine's
// noise (round 0 is a warm-up and is not counted). Ratios are of medians over all samples;
// the per-round ratio range shows how stable they are. See tools/bench/README.md.
#include "bench_common.hpp"
#include "library_sql.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <functional>
#include <iostream>
#include <sched.h>
#include <sqlock/sqlock.hpp>
#include <sys/file.h>

namespace {

using bench::backend;
using bench::statement;

constexpr const char* usage_text =
    R"(usage: sqlock_latency_bench --url URL [--url URL ...] [--rounds R] [--batch B]
                            [--json FILE] [--markdown FILE] [--summary FILE]
                            [--only TEXT] [--pin-cpu N --server-pid P ...]

Uncontended acquire + release latency of sqlock (each strategy) next to the same statements
sent through the bare driver, pg_advisory_lock, GET_LOCK, flock(2) and a naive INSERT + DELETE.
Variants run interleaved: R rounds (default 40, plus one warm-up round) of B acquire + release
pairs each (default 50).

  --summary FILE  also write a markdown table of just the targets (met / missed)
  --pin-cpu N     then measure everything again with this process and the servers pinned to
                  vCPU N (needs the right to set their affinity: root, or their owner)
  --server-pid P  a database server to pin (repeatable; PostgreSQL: the postmaster, whose
                  children are pinned too)
  --only TEXT     keep only variants whose "Database kind strategy label" contains TEXT
                  (repeatable; for looking at a few variants by hand)

Exit status: 0 ok; 1 a variant failed; 2 usage.
)";

using bench::usage_error;

struct config {
    std::vector<std::string> urls;
    int rounds = 40;
    int batch = 50;
    std::string json_path;
    std::string markdown_path;
    std::string summary_path;
    std::vector<std::string> only;  ///< keep variants whose description contains one of these
    int pin_cpu = -1;               ///< >= 0: a second pass pinned to this vCPU
    std::vector<pid_t> server_pids; ///< pinned too in that pass (with children and threads)
};

struct variant {
    backend db = backend::postgresql;
    std::string strategy; ///< unique_key / select_for_update / optimistic_version; "" baseline
    std::string kind;     ///< "sqlock", "bare" or "baseline"
    std::string label;    ///< shown in tables
    std::string sends;    ///< what one acquire + release sends
    std::function<void()> once;
    /// The server's count of fsyncs so far (MariaDB Innodb_data_fsyncs, which counts the redo
    /// log's too), read outside the timed loop, before and after each batch. Empty where there
    /// is no exact live counter: PostgreSQL's pg_stat_wal lags up to seconds behind (backends
    /// report their WAL statistics when idle, at most once a second), SQLite has none.
    std::function<std::optional<std::int64_t>()> flush_counter;
    std::vector<double> samples_us;
    std::vector<double> round_medians_us;
    std::int64_t flushes = 0; ///< counted over the measured batches
    bool flushes_known = false;
    bench::summary stats;
    double flushes_per_op() const {
        return flushes_known && stats.n > 0
                   ? static_cast<double>(flushes) / static_cast<double>(stats.n)
                   : std::nan("");
    }
};

using variant_list = std::vector<std::unique_ptr<variant>>;

variant& add(variant_list& out, backend b, std::string strategy, std::string kind,
             std::string label, std::string sends, std::function<void()> once) {
    auto v = std::make_unique<variant>();
    v->db = b;
    v->strategy = std::move(strategy);
    v->kind = std::move(kind);
    v->label = std::move(label);
    v->sends = std::move(sends);
    v->once = std::move(once);
    out.push_back(std::move(v));
    return *out.back();
}

void require(bool ok, const std::string& what) {
    if (!ok)
        throw std::runtime_error(what);
}

std::string lock_name(const std::string& kind, const std::string& what) {
    return "sqlock-bench:latency:" + kind + ":" + what;
}

constexpr std::int64_t ttl_ms = 30'000;

std::int64_t to_i64(const std::string& text) {
    return static_cast<std::int64_t>(std::stoll(text));
}
// sqlock's server-side wait for lock() without deadline: max(io_timeout / 2, 1 s) = 15 s.
constexpr std::int64_t fu_wait_ms = 15'000;

// ------------------------------------------------------------------ sqlock variants

void add_sqlock_variants(variant_list& out, backend b, const sqlock::database& db) {
    const std::pair<sqlock::strategy, std::string> strategies[] = {
        {sqlock::strategy::unique_key, "unique_key"},
        {sqlock::strategy::select_for_update, "select_for_update"},
        {sqlock::strategy::optimistic_version, "optimistic_version"},
    };
    for (const auto& [s, name] : strategies) {
        auto m = std::make_shared<sqlock::mutex>(db, lock_name("sqlock", name),
                                                 sqlock::mutex_options{.strategy = s});
        add(out, b, name, "sqlock", "sqlock::mutex " + name, "lock() + unlock()", [m] {
            m->lock();
            require(m->token() > 0, "sqlock: no fencing token");
            m->unlock();
            if (const std::string e = m->last_error(); !e.empty())
                throw std::runtime_error("sqlock unlock: " + e);
        });
    }
    // Issue 14: a semaphore's uncontended acquire + release against the mutex's (≤ 1.2×).
    auto sem = std::make_shared<sqlock::semaphore>(db, lock_name("sqlock", "semaphore"), 3);
    add(out, b, "semaphore", "sqlock", "sqlock::semaphore (3 permits, unique_key)",
        "acquire() + release()", [sem] {
            sem->acquire();
            require(sem->token() > 0, "sqlock: no fencing token");
            sem->release();
            if (const std::string e = sem->last_error(); !e.empty())
                throw std::runtime_error("sqlock release: " + e);
        });
    // ... and a shared_mutex's shared lock + unlock (a reader permit, whose acquire statement
    // also looks at the writer gate).
    auto rw = std::make_shared<sqlock::shared_mutex>(db, lock_name("sqlock", "shared_mutex"));
    add(out, b, "shared_mutex", "sqlock", "sqlock::shared_mutex shared (16 readers, unique_key)",
        "lock_shared() + unlock_shared()", [rw] {
            rw->lock_shared();
            require(rw->token() > 0, "sqlock: no fencing token");
            rw->unlock_shared();
            if (const std::string e = rw->last_error(); !e.empty())
                throw std::runtime_error("sqlock unlock_shared: " + e);
        });
}

// The bare variants send what a sqlock::mutex sends for one uncontended lock() + unlock(),
// parameters included: acquire_unique_key's $7 as lock() sends it (lib.lock_defers_to_queue),
// NULL for the names a mutex does not defer to (acquire_unique_key's $8 $9, ov_read's $2 $3).

// ------------------------------------------------------------------ PostgreSQL, bare libpq

/// A libpq connection with sqlock's session settings and sqlock's statements prepared (each
/// under its file stem, "acquire_unique_key").
std::shared_ptr<bench::pg_conn> pg_sqlock_like(const std::string& url,
                                               const bench::library_sql& lib,
                                               std::initializer_list<statement> ids) {
    auto c = std::make_shared<bench::pg_conn>(url);
    // sqlock's session settings (postgres_session.cpp): one round trip at connect.
    c->exec("SET statement_timeout = 30000; SET TIME ZONE 'UTC'");
    for (const statement id : ids) {
        const bench::library_statement s = lib(id);
        c->prepare(s.name, s.text);
    }
    return c;
}

void add_postgres_variants(variant_list& out, const std::string& url,
                           const bench::library_sql& lib) {
    const backend b = backend::postgresql;
    const std::string host = bench::host_name();
    const std::string pid = std::to_string(::getpid());
    const std::string ttl = std::to_string(ttl_ms);
    const std::string defer = std::to_string(lib.lock_defers_to_queue());
    // Releases: sqlock versions that commit releases asynchronously send
    // [async_begin, async_commit_off, <release>, async_commit] as one pipeline.
    const bool async_release = lib.sends(statement::async_commit_off);
    const std::string release_how =
        async_release ? "pipelined BEGIN; set_config(synchronous_commit, off); " : "autocommit ";
    const std::initializer_list<statement> async_ids = {
        statement::async_begin, statement::async_commit_off, statement::async_commit};

    // unique_key
    {
        auto c =
            pg_sqlock_like(url, lib, {statement::acquire_unique_key, statement::release_lease});
        if (async_release)
            for (const statement id : async_ids)
                c->prepare(lib(id).name, lib(id).text);
        const std::string name = lock_name("bare", "unique_key");
        const std::string owner = bench::sqlock_owner_id();
        add(out, b, "unique_key", "bare", "libpq, sqlock's statements",
            "acquire_unique_key (autocommit, durable); " + release_how + "release_lease" +
                (async_release ? "; COMMIT (one round trip)" : " (durable)"),
            [=] {
                const auto r = c->exec_prepared(
                    "acquire_unique_key",
                    {name, owner, ttl, host, pid, std::nullopt, defer, std::nullopt, std::nullopt});
                require(r.rows() == 1 && r.value(0, 2) == "1", "bare unique_key: not granted");
                const std::string token = r.value(0, 0);
                if (async_release) {
                    const auto rs = c->exec_pipeline({{"async_begin", {}},
                                                      {"async_commit_off", {}},
                                                      {"release_lease", {name, owner, token}},
                                                      {"async_commit", {}}});
                    require(rs.at(2).rows() == 1, "bare unique_key: release found no row");
                } else {
                    const auto rel = c->exec_prepared("release_lease", {name, owner, token});
                    require(rel.rows() == 1, "bare unique_key: release found no row");
                }
            });
    }
    // select_for_update: the pinned session's pipeline, then COMMIT (simple protocol).
    {
        auto c = pg_sqlock_like(url, lib,
                                {statement::fu_wait, statement::fu_begin, statement::fu_session,
                                 statement::fu_lock, statement::fu_create_row});
        const std::string name = lock_name("bare", "select_for_update");
        const std::string owner = bench::sqlock_owner_id();
        c->exec_prepared("fu_create_row", {name});
        add(out, b, "select_for_update", "bare", "libpq, sqlock's statements",
            "pipeline [fu_wait, BEGIN, fu_session (synchronous_commit off, guards), "
            "fu_lock FOR UPDATE + nextval]; COMMIT",
            [=] {
                const auto rs = c->exec_pipeline({{"fu_wait", {std::to_string(fu_wait_ms)}},
                                                  {"fu_begin", {}},
                                                  {"fu_session", {owner, ttl}},
                                                  {"fu_lock", {name}}});
                require(rs.back().rows() == 1, "bare select_for_update: no row locked");
                c->exec("COMMIT");
            });
    }
    // optimistic_version: read, compare-and-set, release.
    {
        auto c = pg_sqlock_like(url, lib,
                                {statement::ov_read, statement::ov_create, statement::ov_acquire,
                                 statement::ov_release});
        if (async_release)
            for (const statement id : async_ids)
                c->prepare(lib(id).name, lib(id).text);
        const std::string name = lock_name("bare", "optimistic_version");
        const std::string owner = bench::sqlock_owner_id();
        c->exec_prepared("ov_create", {name});
        add(out, b, "optimistic_version", "bare", "libpq, sqlock's statements",
            "ov_read; ov_acquire (CAS, durable); " + release_how + "ov_release" +
                (async_release ? "; COMMIT" : " (durable)"),
            [=] {
                const auto r = c->exec_prepared("ov_read", {name, std::nullopt, std::nullopt});
                require(r.rows() == 1 && r.value(0, 3) == "0", "bare optimistic_version: busy");
                const auto a =
                    c->exec_prepared("ov_acquire", {name, owner, ttl, host, pid, r.value(0, 0)});
                require(a.rows() == 1, "bare optimistic_version: CAS lost");
                const std::string token = a.value(0, 0);
                if (async_release) {
                    const auto rs = c->exec_pipeline({{"async_begin", {}},
                                                      {"async_commit_off", {}},
                                                      {"ov_release", {name, owner, token}},
                                                      {"async_commit", {}}});
                    require(rs.at(2).rows() == 1, "bare optimistic_version: release failed");
                } else {
                    const auto rel = c->exec_prepared("ov_release", {name, owner, token});
                    require(rel.rows() == 1, "bare optimistic_version: release failed");
                }
            });
    }
    // pg_advisory_lock: the server's own lock.
    {
        auto c = std::make_shared<bench::pg_conn>(url);
        c->prepare("acq", "SELECT pg_advisory_lock($1::bigint)");
        c->prepare("rel", "SELECT pg_advisory_unlock($1::bigint)");
        const std::string key = "7316054219853413378";
        add(out, b, "", "baseline", "pg_advisory_lock",
            "SELECT pg_advisory_lock($1); SELECT pg_advisory_unlock($1) (prepared, no commit)",
            [=] {
                c->exec_prepared("acq", {key});
                const auto r = c->exec_prepared("rel", {key});
                require(r.rows() == 1 && r.value(0, 0) == "t", "pg_advisory_unlock: not held");
            });
    }
    // naive INSERT + DELETE, both durable.
    {
        auto c = std::make_shared<bench::pg_conn>(url);
        c->exec("CREATE TABLE IF NOT EXISTS bench_naive_locks (name text PRIMARY KEY, "
                "owner text NOT NULL, expires_at timestamptz NOT NULL)");
        const std::string name = lock_name("naive", "insert_delete");
        const std::string owner = bench::sqlock_owner_id();
        c->prepare("ins", "INSERT INTO bench_naive_locks (name, owner, expires_at) "
                          "VALUES ($1, $2, now() + interval '30 seconds')");
        c->prepare("del", "DELETE FROM bench_naive_locks WHERE name = $1 AND owner = $2");
        c->exec_prepared("del", {name, owner});
        add(out, b, "", "baseline", "naive INSERT + DELETE",
            "INSERT; DELETE (autocommit, 2 durable commits, synchronous_commit on)", [=] {
                const auto i = c->exec_prepared("ins", {name, owner});
                require(std::string(PQcmdTuples(i.get())) == "1", "naive INSERT: no row");
                const auto d = c->exec_prepared("del", {name, owner});
                require(std::string(PQcmdTuples(d.get())) == "1", "naive DELETE: no row");
            });
    }
}

// ------------------------------------------------------------------ MariaDB, bare Connector/C++

void add_mysql_variants(variant_list& out, const std::string& url, const bench::library_sql& lib) {
    const backend b = backend::mysql;
    const std::string host = bench::host_name();
    const std::int64_t pid = ::getpid();
    const std::int64_t defer = lib.lock_defers_to_queue();
    const auto prepared = [&](sql::Connection& conn, statement id) {
        bench::library_statement s = lib(id);
        return std::make_unique<bench::my_statement>(conn, s.name, s.text, std::move(s.order));
    };
    // What sqlock sends around a release elsewhere (asynchronous commit) it sends nothing for
    // here, and its lock sessions need no BEGIN (autocommit = 0): the bare variants leave them
    // out, as long as that holds.
    for (const statement id : {statement::async_begin, statement::async_commit_off,
                               statement::async_commit, statement::fu_begin})
        lib.require_not_sent(id);

    struct conn_and_statements {
        std::unique_ptr<sql::Connection> conn;
        std::vector<std::unique_ptr<bench::my_statement>> stmts;
        std::unique_ptr<sql::Statement> plain;
    };

    // unique_key: INSERT ... ON DUPLICATE KEY UPDATE ... RETURNING; UPDATE (free row).
    {
        auto s = std::make_shared<conn_and_statements>();
        s->conn = bench::my_connect(url, true);
        s->stmts.push_back(prepared(*s->conn, statement::acquire_unique_key));
        s->stmts.push_back(prepared(*s->conn, statement::release_lease));
        const std::string name = lock_name("bare", "unique_key");
        const std::string owner = bench::sqlock_owner_id();
        add(out, b, "unique_key", "bare", "Connector/C++, sqlock's statements",
            "acquire_unique_key (INSERT .. ON DUPLICATE KEY UPDATE .. RETURNING, durable); "
            "release_lease (UPDATE, durable)",
            [=] {
                for (int attempt = 0;; ++attempt) {
                    const auto rows = s->stmts[0]->query(
                        {name, owner, ttl_ms, host, pid, nullptr, defer, nullptr, nullptr});
                    require(rows.size() == 1, "bare unique_key: no row returned");
                    if (rows[0][2] == "1") {
                        require(s->stmts[1]->update({name, owner, to_i64(rows[0][0])}) == 1,
                                "bare unique_key: release changed no row");
                        return;
                    }
                    // First use: the INSERT branch created a free row; take it at once.
                    require(rows[0][3] == "1" && attempt == 0, "bare unique_key: not granted");
                }
            });
    }
    // select_for_update: autocommit = 0 lock session; settings sent once (skip-if-unchanged);
    // the locking SELECT opens the transaction; COMMIT as a plain statement.
    {
        auto s = std::make_shared<conn_and_statements>();
        s->conn = bench::my_connect(url, false);
        s->plain.reset(s->conn->createStatement());
        const std::string name = lock_name("bare", "select_for_update");
        const std::string owner = bench::sqlock_owner_id();
        {
            auto setup = bench::my_connect(url, true);
            prepared(*setup, statement::fu_create_row)->update({name});
        }
        prepared(*s->conn, statement::fu_wait)->update({fu_wait_ms});
        prepared(*s->conn, statement::fu_session)->update({owner, ttl_ms});
        s->plain->execute("COMMIT");
        s->stmts.push_back(prepared(*s->conn, statement::fu_lock));
        add(out, b, "select_for_update", "bare", "Connector/C++, sqlock's statements",
            "fu_lock (SELECT NEXTVAL .. FOR UPDATE, opens the transaction: autocommit = 0); "
            "COMMIT",
            [=] {
                const auto rows = s->stmts[0]->query({name});
                require(rows.size() == 1, "bare select_for_update: no row locked");
                s->plain->execute("COMMIT");
            });
    }
    // optimistic_version: read, CAS, read back (no UPDATE .. RETURNING), release.
    {
        auto s = std::make_shared<conn_and_statements>();
        s->conn = bench::my_connect(url, true);
        const std::string name = lock_name("bare", "optimistic_version");
        const std::string owner = bench::sqlock_owner_id();
        prepared(*s->conn, statement::ov_create)->update({name});
        for (const statement id :
             {statement::ov_read, statement::ov_acquire, statement::ov_release})
            s->stmts.push_back(prepared(*s->conn, id));
        add(out, b, "optimistic_version", "bare", "Connector/C++, sqlock's statements",
            "ov_read; ov_acquire (CAS UPDATE, durable); ov_read (read back); ov_release "
            "(UPDATE, durable)",
            [=] {
                const auto r = s->stmts[0]->query({name, nullptr, nullptr});
                require(r.size() == 1 && r[0][3] == "0", "bare optimistic_version: busy");
                s->stmts[1]->update({name, owner, ttl_ms, host, pid, to_i64(r[0][0])});
                const auto back = s->stmts[0]->query({name, nullptr, nullptr});
                require(back.size() == 1 && back[0][1] == owner && back[0][3] == "1",
                        "bare optimistic_version: CAS lost");
                require(s->stmts[2]->update({name, owner, to_i64(back[0][0])}) == 1,
                        "bare optimistic_version: release changed no row");
            });
    }
    // GET_LOCK: the server's own lock.
    {
        auto s = std::make_shared<conn_and_statements>();
        s->conn = bench::my_connect(url, true);
        s->stmts.push_back(
            std::make_unique<bench::my_statement>(*s->conn, "SELECT GET_LOCK($1, 60)"));
        s->stmts.push_back(
            std::make_unique<bench::my_statement>(*s->conn, "SELECT RELEASE_LOCK($1)"));
        const std::string name = lock_name("get_lock", "x");
        add(out, b, "", "baseline", "GET_LOCK",
            "SELECT GET_LOCK(?, 60); SELECT RELEASE_LOCK(?) (prepared, no commit)", [=] {
                require(s->stmts[0]->query({name}).at(0).at(0) == "1", "GET_LOCK failed");
                require(s->stmts[1]->query({name}).at(0).at(0) == "1", "RELEASE_LOCK: not held");
            });
    }
    // naive INSERT + DELETE, both durable (innodb_flush_log_at_trx_commit = 1).
    {
        auto s = std::make_shared<conn_and_statements>();
        s->conn = bench::my_connect(url, true);
        s->plain.reset(s->conn->createStatement());
        s->plain->execute("CREATE TABLE IF NOT EXISTS bench_naive_locks (name VARBINARY(255) "
                          "PRIMARY KEY, owner VARBINARY(255) NOT NULL, expires_at DATETIME(6) "
                          "NOT NULL) ENGINE = InnoDB");
        const std::string name = lock_name("naive", "insert_delete");
        const std::string owner = bench::sqlock_owner_id();
        s->stmts.push_back(std::make_unique<bench::my_statement>(
            *s->conn, "INSERT INTO bench_naive_locks (name, owner, expires_at) "
                      "VALUES ($1, $2, UTC_TIMESTAMP(6) + INTERVAL 30 SECOND)"));
        s->stmts.push_back(std::make_unique<bench::my_statement>(
            *s->conn, "DELETE FROM bench_naive_locks WHERE name = $1 AND owner = $2"));
        s->stmts[1]->update({name, owner});
        add(out, b, "", "baseline", "naive INSERT + DELETE",
            "INSERT; DELETE (autocommit, 2 durable commits, innodb_flush_log_at_trx_commit=1)",
            [=] {
                require(s->stmts[0]->update({name, owner}) == 1, "naive INSERT: no row");
                require(s->stmts[1]->update({name, owner}) == 1, "naive DELETE: no row");
            });
    }
}

// ------------------------------------------------------------------ SQLite, bare C API

void add_sqlite_variants(variant_list& out, const std::string& url, const bench::library_sql& lib) {
    const backend b = backend::sqlite;
    const std::string path = bench::sqlite_path(url);
    const std::string host = bench::host_name();
    const std::int64_t pid = ::getpid();
    const std::int64_t defer = lib.lock_defers_to_queue();
    const auto prepared = [&](sqlite3* db, statement id) {
        const bench::library_statement s = lib(id);
        return std::make_unique<bench::sqlite_stmt>(db, s.text, s.name);
    };
    // The lock session's settings: a no-op here (the lock file's busy timeout stands for
    // fu_wait, set with the C API below).
    lib.require_not_sent(statement::fu_session);

    struct conn_and_statements {
        std::unique_ptr<bench::sqlite_db> db;
        std::unique_ptr<bench::sqlite_db> lock_file;
        std::vector<std::unique_ptr<bench::sqlite_stmt>> stmts;
    };
    // sqlock's pool session settings (sqlite_session.cpp).
    const auto open_main = [&] {
        auto d = std::make_unique<bench::sqlite_db>(path);
        d->exec("PRAGMA journal_mode = WAL");
        d->exec("PRAGMA synchronous = FULL");
        return d;
    };

    // Releases: sqlock versions whose files have async_commit_off / async_commit wrap each
    // release in them (PRAGMA synchronous = NORMAL, then FULL again: no fsync for the release).
    const bool async_release =
        lib.sends(statement::async_commit_off) && lib.sends(statement::async_commit);
    const std::string async_off =
        async_release ? lib(statement::async_commit_off).text : std::string();
    const std::string async_on = async_release ? lib(statement::async_commit).text : std::string();
    const auto released = [async_release, async_off, async_on](bench::sqlite_db& d,
                                                               const std::function<void()>& f) {
        if (async_release)
            d.exec(async_off);
        f();
        if (async_release)
            d.exec(async_on);
    };
    const std::string release_sends =
        async_release ? "between PRAGMA synchronous = NORMAL and = FULL: 1 fsync" : "2 fsyncs";
    {
        auto s = std::make_shared<conn_and_statements>();
        s->db = open_main();
        s->stmts.push_back(prepared(s->db->get(), statement::acquire_unique_key));
        s->stmts.push_back(prepared(s->db->get(), statement::release_lease));
        const std::string name = lock_name("bare", "unique_key");
        const std::string owner = bench::sqlock_owner_id();
        add(out, b, "unique_key", "bare", "sqlite3 C API, sqlock's statements",
            "acquire_unique_key (INSERT .. ON CONFLICT .. RETURNING); release_lease (DELETE) " +
                release_sends + "; WAL, synchronous = FULL",
            [=] {
                const auto r = s->stmts[0]->run(
                    {name, owner, ttl_ms, host, pid, nullptr, defer, nullptr, nullptr});
                require(r.size() == 1 && r[0][2] == "1", "bare unique_key: not granted");
                released(*s->db, [&] { s->stmts[1]->run({name, owner, to_i64(r[0][0])}); });
                require(s->db->changes() == 1, "bare unique_key: release deleted no row");
            });
    }
    {
        // The lock is a write transaction on a small lock file of its own, kept open (as
        // sqlock keeps its lock-file connections); the token comes from the counter in the
        // main file.
        auto s = std::make_shared<conn_and_statements>();
        s->db = open_main();
        s->lock_file = std::make_unique<bench::sqlite_db>(path + "-bench-bare-fu.lock");
        sqlite3_busy_timeout(s->lock_file->get(), static_cast<int>(fu_wait_ms));
        s->stmts.push_back(prepared(s->lock_file->get(), statement::fu_begin));
        s->stmts.push_back(prepared(s->lock_file->get(), statement::fu_lock));
        s->stmts.push_back(prepared(s->db->get(), statement::fu_next_token));
        const std::string name = lock_name("bare", "select_for_update");
        add(out, b, "select_for_update", "bare", "sqlite3 C API, sqlock's statements",
            "BEGIN IMMEDIATE + fu_lock on a lock file kept open; fu_next_token (UPDATE counter, "
            "1 fsync); COMMIT",
            [=] {
                s->stmts[0]->run();
                require(s->stmts[1]->run({name}).size() == 1, "bare select_for_update: no row");
                require(s->stmts[2]->run().size() == 1, "bare select_for_update: no token");
                s->lock_file->exec("COMMIT");
            });
    }
    {
        auto s = std::make_shared<conn_and_statements>();
        s->db = open_main();
        const std::string name = lock_name("bare", "optimistic_version");
        const std::string owner = bench::sqlock_owner_id();
        prepared(s->db->get(), statement::ov_create)->run({name});
        for (const statement id :
             {statement::ov_read, statement::ov_acquire, statement::ov_release})
            s->stmts.push_back(prepared(s->db->get(), id));
        add(out, b, "optimistic_version", "bare", "sqlite3 C API, sqlock's statements",
            "ov_read; ov_acquire (CAS UPDATE .. RETURNING); ov_release (UPDATE) " + release_sends,
            [=] {
                const auto r = s->stmts[0]->run({name, nullptr, nullptr});
                require(r.size() == 1 && r[0][3] == "0", "bare optimistic_version: busy");
                const auto a = s->stmts[1]->run({name, owner, ttl_ms, host, pid, to_i64(r[0][0])});
                require(a.size() == 1, "bare optimistic_version: CAS lost");
                released(*s->db, [&] { s->stmts[2]->run({name, owner, to_i64(a[0][0])}); });
                require(s->db->changes() == 1, "bare optimistic_version: release failed");
            });
    }
    {
        const std::string file = path + "-bench-flock.lock";
        const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0)
            throw std::runtime_error("open " + file + ": " + std::strerror(errno));
        auto holder = std::shared_ptr<int>(new int(fd), [](int* p) {
            ::close(*p);
            delete p;
        });
        add(out, b, "", "baseline", "flock(2)",
            "flock(fd, LOCK_EX); flock(fd, LOCK_UN) on a file kept open (one host only)", [holder] {
                require(::flock(*holder, LOCK_EX) == 0, "flock LOCK_EX failed");
                require(::flock(*holder, LOCK_UN) == 0, "flock LOCK_UN failed");
            });
    }
    {
        auto s = std::make_shared<conn_and_statements>();
        s->db = open_main();
        s->db->exec("CREATE TABLE IF NOT EXISTS bench_naive_locks (name TEXT PRIMARY KEY, "
                    "owner TEXT NOT NULL, expires_at INTEGER NOT NULL)");
        const std::string name = lock_name("naive", "insert_delete");
        const std::string owner = bench::sqlock_owner_id();
        s->stmts.push_back(std::make_unique<bench::sqlite_stmt>(
            s->db->get(), "INSERT INTO bench_naive_locks (name, owner, expires_at) VALUES "
                          "(?1, ?2, CAST((julianday('now') - 2440587.5) * 86400000.0 AS "
                          "INTEGER) + 30000)"));
        s->stmts.push_back(std::make_unique<bench::sqlite_stmt>(
            s->db->get(), "DELETE FROM bench_naive_locks WHERE name = ?1 AND owner = ?2"));
        s->stmts[1]->run({name, owner});
        add(out, b, "", "baseline", "naive INSERT + DELETE",
            "INSERT; DELETE (autocommit, WAL, synchronous = FULL: 2 fsyncs)", [=] {
                s->stmts[0]->run({name, owner});
                require(s->db->changes() == 1, "naive INSERT: no row");
                s->stmts[1]->run({name, owner});
                require(s->db->changes() == 1, "naive DELETE: no row");
            });
    }
}

// ------------------------------------------------------------------ measuring

void measure(variant_list& variants, const config& cfg) {
    const std::size_t n = variants.size();
    std::vector<double> batch;
    for (int round = 0; round <= cfg.rounds; ++round) {
        for (std::size_t k = 0; k < n; ++k) {
            variant& v = *variants[(k + static_cast<std::size_t>(round)) % n];
            batch.clear();
            const auto flushes_before = v.flush_counter ? v.flush_counter() : std::nullopt;
            for (int i = 0; i < cfg.batch; ++i) {
                const std::int64_t t0 = bench::now_ns();
                try {
                    v.once();
                } catch (const std::exception& e) {
                    throw std::runtime_error(bench::backend_label(v.db) + " / " + v.label +
                                             (v.strategy.empty() ? "" : " " + v.strategy) + ": " +
                                             e.what());
                }
                batch.push_back(static_cast<double>(bench::now_ns() - t0) / 1000.0);
            }
            const auto flushes_after = v.flush_counter ? v.flush_counter() : std::nullopt;
            if (round == 0)
                continue; // warm-up: connections, prepared statements, first-use rows
            if (flushes_before && flushes_after) {
                v.flushes += *flushes_after - *flushes_before;
                v.flushes_known = true;
            }
            v.samples_us.insert(v.samples_us.end(), batch.begin(), batch.end());
            std::sort(batch.begin(), batch.end());
            v.round_medians_us.push_back(bench::median_of_sorted(batch));
        }
    }
    for (auto& v : variants)
        v->stats = bench::summarise(v->samples_us);
}

struct comparison {
    const variant* num = nullptr;
    const variant* den = nullptr;
    std::string group; ///< "overhead" (sqlock vs bare) or "alternative"
    std::optional<double> target;
    double ratio_median = 0;
    double ratio_p99 = 0;
    double round_min = 0;
    double round_median = 0;
    double round_max = 0;
};

comparison compare(const variant& num, const variant& den, std::string group,
                   std::optional<double> target) {
    comparison c{&num, &den, std::move(group), target};
    c.ratio_median = num.stats.median / den.stats.median;
    c.ratio_p99 = num.stats.p99 / den.stats.p99;
    std::vector<double> per_round;
    for (std::size_t r = 0; r < num.round_medians_us.size() && r < den.round_medians_us.size(); ++r)
        per_round.push_back(num.round_medians_us[r] / den.round_medians_us[r]);
    std::sort(per_round.begin(), per_round.end());
    if (!per_round.empty()) {
        c.round_min = per_round.front();
        c.round_median = bench::median_of_sorted(per_round);
        c.round_max = per_round.back();
    }
    return c;
}

std::string verdict(const comparison& c) {
    if (!c.target)
        return "–";
    if (c.ratio_median <= *c.target)
        return "met";
    const double over = 100.0 * (c.ratio_median / *c.target - 1.0);
    return "MISSED by " + bench::fixed(over, over < 10 ? 1 : 0) + "% (" +
           bench::fixed(c.ratio_median, over < 10 ? 3 : 2) + "× vs ≤ " +
           bench::ratio_text(*c.target) + ")";
}

const variant* find(const variant_list& vs, backend b, std::string_view kind,
                    std::string_view strategy, std::string_view label = {}) {
    for (const auto& v : vs)
        if (v->db == b && v->kind == kind && v->strategy == strategy &&
            (label.empty() || v->label == label))
            return v.get();
    return nullptr;
}

std::vector<comparison> comparisons(const variant_list& vs) {
    std::vector<comparison> out;
    for (const backend b : {backend::postgresql, backend::mysql, backend::sqlite})
        for (const char* s : {"unique_key", "select_for_update", "optimistic_version"}) {
            const variant* lib = find(vs, b, "sqlock", s);
            const variant* bare = find(vs, b, "bare", s);
            if (lib && bare)
                out.push_back(compare(*lib, *bare, "overhead", 1.15));
        }
    const auto alt = [&](backend b, const char* strategy, const char* baseline,
                         std::optional<double> target) {
        const variant* lib = find(vs, b, "sqlock", strategy);
        const variant* base = find(vs, b, "baseline", "", baseline);
        if (lib && base)
            out.push_back(compare(*lib, *base, "alternative", target));
    };
    alt(backend::postgresql, "select_for_update", "pg_advisory_lock", 1.3);
    alt(backend::postgresql, "unique_key", "pg_advisory_lock", std::nullopt);
    alt(backend::postgresql, "unique_key", "naive INSERT + DELETE", 0.7);
    alt(backend::mysql, "select_for_update", "GET_LOCK", std::nullopt);
    alt(backend::mysql, "unique_key", "naive INSERT + DELETE", 0.7);
    alt(backend::sqlite, "unique_key", "naive INSERT + DELETE", 0.7);
    alt(backend::sqlite, "select_for_update", "flock(2)", std::nullopt);
    for (const backend b : {backend::postgresql, backend::mysql, backend::sqlite}) {
        const variant* mutex = find(vs, b, "sqlock", "unique_key");
        for (const char* primitive : {"semaphore", "shared_mutex"})
            if (const variant* v = find(vs, b, "sqlock", primitive); v && mutex)
                out.push_back(compare(*v, *mutex, "alternative", 1.2));
    }
    // The bare statements against the naive ones: what the SQL itself costs.
    for (const backend b : {backend::postgresql, backend::mysql, backend::sqlite}) {
        const variant* bare = find(vs, b, "bare", "unique_key");
        const variant* naive = find(vs, b, "baseline", "", "naive INSERT + DELETE");
        if (bare && naive)
            out.push_back(compare(*bare, *naive, "alternative", std::nullopt));
    }
    return out;
}

// ------------------------------------------------------------------ output

// ------------------------------------------------------------------ passes and pinning

/// One measurement of every variant: unpinned (as an application runs), or with this process
/// and the database servers pinned to one vCPU.
struct pass {
    std::string name; ///< "unpinned" or "pinned"
    std::string description;
    variant_list variants;
    std::vector<comparison> comparisons;
};

bool set_affinity(pid_t tid, const cpu_set_t& set) {
    // A thread or backend that ended since it was listed is no failure.
    if (::sched_setaffinity(tid, sizeof set, &set) == 0 || errno == ESRCH)
        return true;
    std::cerr << "latency_bench: cannot set the CPU affinity of thread " << tid << ": "
              << std::strerror(errno) << "\n";
    return false;
}

/// Every thread of `pid`, and of its children (PostgreSQL: the postmaster's backends and
/// helpers; new backends inherit the postmaster's mask).
std::vector<pid_t> threads_of_tree(pid_t pid) {
    std::vector<pid_t> pids{pid};
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
        const std::string name = entry.path().filename();
        if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0])))
            continue;
        std::ifstream stat(entry.path() / "stat");
        std::string line;
        if (!std::getline(stat, line))
            continue;
        const auto close = line.rfind(')');
        if (close == std::string::npos)
            continue;
        std::istringstream rest(line.substr(close + 2));
        char state = 0;
        long ppid = 0;
        if (rest >> state >> ppid && ppid == pid)
            pids.push_back(static_cast<pid_t>(std::stol(name)));
    }
    std::vector<pid_t> tids;
    for (const pid_t p : pids) {
        std::error_code ec;
        for (const auto& t :
             std::filesystem::directory_iterator("/proc/" + std::to_string(p) + "/task", ec))
            tids.push_back(static_cast<pid_t>(std::stol(t.path().filename().string())));
    }
    return tids;
}

/// Pins this process (its threads: call before starting any) and the server trees to `cpu`,
/// or, with cpu < 0, gives all of them every online vCPU again. Returns false when a server
/// could not be pinned (not root, or not its owner).
bool pin(int cpu, const std::vector<pid_t>& servers) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (cpu >= 0) {
        CPU_SET(static_cast<std::size_t>(cpu), &set);
    } else {
        const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
        for (long i = 0; i < n; ++i)
            CPU_SET(static_cast<std::size_t>(i), &set);
    }
    bool ok = true;
    for (const pid_t server : servers)
        for (const pid_t tid : threads_of_tree(server))
            ok = set_affinity(tid, set) && ok;
    for (const pid_t tid : threads_of_tree(::getpid()))
        ok = set_affinity(tid, set) && ok;
    return ok;
}

/// A reader of the server's fsync counter (its own connection), or an empty function.
std::function<std::optional<std::int64_t>()> make_flush_counter(backend b, const std::string& url) {
    try {
        if (b == backend::mysql) {
            std::shared_ptr<sql::Connection> c = bench::my_connect(url, true);
            auto stmt = std::make_shared<bench::my_statement>(
                *c, "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS "
                    "WHERE VARIABLE_NAME = 'INNODB_DATA_FSYNCS'");
            if (stmt->query({}).size() != 1)
                return {};
            return [c, stmt]() -> std::optional<std::int64_t> {
                try {
                    const auto rows = stmt->query({});
                    if (rows.size() != 1)
                        return std::nullopt;
                    return to_i64(rows[0][0]);
                } catch (const std::exception&) {
                    return std::nullopt;
                }
            };
        }
    } catch (const std::exception& e) {
        std::cerr << "latency_bench: no log-flush counts for " << bench::backend_label(b) << ": "
                  << e.what() << "\n";
    }
    return {};
}

void build_variants(variant_list& variants, const config& cfg) {
    for (const auto& url : cfg.urls) {
        const backend b = bench::backend_of(url);
        const std::size_t first = variants.size();
        sqlock::database db = sqlock::connect(url);
        db.migrate();
        add_sqlock_variants(variants, b, db);
        // The bare variants' statements: this handle's, as the library sends them.
        const bench::library_sql lib(db);
        switch (b) {
        case backend::postgresql:
            add_postgres_variants(variants, url, lib);
            break;
        case backend::mysql:
            add_mysql_variants(variants, url, lib);
            break;
        case backend::sqlite:
            add_sqlite_variants(variants, url, lib);
            break;
        }
        const auto counter = make_flush_counter(b, url);
        for (std::size_t i = first; i < variants.size(); ++i)
            variants[i]->flush_counter = counter;
    }
    if (!cfg.only.empty())
        std::erase_if(variants, [&](const std::unique_ptr<variant>& v) {
            const std::string text =
                bench::backend_label(v->db) + " " + v->kind + " " + v->strategy + " " + v->label;
            return std::none_of(cfg.only.begin(), cfg.only.end(), [&](const std::string& o) {
                return text.find(o) != std::string::npos;
            });
        });
}

// ------------------------------------------------------------------ output

std::string name_of(const variant* v) {
    return v->kind == "sqlock" ? "sqlock " + v->strategy
           : v->kind == "bare" ? "bare " + v->strategy + " statements"
                               : v->label;
}

std::string flushes_text(const variant* v) {
    const double f = v->flushes_per_op();
    return std::isnan(f) ? "–" : bench::fixed(f, 2);
}

std::string range_text(const comparison& c) {
    return bench::fixed(c.round_min, 2) + "–" + bench::fixed(c.round_max, 2);
}

std::string markdown(const std::vector<pass>& passes, const config& cfg) {
    std::ostringstream o;
    o << "### Uncontended acquire + release latency\n\n"
      << "One thread, one lock name and connection per variant; " << cfg.rounds
      << " interleaved rounds × " << cfg.batch
      << " acquire + release pairs per variant (order rotating each round; a warm-up round not "
         "counted). × = ratio of medians over all samples; per-round = min–max of the ratio of "
         "each round's medians. Log flushes / op: MariaDB's own count of InnoDB fsyncs "
         "(`Innodb_data_fsyncs`, redo log included) during the variant's batches, per acquire + "
         "release (PostgreSQL's `pg_stat_wal` lags seconds behind, so it is not used; SQLite "
         "has no counter: with WAL and synchronous = FULL every commit syncs). ";
    for (const auto& p : passes)
        o << "**" << p.name << "**: " << p.description << " ";
    o << "\n\n**Library overhead: sqlock vs the same statements through the bare driver** "
         "(target ≤ 1.15×)\n\n| database | strategy |";
    for (const auto& p : passes)
        o << " " << p.name << ": sqlock median µs | bare median µs | **×** | per-round × | × p99 |";
    o << " log flushes / op, sqlock / bare |\n|---|---|";
    for (std::size_t i = 0; i < passes.size(); ++i)
        o << "---:|---:|---:|---|---:|";
    o << "---|";
    o << "\n";
    const auto& first = passes.front().comparisons;
    for (std::size_t k = 0; k < first.size(); ++k) {
        if (first[k].group != "overhead")
            continue;
        o << "| " << bench::backend_label(first[k].num->db) << " | " << first[k].num->strategy
          << " |";
        for (const auto& p : passes) {
            const comparison& c = p.comparisons.at(k);
            o << " " << bench::us(c.num->stats.median) << " | " << bench::us(c.den->stats.median)
              << " | **" << bench::ratio_text(c.ratio_median) << "** | " << range_text(c) << " | "
              << bench::ratio_text(c.ratio_p99) << " |";
        }
        o << " " << flushes_text(first[k].num) << " / " << flushes_text(first[k].den) << " |\n";
    }
    o << "\n**Against what users would pick instead** (and the bare unique_key statements "
         "against the naive ones)\n\n| database | this | against |";
    for (const auto& p : passes)
        o << " " << p.name << ": this median µs | against median µs | **×** | per-round × |";
    o << " log flushes / op, this / against | target |\n|---|---|---|";
    for (std::size_t i = 0; i < passes.size(); ++i)
        o << "---:|---:|---:|---|";
    o << "---|---|\n";
    for (std::size_t k = 0; k < first.size(); ++k) {
        if (first[k].group != "alternative")
            continue;
        o << "| " << bench::backend_label(first[k].num->db) << " | " << name_of(first[k].num)
          << " | " << name_of(first[k].den) << " |";
        for (const auto& p : passes) {
            const comparison& c = p.comparisons.at(k);
            o << " " << bench::us(c.num->stats.median) << " | " << bench::us(c.den->stats.median)
              << " | **" << bench::ratio_text(c.ratio_median) << "** | " << range_text(c) << " |";
        }
        o << " " << flushes_text(first[k].num) << " / " << flushes_text(first[k].den) << " | "
          << (first[k].target ? "≤ " + bench::ratio_text(*first[k].target) : "–") << " |\n";
    }
    for (const auto& p : passes) {
        o << "\n<details><summary>All variants, " << p.name
          << " (what each sends; samples)</summary>\n\n"
          << "| database | variant | strategy | sends | n | median µs | p99 µs | mean µs | min µs "
             "| log flushes / op |\n|---|---|---|---|---:|---:|---:|---:|---:|---:|\n";
        for (const auto& v : p.variants)
            o << "| " << bench::backend_label(v->db) << " | " << v->label << " | "
              << (v->strategy.empty() ? "–" : v->strategy) << " | " << v->sends << " | "
              << v->stats.n << " | " << bench::us(v->stats.median) << " | "
              << bench::us(v->stats.p99) << " | " << bench::us(v->stats.mean) << " | "
              << bench::us(v->stats.min) << " | " << flushes_text(v.get()) << " |\n";
        o << "\n</details>\n";
    }
    return o.str();
}

std::string summary(const std::vector<pass>& passes) {
    std::ostringstream o;
    o << "| target | database |";
    for (const auto& p : passes)
        o << " " << p.name << ": measured × (medians µs) | per-round × | verdict |";
    o << "\n|---|---|";
    for (std::size_t i = 0; i < passes.size(); ++i)
        o << "---:|---|---|";
    o << "\n";
    const auto& first = passes.front().comparisons;
    for (std::size_t k = 0; k < first.size(); ++k) {
        const comparison& f = first[k];
        if (!f.target)
            continue;
        const std::string what =
            f.group == "overhead"
                ? "`" + f.num->strategy + "` sqlock / bare driver ≤ " + bench::ratio_text(*f.target)
                : "`" + f.num->strategy + "` / " + f.den->label + " ≤ " +
                      bench::ratio_text(*f.target);
        o << "| " << what << " | " << bench::backend_label(f.num->db) << " |";
        for (const auto& p : passes) {
            const comparison& c = p.comparisons.at(k);
            o << " " << bench::ratio_text(c.ratio_median) << " (" << bench::us(c.num->stats.median)
              << " / " << bench::us(c.den->stats.median) << ") | " << range_text(c) << " | "
              << verdict(c) << " |";
        }
        o << "\n";
    }
    return o.str();
}

std::string json(const std::vector<pass>& passes, const config& cfg) {
    std::ostringstream o;
    o << "{\"rounds\": " << cfg.rounds << ", \"batch\": " << cfg.batch << ", \"passes\": [";
    for (std::size_t pi = 0; pi < passes.size(); ++pi) {
        const pass& p = passes[pi];
        o << (pi ? ",\n" : "\n") << "{\"name\": " << bench::json_string(p.name)
          << ", \"description\": " << bench::json_string(p.description) << ", \"variants\": [";
        for (std::size_t i = 0; i < p.variants.size(); ++i) {
            const variant& v = *p.variants[i];
            o << (i ? ",\n  " : "\n  ")
              << "{\"backend\": " << bench::json_string(bench::backend_label(v.db))
              << ", \"strategy\": "
              << (v.strategy.empty() ? "null" : bench::json_string(v.strategy))
              << ", \"kind\": " << bench::json_string(v.kind)
              << ", \"label\": " << bench::json_string(v.label)
              << ", \"sends\": " << bench::json_string(v.sends) << ", \"n\": " << v.stats.n
              << ", \"median_us\": " << bench::json_number(v.stats.median, 2)
              << ", \"p99_us\": " << bench::json_number(v.stats.p99, 2)
              << ", \"mean_us\": " << bench::json_number(v.stats.mean, 2)
              << ", \"min_us\": " << bench::json_number(v.stats.min, 2)
              << ", \"max_us\": " << bench::json_number(v.stats.max, 2)
              << ", \"log_flushes_per_op\": " << bench::json_number(v.flushes_per_op(), 3) << "}";
        }
        o << "],\n \"comparisons\": [";
        for (std::size_t i = 0; i < p.comparisons.size(); ++i) {
            const comparison& c = p.comparisons[i];
            o << (i ? ",\n  " : "\n  ")
              << "{\"backend\": " << bench::json_string(bench::backend_label(c.num->db))
              << ", \"group\": " << bench::json_string(c.group)
              << ", \"numerator\": " << bench::json_string(name_of(c.num))
              << ", \"denominator\": " << bench::json_string(name_of(c.den)) << ", \"strategy\": "
              << (c.num->strategy.empty() ? "null" : bench::json_string(c.num->strategy))
              << ", \"ratio_median\": " << bench::json_number(c.ratio_median)
              << ", \"ratio_p99\": " << bench::json_number(c.ratio_p99)
              << ", \"round_ratio_min\": " << bench::json_number(c.round_min)
              << ", \"round_ratio_median\": " << bench::json_number(c.round_median)
              << ", \"round_ratio_max\": " << bench::json_number(c.round_max) << ", \"target\": "
              << (c.target ? bench::json_number(*c.target, 2) : std::string("null"))
              << ", \"met\": "
              << (c.target ? (c.ratio_median <= *c.target ? "true" : "false") : "null") << "}";
        }
        o << "]}";
    }
    o << "]}\n";
    return o.str();
}

config parse_args(int argc, char** argv) {
    config cfg;
    bench::for_each_option(argc, argv, usage_text, [&](const std::string& a, const std::string& v) {
        if (a == "--url") {
            bench::backend_of(v); // a usage_error unless sqlock takes the URL
            cfg.urls.push_back(v);
        } else if (a == "--rounds") {
            cfg.rounds = std::stoi(v);
        } else if (a == "--batch") {
            cfg.batch = std::stoi(v);
        } else if (a == "--json") {
            cfg.json_path = v;
        } else if (a == "--markdown") {
            cfg.markdown_path = v;
        } else if (a == "--summary") {
            cfg.summary_path = v;
        } else if (a == "--only") {
            cfg.only.push_back(v);
        } else if (a == "--pin-cpu") {
            cfg.pin_cpu = std::stoi(v);
        } else if (a == "--server-pid") {
            cfg.server_pids.push_back(static_cast<pid_t>(std::stol(v)));
        } else {
            throw usage_error("unknown option " + a);
        }
    });
    if (cfg.urls.empty())
        throw usage_error("at least one --url is required");
    if (cfg.rounds < 1 || cfg.rounds > 10'000 || cfg.batch < 1 || cfg.batch > 100'000)
        throw usage_error("--rounds must be 1..10000 and --batch 1..100000");
    if (cfg.pin_cpu >= ::sysconf(_SC_NPROCESSORS_ONLN))
        throw usage_error("--pin-cpu: no such vCPU");
    return cfg;
}

void run_pass(pass& p, const config& cfg) {
    build_variants(p.variants, cfg);
    std::cerr << "latency_bench: " << p.name << ": " << p.variants.size() << " variants, "
              << cfg.rounds << " rounds × " << cfg.batch << " each\n";
    const std::int64_t t0 = bench::now_ns();
    measure(p.variants, cfg);
    std::cerr << "latency_bench: " << p.name << ": measured in "
              << bench::fixed(static_cast<double>(bench::now_ns() - t0) / 1e9, 1) << " s\n";
    p.comparisons = comparisons(p.variants);
    for (auto& v : p.variants)
        v->once = nullptr; // closes this pass's connections
}

int run(const config& cfg) {
    std::vector<pass> passes;
    passes.push_back({"unpinned",
                      "no CPU affinity set (as an application runs: client, its background "
                      "threads and the server land on either vCPU).",
                      {},
                      {}});
    run_pass(passes.back(), cfg);
    if (cfg.pin_cpu >= 0) {
        const bool pinned = pin(cfg.pin_cpu, cfg.server_pids);
        passes.push_back({"pinned",
                          "this process (all its threads) and the database servers pinned to "
                          "vCPU " +
                              std::to_string(cfg.pin_cpu) +
                              ": every round trip stays on one vCPU, so what remains is CPU "
                              "work, not placement." +
                              (pinned ? "" : " (pinning a server FAILED: not root?)"),
                          {},
                          {}});
        try {
            run_pass(passes.back(), cfg);
        } catch (...) {
            pin(-1, cfg.server_pids);
            throw;
        }
        pin(-1, cfg.server_pids);
    }
    const std::string md = markdown(passes, cfg);
    std::cout << md;
    if (!cfg.markdown_path.empty())
        bench::write_file(cfg.markdown_path, md);
    if (!cfg.summary_path.empty())
        bench::write_file(cfg.summary_path, summary(passes));
    if (!cfg.json_path.empty())
        bench::write_file(cfg.json_path, json(passes, cfg));
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    return bench::bench_main<config>("sqlock_latency_bench", usage_text, argc, argv, parse_args,
                                     run);
}
