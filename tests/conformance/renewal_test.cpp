// Renewal and the lost signal (every strategy, every backend).
#include "backend_fixture.hpp"
#include "database/database_impl.hpp"
#include "tcp_relay.hpp"

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <signal.h>
#include <sstream>
#include <thread>

using namespace std::chrono_literals;
using sqlock::mutex;
using test::db;
using test::lost_probe;
using test::paused_server;
using test::unique_name;

namespace {

bool lease_strategy() {
    return test::strategy() != sqlock::strategy::select_for_update;
}

/// A holder's database whose connections go through a relay the test can freeze (a partition
/// of its host alone), and lock options with renewal on and a lost probe.
struct relayed_holder {
    explicit relayed_holder(std::chrono::milliseconds ttl) : options(test::opts(ttl)) {
        options.renew = true;
        options.on_lost = lost.callback();
    }
    test::tcp_relay relay{test::server_port()};
    sqlock::database cut_off = sqlock::connect(relay.relayed(test::backend().url));
    lost_probe lost;
    sqlock::mutex_options options;
};

} // namespace

TEST_SUITE("common") {

    TEST_CASE("with renewal on, a holder keeps its lock for 6 x TTL and nobody else gets it") {
        // A 1 s lease, renewed every 333 ms: a 300 ms one's renewals came later than its local
        // end under ASan on a loaded host, and the library rightly reported it lost.
        const auto name = unique_name("renewed");
        auto options = test::opts(1s);
        options.renew = true;
        lost_probe probe;
        options.on_lost = probe.callback();
        mutex holder(db(), name, options);
        holder.lock();
        const auto token = holder.token();

        std::atomic<bool> other_got_it{false};
        std::thread other([&] {
            mutex contender(db(), name, test::opts(1s));
            if (contender.try_lock_for(6s)) { // 6 x TTL
                other_got_it = true;
                contender.unlock();
            }
        });
        std::set<std::string> expiries; // lease strategies: the row's expiry moves with renewals
        const auto end = std::chrono::steady_clock::now() + 6s;
        bool held_throughout = true;
        while (std::chrono::steady_clock::now() < end) {
            held_throughout = held_throughout && holder.owns_lock();
            if (lease_strategy())
                if (const auto row = test::row_of(name))
                    expiries.insert(row->expires_at);
            std::this_thread::sleep_for(50ms); // sampling the row, not synchronising
        }
        other.join();
        CHECK(held_throughout);
        CHECK_FALSE(other_got_it.load());
        CHECK_FALSE(probe.event.has_value());
        CHECK(holder.token() == token);
        CHECK(holder.lost_reason() == sqlock::loss_reason::none);
        if (lease_strategy())
            CHECK(expiries.size() >= 6); // renewed about every 333 ms for 6 s
        holder.unlock();
        CHECK(holder.last_error().empty());
    }

    TEST_CASE("without renewal, the lost signal fires at the lease's local end") {
        const auto name = unique_name("no-renew");
        auto options = test::opts(400ms);
        lost_probe probe;
        options.on_lost = probe.callback();
        mutex holder(db(), name, options);
        const auto before_lock = std::chrono::steady_clock::now();
        holder.lock();
        const auto started = std::chrono::steady_clock::now();
        const auto token_stop = holder.stop_token();
        CHECK(token_stop.stop_possible());
        CHECK_FALSE(token_stop.stop_requested());
        REQUIRE(probe.wait(3s));
        // The local end is the acquire's send time (between before_lock and started) + ttl -
        // margin (360 ms): never after the database's lease end, never before the local end.
        CHECK(probe.at - started <= 400ms);
        CHECK(probe.at - before_lock >= 360ms);
        CHECK(probe.event->reason == sqlock::loss_reason::lost);
        CHECK(probe.event->name == name);
        CHECK(token_stop.stop_requested());
        CHECK_FALSE(holder.owns_lock());
        CHECK(holder.lost_reason() == sqlock::loss_reason::lost);
        holder.unlock(); // never throws
    }

    TEST_CASE("renewal refused (the lease was taken or the session killed): lost fires") {
        const auto name = unique_name("refused");
        auto options = test::opts(600ms);
        options.renew = true;
        lost_probe probe;
        options.on_lost = probe.callback();
        mutex holder(db(), name, options);
        holder.lock();
        if (lease_strategy()) {
            // Someone rewrote the row (an operator's force-release, say): renewals now match
            // nothing.
            test::exec_sql(db(), "UPDATE " + db().table_prefix() + "locks SET owner = 'intruder' " +
                                     "WHERE name = '" + name + "'");
        } else if (test::backend().kind != sqlock::backend_kind::sqlite) {
            test::kill_session(db(), holder.server_session_id());
        } else {
            return; // SQLite select_for_update has no session to kill (see select_for_update tests)
        }
        REQUIRE(probe.wait(3s));
        CHECK(probe.event->reason == sqlock::loss_reason::lost);
        CHECK_FALSE(holder.owns_lock());
        CHECK_THROWS_AS(holder.lock(), sqlock::error); // re-entry never resurrects it
        holder.unlock();
    }

    TEST_CASE(
        "server paused: lost (unknown) fires by the local deadline, before anyone else gets it") {
        if (test::backend().kind == sqlock::backend_kind::sqlite) {
            if (!lease_strategy())
                return; // the lock file is this process's own: nothing outside can stall it
            // No server to pause: block every write with another connection's write transaction.
            const auto name = unique_name("blocked");
            auto options = test::opts(500ms);
            options.renew = true;
            lost_probe probe;
            options.on_lost = probe.callback();
            mutex holder(db(), name, options);
            holder.lock();
            const auto locked_at = std::chrono::steady_clock::now();
            auto blocker = sqlock::detail::impl_of(db()).checkout();
            blocker->begin(); // BEGIN IMMEDIATE: renewals now wait for the write lock
            const bool fired = probe.wait(3s);
            blocker->rollback();
            REQUIRE(fired);
            CHECK(probe.at - locked_at <= 500ms);
            holder.unlock();
            return;
        }
        const auto name = unique_name("paused");
        auto options = test::opts(1s);
        options.renew = true;
        lost_probe probe;
        options.on_lost = probe.callback();
        mutex holder(db(), name, options);
        holder.lock();
        bool fired = false;
        std::chrono::steady_clock::time_point paused_at;
        {
            paused_server pause; // renewals went through until now (stopping takes a while
            paused_at = std::chrono::steady_clock::now(); // on a busy machine)
            fired = probe.wait(3s);
        }
        REQUIRE(fired);
        // No later than the lease's local end: at most a TTL after the last renewal that got
        // through, which was sent before the server stopped.
        CHECK(probe.at - paused_at <= 1s);
        CHECK(probe.event->reason == sqlock::loss_reason::unknown);
        CHECK_FALSE(holder.owns_lock());

        mutex next(db(), name, test::opts(1s));
        REQUIRE(next.try_lock_for(10s));
        CHECK(std::chrono::steady_clock::now() > probe.at); // the loss was known first
        next.unlock();
        holder.unlock();
    }

} // TEST_SUITE

