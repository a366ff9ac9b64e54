// The slot rule of sqlock::job as arithmetic: the skew window, the boundary, takeover.
#include "locks/job_rule.hpp"

#include <algorithm>
#include <doctest/doctest.h>
#include <sqlock/job.hpp>
#include <vector>

using namespace sqlock::detail;

namespace {

constexpr std::int64_t hour = 3'600'000;

/// What a firing at `fire` decides, given the ledger `all` (any order): the attempts the
/// database would return (slots anchored in period_window), newest first.
slot_decision fire_at(std::int64_t fire, std::int64_t period, std::vector<past_attempt> all) {
    const auto w = period_window(fire, period);
    std::erase_if(all, [&](const past_attempt& a) {
        return a.slot_fired_ms < w.first || a.slot_fired_ms > w.last;
    });
    std::sort(all.begin(), all.end(), [](const past_attempt& a, const past_attempt& b) {
        return a.slot_fired_ms > b.slot_fired_ms;
    });
    return decide_by_period(all, fire);
}

} // namespace

TEST_CASE("the window is half the period on both sides, exclusive at its ends") {
    CHECK(skew_window_ms(hour) == hour / 2);
    CHECK(period_window(10 * hour, hour).first == 10 * hour - hour / 2 + 1);
    CHECK(period_window(10 * hour, hour).last == 10 * hour + hour / 2 - 1);
    const std::vector<past_attempt> ok{{"S", 10 * hour, true}};
    // A firing less than P/2 after a slot's anchor: the same slot.
    CHECK(fire_at(10 * hour + hour / 2 - 1, hour, ok).done);
    // Exactly P/2 after: the next slot.
    CHECK_FALSE(fire_at(10 * hour + hour / 2, hour, ok).done);
    // A firing before the anchor (a host whose clock is behind fired first but got the lock
    // later) is in the slot while less than P/2 before it, not at P/2.
    CHECK(fire_at(10 * hour - hour / 2 + 1, hour, ok).done);
    CHECK_FALSE(fire_at(10 * hour - hour / 2, hour, ok).done);
}

TEST_CASE("a daily job across midnight with 1 s of skew is one slot, the next day another") {
    const std::int64_t day = 24 * hour;
    const std::int64_t midnight = 20'000 * day;
    // Host A fires at 23:59:59.5 and runs; host B fires at 00:00:00.5 (aligned windows would
    // give two slots here).
    const std::vector<past_attempt> a{
        {sqlock::format_utc_ms(midnight - 500), midnight - 500, true}};
    const auto b = fire_at(midnight + 500, day, a);
    CHECK(b.done);
    CHECK(b.slot == a[0].slot);
    CHECK(b.slot == "2024-10-03T23:59:59.500Z"); // the opener's time
    // The next night, both hosts run once again: a new slot for the first, done for the second.
    const auto next = fire_at(midnight + day - 500, day, a);
    CHECK_FALSE(next.done);
    CHECK_FALSE(next.takeover);
    CHECK(next.slot == sqlock::format_utc_ms(midnight + day - 500));
}

TEST_CASE("skew below P/2 is one slot for every firing; the next period is a new slot") {
    const std::int64_t period = 10'000;
    for (const std::int64_t skew : {0L, 1L, 2'000L, 4'999L}) {
        CAPTURE(skew);
        // The first firing of the slot opens it and succeeds at its firing time.
        const std::vector<past_attempt> ledger{{"S", 100'000, true}};
        CHECK(fire_at(100'000 + skew, period, ledger).done);
        // The earliest firing of the next slot (one period later, skew early) is not covered.
        CHECK_FALSE(fire_at(100'000 + period - skew, period, ledger).done);
    }
}

TEST_CASE("failed attempts in the window are taken over in their slot; success wins") {
    const std::vector<past_attempt> failed{{"S", 1'000, false}, {"R", 900, false}};
    const auto d = decide_by_period(failed, 1'500);
    CHECK_FALSE(d.done);
    CHECK(d.takeover);
    CHECK(d.slot == "S"); // the newest attempt's slot
    const std::vector<past_attempt> mixed{{"S", 1'000, false}, {"S", 950, true}};
    const auto m = decide_by_period(mixed, 1'500);
    CHECK(m.done);
    CHECK(m.matched == 1);
    const auto fresh = decide_by_period({}, 1'795'384'863'703);
    CHECK_FALSE(fresh.done);
    CHECK_FALSE(fresh.takeover);
    CHECK(fresh.slot == "2026-11-22T22:01:03.703Z");
}

TEST_CASE("waiting never moves a firing into another slot") {
    const std::int64_t period = 4'000;
    // Slot A anchored at 100 s failed and was taken over late (a crashed runner's lease); a
    // takeover carries the anchor, so the next period's earliest firing is a new slot.
    const std::vector<past_attempt> late{{"A", 100'000, true}, {"A", 100'000, false}};
    CHECK_FALSE(fire_at(100'000 + period - 1'600, period, late).done);
    CHECK(fire_at(101'500, period, late).done);
    // The torture run's case: a firing of slot A (at 101.5 s) waits behind killed runners while
    // slot B opens (anchored at 104 s, a next-period firing that got the lock first) and fails.
    // Holding the lock at last, the slot-A firing must take over A, not B.
    const std::vector<past_attempt> overtaken{{"B", 104'000, false}, {"A", 100'000, false}};
    const auto d = fire_at(101'500, period, overtaken);
    CHECK(d.takeover);
    CHECK(d.slot == "A");
    CHECK(d.slot_fired_ms == 100'000);
    // A run longer than its period: the next slot's firing, served after it, opens its own.
    const std::vector<past_attempt> overrun{{"A", 100'000, true}};
    const auto next = fire_at(104'200, period, overrun);
    CHECK_FALSE(next.done);
    CHECK_FALSE(next.takeover);
    CHECK(next.slot_fired_ms == 104'200);
}

TEST_CASE("caller-named slots: done once any attempt with the key succeeded") {
    CHECK_FALSE(decide_by_key({}, "k", 7).done);
    CHECK_FALSE(decide_by_key({}, "k", 7).takeover);
    const std::vector<past_attempt> failed{{"k", 5, false}};
    CHECK(decide_by_key(failed, "k", 7).takeover);
    const std::vector<past_attempt> done{{"k", 5, false}, {"k", 3, true}};
    CHECK(decide_by_key(done, "k", 7).done);
    CHECK(decide_by_key(done, "k", 7).slot == "k");
}

TEST_CASE("format_utc_ms") {
    CHECK(sqlock::format_utc_ms(0) == "1970-01-01T00:00:00.000Z");
    CHECK(sqlock::format_utc_ms(1'795'384'863'703) == "2026-11-22T22:01:03.703Z");
    CHECK(sqlock::format_utc_ms(-1) == "1969-12-31T23:59:59.999Z");
}
