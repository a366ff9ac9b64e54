// Internal: the slot rule of sqlock::job, as pure arithmetic on database-clock milliseconds
// (unit-tested without a database; README "How slots are defined" is its user-facing text).
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace sqlock::detail {

/// An earlier attempt of the job, as the ledger has it.
struct past_attempt {
    std::string slot;
    std::int64_t slot_started_ms = 0; ///< when its slot's first attempt started
    bool succeeded = false;
};

/// What a firing does once it holds the job's lock.
struct slot_decision {
    bool done = false;     ///< a successful attempt of this slot exists: skip
    bool takeover = false; ///< no success, but earlier attempts of this slot failed: run again
    std::string slot;      ///< the slot this firing belongs to
    /// The slot's start: inherited from its earlier attempts; the decision's time for a new slot.
    std::int64_t slot_started_ms = 0;
    std::size_t matched = 0; ///< index into the attempts of the success (done)
};

/// The skew window of a period: a firing is in the slot of an attempt that started less than
/// this long before it (or after it). Half the period: see period_window_start.
constexpr std::int64_t skew_window_ms(std::int64_t period_ms) noexcept {
    return period_ms / 2;
}

/// The earliest slot start (inclusive) of an attempt that shares a slot with a firing at
/// `fire_ms`: fire_ms - period/2 + 1. A slot is anchored at its first attempt's start, which
/// takeovers inherit (a late takeover does not move the slot into the next period). Why half
/// the period: the firings of one slot spread over less than W (the skew); the slot's start
/// s is at or after its earliest firing, so it must cover every later firing of the slot
/// (s > fire - W, so W > skew), and must not cover the earliest firing of the next slot, one
/// period after the first (s <= next fire - W, so W <= period - skew). W = period/2 tolerates
/// the largest skew on both sides: any skew below period/2.
constexpr std::int64_t period_window_start(std::int64_t fire_ms, std::int64_t period_ms) noexcept {
    return fire_ms - skew_window_ms(period_ms) + 1;
}

/// The period rule. `attempts`: the job's attempts whose slot started at or after
/// period_window_start(fire_ms, period), newest first, none still running. A success among
/// them: done (its slot). Otherwise the newest attempt's slot is taken over (its start
/// inherited). Otherwise a new slot opens at `now_ms` (the decision's database time), keyed by
/// that time in UTC.
slot_decision decide_by_period(std::span<const past_attempt> attempts, std::int64_t now_ms);

/// The caller-named slot rule: `attempts` are those with slot key `key`, newest first. Done once
/// any of them succeeded; otherwise run (a takeover when there are failed ones).
slot_decision decide_by_key(std::span<const past_attempt> attempts, const std::string& key,
                            std::int64_t now_ms);

} // namespace sqlock::detail
