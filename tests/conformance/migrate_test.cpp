#include "backend_fixture.hpp"

#include <atomic>
#include <doctest/doctest.h>
#include <thread>
#include <vector>

TEST_SUITE("backend") {

    TEST_CASE("migrate is idempotent and safe when run concurrently") {
        sqlock::connect_options o;
        o.table_prefix = "m" + std::to_string(getpid()) + "_";
        auto fresh = sqlock::connect(test::backend().url, o);
        CHECK(fresh.schema_version() == 0);
        std::atomic<int> failures{0};
        std::vector<std::thread> migrators;
        for (int i = 0; i < 4; ++i) {
            migrators.emplace_back([&] {
                try {
                    sqlock::connect(test::backend().url, o).migrate();
                } catch (const std::exception& e) {
                    MESSAGE("migrate failed: " << e.what());
                    ++failures;
                }
            });
        }
        for (auto& t : migrators)
            t.join();
        CHECK(failures.load() == 0);
        CHECK(fresh.schema_version() == sqlock::database::expected_schema_version(fresh.backend()));
        fresh.migrate(); // again: nothing to do
        CHECK(fresh.schema_version() == sqlock::database::expected_schema_version(fresh.backend()));
        sqlock::mutex m(fresh, "after-migrate");
        CHECK(m.try_lock());
        m.unlock();
    }

    TEST_CASE("migration_script names the prefixed tables and records the version") {
        sqlock::connect_options o;
        o.table_prefix = "dba_";
        const auto script = sqlock::migration_script_for(test::backend().url, o);
        CHECK(script.find("dba_locks") != std::string::npos);
        CHECK(script.find("dba_migrations") != std::string::npos);
        CHECK(script.find("sqlock_locks") == std::string::npos);
    }

} // TEST_SUITE backend
