// sqlock::leader_election on every backend: one leader at a time among threads and
// processes, increasing terms, hand-over, failover after a SIGKILL, observing, the lost signal.
#include "backend_fixture.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <sstream>
#include <thread>
#include <type_traits>
#include <unistd.h>

using namespace std::chrono_literals;
using sqlock::leader_election;
using sqlock::leader_options;
using test::db;

static_assert(!std::is_copy_constructible_v<leader_election>);
static_assert(!std::is_copy_assignable_v<leader_election>);

namespace {

leader_options lopts(std::chrono::milliseconds ttl = 30s) {
    leader_options o;
    o.ttl = ttl;
    o.retry_max = 20ms; // campaigners notice a free election quickly
    return o;
}

std::string hostname() {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    return host;
}

/// "YYYY-MM-DD HH:MM:SS.ffffff" (SQLite: milliseconds, ".fff").
bool is_db_time(const std::string& t) {
    const std::string shape = "dddd-dd-dd dd:dd:dd.";
    if (t.size() != shape.size() + 6 && t.size() != shape.size() + 3)
        return false;
    for (std::size_t i = 0; i < t.size(); ++i) {
        const char want = i < shape.size() ? shape[i] : 'd';
        if (want == 'd' ? !std::isdigit(static_cast<unsigned char>(t[i])) : t[i] != want)
            return false;
    }
    return true;
}

/// "TERM PID" lines of a log the elector helper wrote.
std::vector<std::pair<std::int64_t, long>> read_terms(const std::string& path) {
    std::vector<std::pair<std::int64_t, long>> out;
    std::ifstream in(path);
    std::int64_t term = 0;
    long pid = 0;
    while (in >> term >> pid)
        out.emplace_back(term, pid);
    return out;
}

} // namespace