TEST_SUITE("cut_off") { // servers, every strategy

    TEST_CASE("renewals that go unanswered: on_at_risk gives the lease's local end before it "
              "is lost, and says so again when a renewal gets through") {
        // The holder's connections go through a relay that stops passing anything (a
        // partition of its host alone), then passes again before the lease's local end.
        relayed_holder h(3s);
        auto& [relay, cut_off, lost, options] = h;
        const auto name = unique_name("at-risk");
        std::mutex m;
        std::condition_variable cv;
        std::vector<std::pair<sqlock::lock_at_risk_event, std::chrono::steady_clock::time_point>>
            told;
        options.on_at_risk = [&](const sqlock::lock_at_risk_event& event) {
            std::lock_guard lock(m);
            told.emplace_back(event, std::chrono::steady_clock::now());
            cv.notify_all();
        };
        mutex holder(cut_off, name, options);
        const auto before_lock = std::chrono::steady_clock::now();
        holder.lock();
        const auto token = holder.token();
        relay.freeze();
        const auto frozen_at = std::chrono::steady_clock::now();
        {
            std::unique_lock lock(m);
            REQUIRE(cv.wait_for(lock, 5s, [&] { return !told.empty(); }));
            const auto& [event, at] = told.front();
            CHECK(event.at_risk);
            CHECK(event.name == name);
            CHECK(event.token == token);
            // Renewed every second at most; at risk once half the TTL (1.5 s) is left without
            // one: told at about lease_end - 1.5 s, with that much time to act on it.
            CHECK(event.lease_end - at >= 1000ms);
            CHECK(event.lease_end - at <= 1550ms);
            CHECK(event.lease_end <= before_lock + 3s + 3s); // at most a lease past the freeze
            CHECK(at - frozen_at <= 2s);
        }
        CHECK_FALSE(lost.event.has_value());
        CHECK(holder.owns_lock());
        relay.thaw();
        {
            std::unique_lock lock(m);
            REQUIRE(cv.wait_for(lock, 5s, [&] { return told.size() >= 2; }));
            CHECK_FALSE(told[1].first.at_risk);
            CHECK(told[1].first.lease_end > told[0].first.lease_end);
        }
        CHECK(holder.owns_lock());
        CHECK_FALSE(lost.event.has_value());
        holder.unlock();
        CHECK(told.size() == 2);
    }

    TEST_CASE("renewals that go unanswered past the lease: at risk first, then lost") {
        relayed_holder h(2s);
        auto& [relay, cut_off, lost, options] = h;
        const auto name = unique_name("at-risk-lost");
        std::atomic<int> at_risk_calls{0};
        std::atomic<bool> lost_before_risk{false};
        options.on_at_risk = [&](const sqlock::lock_at_risk_event& event) {
            if (event.at_risk)
                ++at_risk_calls;
            std::lock_guard lock(lost.m);
            if (lost.event)
                lost_before_risk = true;
        };
        mutex holder(cut_off, name, options);
        holder.lock();
        relay.freeze();
        REQUIRE(lost.wait(5s));
        CHECK(at_risk_calls == 1);
        CHECK_FALSE(lost_before_risk);
        CHECK_FALSE(holder.owns_lock());
        relay.thaw();
        holder.unlock(); // never throws
    }

    TEST_CASE("a release that waits past the lease's local end (a failover, a hung server) is "
              "no loss: the holder's work was done before it") {
        // `sqlock run` whose command had finished exited 76 ("lost while the command ran")
        // when its release waited through a PostgreSQL failover and the watchdog called the
        // lease's end a loss.
        relayed_holder h(2s);
        auto& [relay, cut_off, lost, options] = h;
        const auto name = unique_name("slow-release");
        std::atomic<int> at_risk_calls{0};
        options.on_at_risk = [&](const sqlock::lock_at_risk_event& event) {
            if (event.at_risk)
                ++at_risk_calls;
        };
        mutex holder(cut_off, name, options);
        holder.lock();
        relay.freeze();
        // The lease's local end is under 2 s away: the release is held up well past it.
        std::atomic<bool> lost_while_releasing{false};
        std::thread thawer([&] {
            std::this_thread::sleep_for(3500ms);
            std::lock_guard lock(lost.m);
            lost_while_releasing = lost.event.has_value();
            relay.thaw();
        });
        const auto unlock_started = std::chrono::steady_clock::now();
        holder.unlock(); // never throws
        const auto unlock_took = std::chrono::steady_clock::now() - unlock_started;
        thawer.join();
        CHECK(unlock_took >= 2s); // the release did wait past the lease's local end
        CHECK_FALSE(lost_while_releasing);
        CHECK_FALSE(lost.event.has_value());
        CHECK(at_risk_calls == 0);
        if (lease_strategy())
            CHECK_MESSAGE(holder.last_loss() == sqlock::loss_reason::none, holder.last_error());
        // select_for_update: a COMMIT held up past the TTL lets the server's idle timer end
        // the session, which looks the same as a session killed before the release (found
        // only by it): reported lost at release, when in doubt, though on_lost stays quiet.

        mutex next(db(), name, test::opts(2s));
        CHECK(next.try_lock_for(5s)); // given back, or its lease ended
        next.unlock();
    }
}
