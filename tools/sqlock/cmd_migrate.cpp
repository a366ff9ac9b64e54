// sqlock migrate: creates or upgrades the lock tables, prints their DDL, or lists migrations.
#include "cli.hpp"
#include "command.hpp"

#include <iostream>
#include <sqlock/database.hpp>

namespace sqlock::cli {

namespace {

/// Migrates the database of `url` and says what changed.
void migrate_one(const std::string& url, sqlock::connect_options connect,
                 const sqlock::migrate_options& migrating) {
    connect.check_schema = false; // migrate is how an old schema gets current
    auto db = sqlock::connect(url, connect);
    const int before = db.schema_version();
    db.migrate(migrating);
    const int after = db.schema_version();
    if (before == after)
        std::cout << "schema is up to date (version " << after << ") in " << db.url() << "\n";
    else
        std::cout << "migrated " << db.url() << " from version " << before << " to " << after
                  << "\n";
}

} // namespace

int cmd_migrate(const options& o) {
    bool print = false;
    bool status = false;
    sqlock::migrate_options migrating;
    for (std::size_t i = 0; i < o.args.size(); ++i) {
        const auto& a = o.args[i];
        const auto value = [&]() -> const std::string& {
            if (i + 1 >= o.args.size())
                throw usage_error("migrate: " + a + " needs a duration (try 1s, 5m)");
            return o.args[++i];
        };
        if (a == "--print")
            print = true;
        else if (a == "--status")
            status = true;
        else if (a == "--wait")
            migrating.wait = duration_arg(a, value());
        else if (a == "--lock-wait")
            migrating.lock_wait = duration_arg(a, value());
        else
            throw usage_error("migrate: unknown option " + a);
    }
    if (migrating.lock_wait.count() < 1)
        throw usage_error("migrate: --lock-wait must be at least 1ms");
    if ((status || print) && o.urls.size() > 1)
        throw usage_error("migrate --status and --print take one --url");
    if (status) {
        auto connect = o.connect;
        connect.check_schema = false; // reporting versions is the point
        if (o.url.empty())
            throw usage_error("no database: pass --url URL or set SQLOCK_URL");
        auto db = sqlock::connect(o.url, connect);
        int pending = 0;
        for (const auto& m : db.migration_status()) {
            std::cout << (m.applied ? "applied  " : "pending  ") << m.name << "\n";
            pending += m.applied ? 0 : 1;
        }
        std::cout << "schema version " << db.schema_version() << ", this sqlock expects "
                  << sqlock::database::expected_schema_version(db.backend()) << " (" << pending
                  << " pending) in " << db.url() << "\n";
        return exit_ok;
    }
    if (print) {
        // Build the DDL without connecting: a DBA may not have access yet.
        std::cout << sqlock::migration_script_for(o.url, o.connect);
        return exit_ok;
    }
    if (o.url.empty())
        throw usage_error("no database: pass --url URL or set SQLOCK_URL");
    // Several --url: the members of a quorum lock, each migrated in turn.
    for (const auto& url : o.urls.size() > 1 ? o.urls : std::vector<std::string>{o.url})
        migrate_one(url, o.connect, migrating);
    return exit_ok;
}

} // namespace sqlock::cli