TEST_SUITE("leader") {

    TEST_CASE("one leader at a time among threads; terms strictly increase") {
        const auto name = test::unique_name("leader-threads");
        constexpr int threads = 4;
        constexpr int rounds = 8;
        std::atomic<int> leaders{0};
        std::atomic<bool> overlap{false};
        std::atomic<bool> not_leader{false};
        std::mutex terms_mutex;
        std::vector<std::int64_t> terms; // in the order leadership was won
        std::vector<std::thread> pool;
        for (int t = 0; t < threads; ++t) {
            pool.emplace_back([&] {
                leader_election e(db(), name, lopts());
                for (int r = 0; r < rounds; ++r) {
                    const auto term = e.campaign();
                    if (leaders.fetch_add(1) != 0)
                        overlap = true;
                    {
                        std::lock_guard lock(terms_mutex);
                        terms.push_back(term);
                    }
                    if (!e.is_leader() || e.term() != term)
                        not_leader = true;
                    std::this_thread::sleep_for(1ms);
                    leaders.fetch_sub(1);
                    e.resign();
                    if (e.is_leader() || e.term() != 0 || !e.stop_token().stop_requested())
                        not_leader = true;
                }
            });
        }
        for (auto& t : pool)
            t.join();
        CHECK_FALSE(overlap.load());
        CHECK_FALSE(not_leader.load());
        REQUIRE(terms.size() == static_cast<std::size_t>(threads * rounds));
        CHECK(std::adjacent_find(terms.begin(), terms.end(),
                                 [](auto a, auto b) { return b <= a; }) == terms.end());
    }

    TEST_CASE("one leader at a time among processes; terms strictly increase") {
        const auto name = test::unique_name("leader-procs");
        const auto log = test::backend().scratch_dir + "/" + name + ".log";
        constexpr int processes = 3;
        constexpr int rounds = 6;
        std::vector<pid_t> pids;
        for (int p = 0; p < processes; ++p)
            pids.push_back(test::spawn({test::elector_path(), "rounds", test::backend().url, name,
                                        "30000", std::to_string(rounds), log}));
        for (const auto pid : pids)
            CHECK(test::wait_exit(pid) == 0);
        const auto terms = read_terms(log);
        REQUIRE(terms.size() == static_cast<std::size_t>(processes * rounds));
        for (std::size_t i = 1; i < terms.size(); ++i)
            CHECK(terms[i].first > terms[i - 1].first);
    }

    TEST_CASE("campaign while leading returns the term; others cannot lead meanwhile") {
        const auto name = test::unique_name("leader-again");
        leader_election a(db(), name, lopts());
        leader_election b(db(), name, lopts());
        CHECK_FALSE(a.is_leader());
        CHECK(a.term() == 0);
        CHECK_FALSE(a.stop_token().stop_possible());
        const auto term = a.campaign();
        CHECK(term > 0);
        CHECK(a.campaign() == term);
        CHECK(a.try_campaign() == term);
        CHECK(a.try_campaign_for(1s) == term);
        CHECK_FALSE(b.try_campaign());
        CHECK_FALSE(b.try_campaign_for(300ms));
        CHECK_FALSE(b.is_leader());
        // Another thread of the same elector: it leads too (the elector does), same term.
        std::optional<std::int64_t> seen;
        bool leader_there = false;
        std::thread([&] {
            seen = a.campaign();
            leader_there = a.is_leader();
        }).join();
        CHECK(seen == term);
        CHECK(leader_there);
        const auto row = test::row_of(name);
        REQUIRE(row);
        CHECK(row->hold_count == 1); // campaigns while leading do not stack holds
        a.resign();
    }

    TEST_CASE("last_loss(): none after a resign while leading, lost when resign finds it taken") {
        const auto name = test::unique_name("leader-last-loss");
        leader_election a(db(), name, lopts()); // 30 s TTL: no renewal notices it first
        a.campaign();
        a.resign();
        CHECK(a.last_loss() == sqlock::loss_reason::none);
        CHECK(a.last_error().empty());
        a.campaign();
        // Broken while this process was not looking (as after a pause past the TTL): the
        // leader only learns it when it resigns.
        REQUIRE(db().force_release(name, "leader_test").released);
        a.resign();
        CHECK(a.last_loss() == sqlock::loss_reason::lost);
        CHECK_FALSE(a.last_error().empty());
    }

    TEST_CASE("resign hands over at once, from any thread; destruction resigns") {
        const auto name = test::unique_name("leader-resign");
        leader_election a(db(), name, lopts()); // a 30 s TTL: a hand-over is not an expiry
        leader_election b(db(), name, lopts());
        const auto t1 = a.campaign();
        const auto a_stop = a.stop_token();
        std::optional<std::int64_t> t2;
        std::atomic<bool> campaigning{false};
        std::thread waiter([&] {
            campaigning = true;
            t2 = b.try_campaign_for(10s);
        });
        REQUIRE(test::eventually([&] { return campaigning.load(); }, 5s));
        const auto resigned = std::chrono::steady_clock::now();
        a.resign();
        waiter.join();
        REQUIRE(t2);
        CHECK(*t2 > t1);
        CHECK(std::chrono::steady_clock::now() - resigned < 5s);
        CHECK(a_stop.stop_requested()); // the resigned term's work is told to stop
        CHECK_FALSE(a.is_leader());
        CHECK(a.term() == 0);
        CHECK(a.last_error().empty());
        CHECK(b.is_leader()); // from this thread (b won on the waiter thread)
        CHECK(b.term() == *t2);

        // b's term is ended from this thread, which did not campaign.
        b.resign();
        CHECK_FALSE(b.is_leader());
        std::optional<std::int64_t> t3;
        {
            leader_election c(db(), name, lopts());
            t3 = c.try_campaign();
            REQUIRE(t3);
            CHECK(*t3 > *t2);
        } // destroyed while leading: resigns
        const auto t4 = a.try_campaign();
        REQUIRE(t4);
        CHECK(*t4 > *t3);
        a.resign();
    }

    TEST_CASE("leader() observes id, host, pid, term, since, expires without campaigning") {
        const auto name = test::unique_name("leader-observe");
        leader_election a(db(), name, lopts(20s));
        leader_election observer(db(), name, lopts());
        CHECK_FALSE(observer.leader()); // no row at all
        const auto term = a.campaign();
        const auto who = observer.leader();
        REQUIRE(who);
        CHECK(who->term == term);
        CHECK(who->host == hostname());
        CHECK(who->pid == getpid());
        CHECK(who->id.rfind(hostname() + ":" + std::to_string(getpid()) + ":", 0) == 0);
        CHECK(who->remaining > 15s); // 20 s TTL, just granted (database clock)
        CHECK(who->remaining <= 20s);
        CHECK(who->leading_for >= 0ms);
        CHECK(who->leading_for < 5s);
        CHECK(is_db_time(who->since));
        CHECK(is_db_time(who->expires));
        CHECK(who->since < who->expires);
        const auto row = test::row_of(name);
        REQUIRE(row);
        CHECK(who->id == row->owner);
        CHECK(who->since == row->acquired_at);
        CHECK(a.leader()->id == who->id); // the leader may ask too
        // Observing did not campaign: nothing changed, and the observer does not lead.
        CHECK_FALSE(observer.is_leader());
        CHECK(test::row_of(name)->token == term);
        CHECK(test::row_of(name)->owner == who->id);

        // A lease expired by the database clock is no leader (while the holder still thinks
        // it leads: takeover waits for a TTL of the campaigner's own clock).
        test::backdate(db(), name, 60s);
        CHECK_FALSE(observer.leader());
        CHECK(a.is_leader());
        a.resign();
        CHECK_FALSE(observer.leader()); // released: the row is free
        const auto t2 = observer.campaign();
        const auto now = observer.leader();
        REQUIRE(now);
        CHECK(now->term == t2);
        CHECK(now->id != who->id);
        CHECK(now->since >= who->since);
        observer.resign();
    }

    TEST_CASE("lost leadership requests stop and calls on_lost; a new campaign gets a new term") {
        const auto name = test::unique_name("leader-lost");
        test::lost_probe probe;
        auto o = lopts(900ms); // renewed every 300 ms
        o.on_lost = probe.callback();
        leader_election a(db(), name, o);
        const auto term = a.campaign();
        const auto stop = a.stop_token();
        CHECK_FALSE(stop.stop_requested());
        // An operator breaks the lease: the next renewal finds the token moved on.
        REQUIRE(db().force_release(name, "leader_test").released);
        REQUIRE(probe.wait(5s));
        CHECK(probe.event->token == term);
        CHECK(probe.event->name == name);
        CHECK(probe.event->reason == sqlock::loss_reason::lost);
        CHECK(test::eventually([&] { return stop.stop_requested(); }, 1s));
        CHECK_FALSE(a.is_leader());
        CHECK(a.term() == 0);
        bool elsewhere = true;
        std::thread([&] { elsewhere = a.is_leader(); }).join();
        CHECK_FALSE(elsewhere);
        a.resign(); // quietly: nothing left to give back
        CHECK(a.last_loss() == sqlock::loss_reason::lost);
        const auto again = a.try_campaign_for(5s);
        REQUIRE(again);
        CHECK(*again > term);
        CHECK(a.is_leader());
        CHECK_FALSE(a.stop_token().stop_requested()); // the new term's own token
        a.resign();
    }

    TEST_CASE("a leader killed with SIGKILL is replaced after its TTL, with a higher term") {
        const auto name = test::unique_name("leader-kill9");
        const auto term_file = test::backend().scratch_dir + "/" + name + ".term";
        const pid_t leader = test::spawn(
            {test::elector_path(), "lead", test::backend().url, name, "1000", term_file});
        REQUIRE(test::eventually([&] { return std::filesystem::exists(term_file); }, 10s));
        const auto killed_term = std::stoll(test::read_file(term_file));
        leader_election observer(db(), name, lopts());
        const auto who = observer.leader();
        REQUIRE(who);
        CHECK(who->pid == leader);
        CHECK(who->term == killed_term);

        leader_election next(db(), name, lopts(1s));
        CHECK_FALSE(next.try_campaign()); // it leads, and renews
        std::atomic<bool> campaigning{false};
        std::atomic<bool> done{false};
        std::optional<std::int64_t> term;
        std::chrono::steady_clock::time_point elected;
        std::thread campaigner([&] {
            campaigning = true;
            term = next.try_campaign_for(20s);
            elected = std::chrono::steady_clock::now();
            done = true;
        });
        REQUIRE(test::eventually([&] { return campaigning.load(); }, 5s));
        const auto killed = std::chrono::steady_clock::now();
        kill(-leader, SIGKILL);
        CHECK(test::wait_exit(leader) == 128 + SIGKILL);
        // Expired by the database clock at once (instead of waiting for it): observers say
        // "no leader" while the campaigner still waits out the TTL on its own clock.
        test::backdate(db(), name, 60s);
        if (!done) { // (unless the campaigner already won)
            const auto seen = observer.leader();
            if (!done)
                CHECK_FALSE(seen);
        }
        campaigner.join();
        REQUIRE(term);
        CHECK(*term > killed_term);
        const auto took = elected - killed;
        CHECK(took < 3s); // TTL 1 s after the last renewal, plus a poll
        const auto now = observer.leader();
        REQUIRE(now);
        CHECK(now->pid == getpid());
        CHECK(now->term == *term);
        next.resign();
    }

    TEST_CASE("sqlock leader: text, --json, exit 1 when there is no leader") {
        const auto name = test::unique_name("leader-cli");
        const auto dir = test::backend().scratch_dir;
        const auto run_cli = [&](const std::vector<std::string>& extra, const std::string& out) {
            std::vector<std::string> argv = {test::cli_path(), "leader", name};
            argv.insert(argv.end(), extra.begin(), extra.end());
            return test::wait_exit(test::spawn(argv, {"SQLOCK_URL=" + test::backend().url}, out));
        };
        CHECK(run_cli({}, dir + "/none.txt") == 1);
        CHECK(test::read_file(dir + "/none.txt").find("no leader for \"" + name + "\"") !=
              std::string::npos);
        CHECK(run_cli({"--json"}, dir + "/none.json") == 1);
        {
            const auto j = test::parse_json(test::read_file(dir + "/none.json"));
            CHECK(j["name"] == name);
            CHECK(j["leader"] == false);
            CHECK(j["term"].is_null());
            CHECK(test::keys_of(j) == std::vector<std::string>{"name", "leader", "id", "host",
                                                               "pid", "term", "since", "expires",
                                                               "remaining_ms", "leading_for_ms"});
        }

        leader_election a(db(), name, lopts(20s));
        const auto term = a.campaign();
        CHECK(run_cli({}, dir + "/leader.txt") == 0);
        const auto text = test::read_file(dir + "/leader.txt");
        CHECK(text.find(hostname() + ":" + std::to_string(getpid()) + ", term " +
                        std::to_string(term)) != std::string::npos);
        CHECK(run_cli({"--json"}, dir + "/leader.json") == 0);
        {
            const auto j = test::parse_json(test::read_file(dir + "/leader.json"));
            CHECK(j["leader"] == true);
            CHECK(j["term"] == term);
            CHECK(j["pid"] == getpid());
            CHECK(j["host"] == hostname());
            CHECK(j["id"] == test::row_of(name)->owner);
            CHECK(j["remaining_ms"].get<std::int64_t>() > 15000);
            CHECK(j["remaining_ms"].get<std::int64_t>() <= 20000);
            CHECK(is_db_time(j["since"].get<std::string>()));
            CHECK(is_db_time(j["expires"].get<std::string>()));
            CHECK(test::keys_of(j) == std::vector<std::string>{"name", "leader", "id", "host",
                                                               "pid", "term", "since", "expires",
                                                               "remaining_ms", "leading_for_ms"});
        }
        // A lease expired by the database clock: no leader, the last one is named.
        test::backdate(db(), name, 60s);
        CHECK(run_cli({}, dir + "/stale.txt") == 1);
        const auto stale = test::read_file(dir + "/stale.txt");
        CHECK(stale.find("no leader") != std::string::npos);
        CHECK(stale.find("term " + std::to_string(term) + ", stopped renewing") !=
              std::string::npos);
        a.resign();
        CHECK(run_cli({"--bogus"}, dir + "/bogus.txt") == 64);
    }

    TEST_CASE("bad input: names and options are checked when the elector is made") {
        const auto bad = [](const std::string& name, leader_options o) {
            return test::error_of([&] { leader_election e(db(), name, o); }).code();
        };
        using sqlock::errc;
        CHECK(bad("", lopts()) == errc::invalid_argument);
        CHECK(bad(std::string(sqlock::max_name_length + 1, 'x'), lopts()) ==
              errc::invalid_argument);
        CHECK(bad("ok", lopts(0ms)) == errc::invalid_argument);
        CHECK(bad("ok", lopts(-1s)) == errc::invalid_argument);
        CHECK(bad("ok", lopts(std::chrono::hours(24 * 31))) == errc::invalid_argument);
        auto o = lopts();
        o.retry_min = 0ms;
        CHECK(bad("ok", o) == errc::invalid_argument);
        o = lopts();
        o.retry_min = 50ms;
        o.retry_max = 10ms;
        CHECK(bad("ok", o) == errc::invalid_argument);
        // A name in use by a lock of another strategy is not an election (SQLite's
        // select_for_update locks are files, without a row).
        if (test::backend().kind == sqlock::backend_kind::sqlite)
            return;
        const auto name = test::unique_name("leader-fu");
        sqlock::mutex_options fu;
        fu.strategy = sqlock::strategy::select_for_update;
        sqlock::mutex m(db(), name, fu);
        m.lock();
        leader_election e(db(), name, lopts());
        CHECK(test::error_of([&] { (void)e.leader(); }).code() == errc::invalid_argument);
        m.unlock();
    }

} // TEST_SUITE leader

