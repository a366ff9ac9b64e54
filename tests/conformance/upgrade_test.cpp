// Rolling upgrades (issue 34): the schema compatibility contract. A library locks on tables one
// schema version older than its own (hosts upgraded before `sqlock migrate`), keeps locking
// while a migration the contract allows (additive, "compatible-from" this library's version) is
// applied above it, and refuses, naming both versions, tables that need a newer library.
#include "backend_fixture.hpp"
#include "database/database_impl.hpp"
#include "support/additive_migration.hpp"

#include <atomic>
#include <doctest/doctest.h>
#include <thread>

using namespace std::chrono_literals;

namespace {

constexpr sqlock::strategy every_strategy[] = {sqlock::strategy::unique_key,
                                               sqlock::strategy::select_for_update,
                                               sqlock::strategy::optimistic_version};

/// The migrations table as libraries of schema 7 and older created it (no compatible_from).
std::string schema7_migrations_table(const std::string& table) {
    switch (test::backend().kind) {
    case sqlock::backend_kind::postgresql:
        return "CREATE TABLE " + table +
               " (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT "
               "NULL DEFAULT statement_timestamp())";
    case sqlock::backend_kind::mysql:
        return "CREATE TABLE " + table +
               " (version INT NOT NULL PRIMARY KEY, name VARCHAR(255) NOT NULL, applied_at "
               "DATETIME(6) NOT NULL DEFAULT UTC_TIMESTAMP(6)) ENGINE = InnoDB";
    case sqlock::backend_kind::sqlite:
        break;
    }
    return "CREATE TABLE " + table +
           " (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL DEFAULT "
           "(strftime('%Y-%m-%d %H:%M:%f', 'now')))";
}

/// Brings the tables of `db` to schema 7 exactly as a schema-7 library's migrate() did.
void migrate_to_7(sqlock::database& db) {
    auto& impl = sqlock::detail::impl_of(db);
    auto s = impl.checkout();
    const auto migrations = impl.expand("{migrations}");
    s->execute_script(schema7_migrations_table(migrations));
    for (const auto& m : impl.migrations()) {
        if (m.version > 7)
            break;
        s->execute_script(m.sql);
        s->execute_script("INSERT INTO " + migrations + " (version, name) VALUES (" +
                          std::to_string(m.version) + ", '" + m.name + "')");
    }
}

using sqlock::test_support::additive_migration;

/// Applies additive_migration() as migrate() applies its own.
void apply_additive_migration(sqlock::database& db, int version, int from) {
    sqlock::detail::run_migrations(sqlock::detail::impl_of(db),
                                   {additive_migration(db, version, from)}, {});
}

/// Locks and releases a new name with every strategy on `db`; returns the tokens granted.
std::vector<std::int64_t> lock_each_strategy(sqlock::database& db) {
    std::vector<std::int64_t> tokens;
    for (const auto s : every_strategy) {
        sqlock::mutex m(db, test::unique_name("upgrade"), {.strategy = s, .ttl = 10s});
        REQUIRE(m.try_lock_for(10s));
        tokens.push_back(m.token());
        m.unlock();
    }
    return tokens;
}

} // namespace

