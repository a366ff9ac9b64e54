// What sqlock finds out about the server at connect (DESIGN §9): host lists that follow the
// primary, read-only servers refused, the topology a handle reports. Replicated setups (a
// standby, Galera, PgBouncer) are tested against real clusters in replication_test.cpp.
#include "backend_fixture.hpp"

#include <unistd.h>

using sqlock::errc;
using test::db;
using test::error_of;

namespace {

/// The test server's URL split around its host:port: {"scheme://user:pw@", "host:port", "/db..."}.
struct url_parts {
    std::string head, hostport, tail;
};
url_parts split_url(const std::string& url) {
    const auto at = url.find('@');
    const auto slash = url.find('/', at);
    return {url.substr(0, at + 1), url.substr(at + 1, slash - at - 1), url.substr(slash)};
}

} // namespace

TEST_SUITE("topology") {

    TEST_CASE("a single server reports no replicas and no warnings") {
        const auto t = db().topology();
        CHECK_FALSE(t.server.empty());
        CHECK(t.replicas == 0);
        CHECK_FALSE(t.synchronous);
        CHECK(t.cluster_nodes == 1);
        CHECK(t.warnings.empty());
    }
}

TEST_SUITE("topology_server") {

    TEST_CASE("a URL listing a dead host first connects to the live one and locks there") {
        const auto parts = split_url(test::backend().url);
        const auto url = parts.head + "127.0.0.1:" + std::to_string(test::dead_port()) + "," +
                         parts.hostport + parts.tail;
        sqlock::connect_options o;
        o.connect_timeout = std::chrono::seconds(3);
        auto listed = sqlock::connect(url, o);
        const auto name = test::unique_name("multi-host");
        sqlock::mutex m(listed, name, test::opts());
        REQUIRE(m.try_lock());
        CHECK(m.token() > 0);
        CHECK(test::row_of(name).has_value()); // the same server the other tests use
        m.unlock();
        CHECK(listed.topology().server.find(parts.hostport.substr(parts.hostport.rfind(':'))) !=
              std::string::npos);
    }

    TEST_CASE("a URL whose hosts are all down is a retryable connection error naming each") {
        const auto parts = split_url(test::backend().url);
        const int a = test::dead_port();
        const int b = test::dead_port();
        const auto url = parts.head + "127.0.0.1:" + std::to_string(a) +
                         ",127.0.0.1:" + std::to_string(b) + parts.tail;
        sqlock::connect_options o;
        o.connect_timeout = std::chrono::seconds(2);
        const auto e = error_of([&] { sqlock::connect(url, o); });
        CHECK(e.code() == errc::connection);
        CHECK(e.retryable());
        const std::string what = e.what();
        CHECK(what.find(std::to_string(a)) != std::string::npos);
        if (a != b)
            CHECK(what.find(std::to_string(b)) != std::string::npos);
        CHECK(what.find(parts.head.substr(parts.head.find(':', 12) + 1,
                                          parts.head.size() - parts.head.find(':', 12) - 2)) ==
              std::string::npos); // no password
    }
}

TEST_SUITE("topology_server") {

    TEST_CASE("sqlock run --wait rides out a host list with no host up, not a single dead host") {
        using clock_type = std::chrono::steady_clock;
        const auto parts = split_url(test::backend().url);
        const auto run_cli = [&](const std::string& hosts, const std::string& wait,
                                 const std::string& err) {
            const auto name = test::unique_name("cli-hosts");
            return test::spawn({test::cli_path(), "run", name, "--wait", wait, "--", "/bin/true"},
                               {"SQLOCK_URL=" + parts.head + hosts + parts.tail}, {}, err);
        };
        const auto dead = [] {
            return "127.0.0.1:" + std::to_string(test::dead_port());
        };
        const auto scratch = test::backend().scratch_dir;

        // Several hosts, none accepting connections (a failover in progress looks so):
        // waited out until --wait's end, then "not granted" (75), saying why.
        auto started = clock_type::now();
        pid_t p = run_cli(dead() + "," + dead(), "1500ms", scratch + "/hosts-down.err");
        CHECK(test::wait_exit(p) == 75);
        CHECK(clock_type::now() - started >= std::chrono::milliseconds(1400));
        const auto text = test::read_file(scratch + "/hosts-down.err");
        CAPTURE(text);
        CHECK(text.find("no host of the URL accepted writes") != std::string::npos);

        // One host that refuses: a wrong URL, reported at once (69).
        started = clock_type::now();
        p = run_cli(dead(), "10s", scratch + "/host-down.err");
        CHECK(test::wait_exit(p) == 69);
        CHECK(clock_type::now() - started < std::chrono::seconds(3));

        // And a host list whose live host answers is granted at once.
        p = run_cli(dead() + "," + parts.hostport, "10s", scratch + "/host-up.err");
        CHECK(test::wait_exit(p) == 0);
    }
}

TEST_SUITE("topology_postgresql") {

    TEST_CASE("a read-only server is refused with errc::topology saying what to do") {
        // A database whose sessions are read-only stands in for a hot standby: libpq
        // (target_session_attrs=read-write) and sqlock's own check both see a server that
        // does not accept writes. Real standbys: replication_test.cpp.
        const auto ro_db = "sqlock_ro_" + std::to_string(getpid());
        test::exec_sql(db(), "DROP DATABASE IF EXISTS " + ro_db);
        test::exec_sql(db(), "CREATE DATABASE " + ro_db);
        test::exec_sql(db(), "ALTER DATABASE " + ro_db + " SET default_transaction_read_only = on");
        const auto parts = split_url(test::backend().url);
        for (const std::string options : {"", "?target_session_attrs=any"}) {
            CAPTURE(options);
            const auto e = error_of(
                [&] { sqlock::connect(parts.head + parts.hostport + "/" + ro_db + options); });
            CHECK(e.code() == errc::topology);
            CHECK_FALSE(e.retryable());
            const std::string what = e.what();
            CHECK(what.find("read-only standby") != std::string::npos);
            CHECK(what.find("host1:port,host2:port") != std::string::npos);
            CHECK(what.find(":***@") != std::string::npos);
        }
        test::exec_sql(db(), "DROP DATABASE " + ro_db);
    }
}