TEST_SUITE("common") {

    TEST_CASE("database::find() (one SELECT by name) reports the row list() reports") {
        const auto name = test::unique_name("find-one");
        CHECK_FALSE(db().find(name));
        const auto same = [&] {
            const auto found = db().find(name);
            const auto listed = test::row_of(name);
            REQUIRE(found.has_value() == listed.has_value());
            if (!found)
                return;
            CHECK(found->name == listed->name);
            CHECK(found->owner == listed->owner);
            CHECK(found->host == listed->host);
            CHECK(found->pid == listed->pid);
            CHECK(found->strategy == listed->strategy);
            CHECK(found->token == listed->token);
            CHECK(found->hold_count == listed->hold_count);
            CHECK(found->acquired_at == listed->acquired_at);
            CHECK(found->expires_at == listed->expires_at);
            CHECK(found->held() == listed->held());
        };
        sqlock::mutex m(db(), name, test::opts());
        m.lock();
        same();
        if (const auto found = db().find(name); found && found->held()) {
            // The holder, also select_for_update where shown (MariaDB: its connection only).
            if (db().backend() == sqlock::backend_kind::mysql &&
                test::strategy() == sqlock::strategy::select_for_update)
                CHECK(found->owner == "connection " + std::to_string(m.server_session_id()));
            else
                CHECK(found->pid == getpid());
        }
        m.unlock();
        same();
    }

} // TEST_SUITE common
