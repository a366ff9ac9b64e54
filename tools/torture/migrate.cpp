// The torture's migrate nemesis: applies a migration the compatibility contract allows (a new
// table and a nullable column on the lock table, one schema version above what it finds) while
// the workers hold and wait, through the path `sqlock migrate` takes (run_migrations: each DDL
// statement waits at most a second for its table lock, retried).
//
//   sqlock_torture_migrate URL [PREFIX]     exit 0 applied; 1 failed (said on stderr); 2 usage
//
// A server crash or a dropped connection meanwhile is retried for up to a minute, as an
// operator would run `sqlock migrate` again.
#include "database/database_impl.hpp"
#include "support/additive_migration.hpp"

#include <chrono>
#include <iostream>
#include <sqlock/sqlock.hpp>
#include <string>
#include <thread>

namespace {

/// One try: connects, applies version schema_version() + 1; returns that version.
int migrate_once(const std::string& url, const std::string& prefix) {
    sqlock::connect_options options;
    options.table_prefix = prefix;
    auto db = sqlock::connect(url, options);
    const int version = db.schema_version() + 1;
    const int mine = sqlock::database::expected_schema_version(db.backend());
    sqlock::detail::run_migrations(
        sqlock::detail::impl_of(db), {sqlock::test_support::additive_migration(db, version, mine)},
        {.lock_wait = std::chrono::seconds(1), .wait = std::chrono::seconds(60)});
    return version;
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 2 || argc > 3) {
        std::cerr << "usage: sqlock_torture_migrate URL [PREFIX]\n";
        return 2;
    }
    const std::string url = argv[1];
    const std::string prefix = argc == 3 ? argv[2] : "sqlock_";
    const auto started = std::chrono::steady_clock::now();
    const auto give_up = started + std::chrono::minutes(1);
    for (;;) {
        try {
            const int version = migrate_once(url, prefix);
            std::cout << "migrated to version " << version << " in "
                      << std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::steady_clock::now() - started)
                             .count()
                      << " ms\n";
            return 0;
        } catch (const sqlock::error& e) {
            const bool again =
                e.code() == sqlock::errc::connection && std::chrono::steady_clock::now() < give_up;
            std::cerr << "sqlock_torture_migrate: " << e.what() << (again ? " (again)" : "")
                      << "\n";
            if (!again)
                return 1;
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
    }
}
