#include "base/clock_watch.hpp"

#include <doctest/doctest.h>
#include <vector>

using namespace sqlock::detail;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

namespace {

/// Server clock readings at local time `t` (ms after `base`), taken mid-way through a round trip
/// of `rtt` ms, with the server's clock at `offset` ms from ours.
struct rig {
    steady::time_point base = steady::now();
    std::vector<std::chrono::milliseconds> reported;
    clock_watch watch{1000ms, [this](std::chrono::milliseconds s) {
                          reported.push_back(s);
                      }};

    std::optional<std::chrono::milliseconds> reply(std::int64_t t, std::int64_t offset,
                                                   std::int64_t rtt = 2) {
        const auto sent = base + std::chrono::milliseconds(t);
        const auto received = sent + std::chrono::milliseconds(rtt);
        const auto local_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                  (sent + std::chrono::milliseconds(rtt / 2)).time_since_epoch())
                                  .count();
        return watch.observe(local_ms + offset, sent, received);
    }
};

} // namespace

TEST_CASE("clock_watch: a server clock that only runs is never a step") {
    rig r;
    for (std::int64_t t = 0; t < 600'000; t += 500)
        CHECK_FALSE(r.reply(t, 123'456));
    CHECK(r.watch.seen().steps == 0);
    CHECK(r.reported.empty());
}

TEST_CASE("clock_watch: a slow reply (a wait in the server) is not a step") {
    rig r;
    CHECK_FALSE(r.reply(0, 0));
    // The server read its clock at the end of a 30 s wait: inside the round trip.
    const auto sent = r.base + 1s;
    const auto received = sent + 30s;
    const auto server =
        std::chrono::duration_cast<std::chrono::milliseconds>((received - 1ms).time_since_epoch())
            .count();
    CHECK_FALSE(r.watch.observe(server, sent, received));
    CHECK_FALSE(r.reply(32'000, 0));
}

TEST_CASE("clock_watch: forward and backward steps are reported once each, with their sign") {
    rig r;
    CHECK_FALSE(r.reply(0, 0));
    CHECK_FALSE(r.reply(500, 0));
    const auto forward = r.reply(1000, 60'000);
    REQUIRE(forward);
    CHECK(forward->count() == doctest::Approx(60'000).epsilon(0.001));
    CHECK_FALSE(r.reply(1500, 60'000)); // the new offset is the reference now
    const auto back = r.reply(2000, -5'000);
    REQUIRE(back);
    CHECK(back->count() == doctest::Approx(-65'000).epsilon(0.001));
    CHECK(r.watch.seen().steps == 2);
    CHECK(r.watch.seen().largest == *back);
    CHECK(r.watch.seen().last == *back);
    CHECK(r.reported == std::vector<std::chrono::milliseconds>{*forward, *back});
}

TEST_CASE("clock_watch: steps under the threshold and NTP-rate drift are not reported") {
    rig r;
    CHECK_FALSE(r.reply(0, 0));
    CHECK_FALSE(r.reply(1000, 900)); // 0.9 s: under the 1 s threshold
    // 0.05 % drift over an hour between two replies: 1.8 s, within the 0.1 % allowance.
    CHECK_FALSE(r.reply(1000 + 3'600'000, 900 + 1800));
    CHECK(r.watch.seen().steps == 0);
}

TEST_CASE("clock_watch: replies handled out of order still bound the offset correctly") {
    rig r;
    CHECK_FALSE(r.reply(1000, 0));
    CHECK_FALSE(r.reply(400, 0)); // an older reply, processed later: same clock, no step
    CHECK(r.reply(2000, 10'000));
}

TEST_CASE("clock_watch: a noticed step is handed out for recording once, rate-limited") {
    rig r;
    CHECK_FALSE(r.watch.take_unrecorded(10s));
    r.reply(0, 0);
    r.reply(100, 5000);
    const auto first = r.watch.take_unrecorded(10s);
    REQUIRE(first);
    CHECK(first->count() == doctest::Approx(5000).epsilon(0.001));
    CHECK_FALSE(r.watch.take_unrecorded(10s)); // taken
    r.reply(200, 0);                           // steps back
    CHECK_FALSE(r.watch.take_unrecorded(10s)); // within 10 s of the last record
    CHECK(r.watch.take_unrecorded(0ms));       // kept until it may be recorded
}