TEST_SUITE("upgrade") {
    TEST_CASE("upgrade: a library locks on tables of the oldest schema it supports (7), then "
              "migrates them") {
        const int mine = sqlock::database::expected_schema_version(test::backend().kind);
        // Schema 8 recorded compatibility and 9 added the quorum table: plain locks never read
        // either, so this library still locks on schema 7 (CHANGELOG).
        REQUIRE(sqlock::database::oldest_usable_schema_version(test::backend().kind) == 7);
        auto db = sqlock::connect(test::backend().url, test::own_tables("upg7_"));
        migrate_to_7(db);
        auto host = sqlock::connect(test::backend().url, test::own_tables("upg7_"));
        CHECK(host.schema_version() == 7);
        const auto before = lock_each_strategy(host); // no "run sqlock migrate"
        host.migrate();
        CHECK(host.schema_version() == mine);
        const auto after = lock_each_strategy(host);
        CHECK(after.front() > before.back());
    }

    TEST_CASE("upgrade: an additive migration above this library stops none of its locks") {
        const int mine = sqlock::database::expected_schema_version(test::backend().kind);
        auto db = test::fresh_database("upga_");
        const auto name = test::unique_name("upgrade-held");
        sqlock::mutex holder(db, name, {.ttl = 2s, .renew = true});
        REQUIRE(holder.try_lock());
        const auto held_token = holder.token();
        // A waiter in line on its own handle while the migration is applied.
        std::atomic<std::int64_t> waiter_token{0};
        std::thread waiter([&] {
            auto other = sqlock::connect(test::backend().url, test::own_tables("upga_"));
            sqlock::mutex m(other, name, {.ttl = 2s, .renew = true});
            if (m.try_lock_for(30s)) {
                waiter_token = m.token();
                m.unlock();
            }
        });
        apply_additive_migration(db, mine + 1, mine);
        // Renewals go on past the TTL on the migrated tables.
        std::this_thread::sleep_for(3s);
        CHECK(holder.owns_lock());
        holder.unlock();
        waiter.join();
        CHECK(waiter_token.load() > held_token);
        // A host connecting now (tables at mine + 1) locks with every strategy.
        auto later = sqlock::connect(test::backend().url, test::own_tables("upga_"));
        CHECK(later.schema_version() == mine + 1);
        const auto tokens = lock_each_strategy(later);
        CHECK(tokens.front() > waiter_token.load());
    }

    TEST_CASE("upgrade: a migration beside a held select_for_update lock holds lock traffic up "
              "for at most its lock wait") {
        // A select_for_update holder keeps a transaction open on the lock table for as long as
        // it holds; DDL on that table waits for it, and (PostgreSQL, MariaDB) every later
        // statement on the table queues behind the DDL. Without a bound, one long hold would
        // stop all lock traffic until it ended.
        const int mine = sqlock::database::expected_schema_version(test::backend().kind);
        auto db = test::fresh_database("upgw_");
        sqlock::mutex holder(db, test::unique_name("upgrade-row"),
                             {.strategy = sqlock::strategy::select_for_update, .ttl = 30s});
        REQUIRE(holder.try_lock_for(10s));
        std::atomic<bool> done{false};
        std::atomic<int> grants{0};
        std::atomic<std::int64_t> worst_ms{0};
        std::thread traffic([&] {
            auto other = sqlock::connect(test::backend().url, test::own_tables("upgw_"));
            while (!done) {
                const auto started = std::chrono::steady_clock::now();
                sqlock::mutex m(other, test::unique_name("upgrade-traffic"), {.ttl = 10s});
                if (m.try_lock_for(20s)) {
                    ++grants;
                    m.unlock();
                }
                const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
                                      std::chrono::steady_clock::now() - started)
                                      .count();
                worst_ms = std::max<std::int64_t>(worst_ms, took);
            }
        });
        const sqlock::migrate_options options{.lock_wait = 1s, .wait = 4s};
        const std::vector list{additive_migration(db, mine + 1, mine)};
        if (test::backend().kind == sqlock::backend_kind::sqlite) {
            // Its select_for_update locks a file of its own, not the database: no wait.
            CHECK_NOTHROW(
                sqlock::detail::run_migrations(sqlock::detail::impl_of(db), list, options));
        } else {
            try {
                sqlock::detail::run_migrations(sqlock::detail::impl_of(db), list, options);
                FAIL("the migration altered the lock table under an open select_for_update");
            } catch (const sqlock::error& e) {
                CHECK(e.code() == sqlock::errc::timeout);
                CHECK_MESSAGE(std::string(e.what()).find("select_for_update") != std::string::npos,
                              e.what());
            }
        }
        // Traffic went on beside it (on SQLite the migration may end before the other handle
        // has connected: wait for its first grant rather than stop it before it started).
        CHECK(test::eventually([&] { return grants.load() > 0; }, 30s));
        done = true;
        traffic.join();
        CHECK_MESSAGE(worst_ms.load() < 2500, "a lock waited " << worst_ms.load() << " ms");
        CHECK(holder.owns_lock());
        holder.unlock();
        // Released: the migration goes through, and the migrated tables lock.
        sqlock::detail::run_migrations(sqlock::detail::impl_of(db), list, options);
        CHECK(db.schema_version() == mine + 1);
        CHECK(lock_each_strategy(db).size() == 3);
    }

    TEST_CASE("upgrade: tables that need a newer library are refused, naming both versions") {
        const int mine = sqlock::database::expected_schema_version(test::backend().kind);
        auto db = test::fresh_database("upgb_");
        sqlock::detail::impl_of(db).checkout()->execute_script(
            "INSERT INTO " + sqlock::detail::impl_of(db).expand("{migrations}") +
            " (version, name, compatible_from) VALUES (" + std::to_string(mine + 1) +
            ", 'test_breaking', " + std::to_string(mine + 1) + ")");
        try {
            sqlock::connect(test::backend().url, test::own_tables("upgb_"));
            FAIL("connect accepted tables that need a newer library");
        } catch (const sqlock::error& e) {
            CHECK(e.code() == sqlock::errc::schema_mismatch);
            const std::string what = e.what();
            CHECK_MESSAGE(
                what.find("schema version " + std::to_string(mine + 1)) != std::string::npos, what);
            CHECK_MESSAGE(what.find("this one is at " + std::to_string(mine)) != std::string::npos,
                          what);
            CHECK_MESSAGE(what.find("upgrade sqlock") != std::string::npos, what);
        }
    }
}
