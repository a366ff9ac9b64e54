// Every statement and migration exists for every backend (SQL is data; this keeps it whole).
#include "base/embedded.hpp"
#include "base/statements.hpp"

#include <doctest/doctest.h>
#include <string>
#include <vector>

using namespace sqlock::detail;

TEST_CASE("every statement has SQL for every backend") {
    for (const char* backend : {"postgres", "mysql", "sqlite"}) {
        for (const auto name : statement_names) {
            const auto path = std::string("sql/") + backend + "/" + std::string(name) + ".sql";
            CAPTURE(path);
            const auto text = find_embedded(path);
            REQUIRE(text.has_value());
            CHECK(text->find_first_not_of(" \n\t") != std::string_view::npos);
        }
    }
}

TEST_CASE("every backend has the same migration versions") {
    auto versions = [](const std::string& backend) {
        std::vector<std::string> files;
        for (const auto& f : embedded_files()) {
            const auto dir = "migrations/" + backend + "/";
            if (f.path.starts_with(dir))
                files.emplace_back(f.path.substr(dir.size(), 4));
        }
        return files;
    };
    const auto pg = versions("postgres");
    CHECK_FALSE(pg.empty());
    CHECK(versions("mysql") == pg);
    CHECK(versions("sqlite") == pg);
}
