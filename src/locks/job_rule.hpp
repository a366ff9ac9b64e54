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
    std::int64_t slot_fired_ms = 0; ///< its slot's anchor: when the slot's opening firing fired
    bool succeeded = false;
};

/// What a firing does once it holds the job's lock.
struct slot_decision {
    bool done = false;     ///< a successful attempt of this slot exists: skip
    bool takeover = false; ///< no success, but earlier attempts of this slot failed: run again
    std::string slot;      ///< the slot this firing belongs to
    /// The slot's anchor: inherited from its earlier attempts; the firing's own time for a
    /// new slot.
    std::int64_t slot_fired_ms = 0;
    std::size_t matched = 0; ///< index into the attempts of the success (done)
};

/// The skew window of a period: a firing belongs to a slot whose anchor (the time its opening
/// firing fired) lies less than this far from it, before or after.
constexpr std::int64_t skew_window_ms(std::int64_t period_ms) noexcept {
    return period_ms / 2;
}

/// The anchors [first, last] (inclusive) of slots a firing at `fire_ms` may belong to:
/// fire_ms -/+ (period/2 - 1). Why anchors and why half the period: every firing of one slot
/// fires within the skew s of the slot's opening firing, whatever it then waits for (a run in
/// progress, a crashed runner's lease, another host that won the lock), so |anchor - fire| <= s;
/// the previous and next slots' anchors are at least period - s away. A window of period/2
/// separates the two for any s < period/2. Anchoring at start times instead would let waiting
/// (an overrun, a takeover after a crash, a next-period firing that overtook this one in the
/// lock queue) move a firing into the wrong slot.
struct anchor_window {
    std::int64_t first;
    std::int64_t last;
};
constexpr anchor_window period_window(std::int64_t fire_ms, std::int64_t period_ms) noexcept {
    const auto w = skew_window_ms(period_ms) - 1;
    return {fire_ms - w, fire_ms + w};
}

/// The period rule. `attempts`: the job's attempts whose slot anchor lies in
/// period_window(fire_ms, period), newest first, none still running. A success among them: done
/// (its slot). Otherwise the newest attempt's slot is taken over (its anchor inherited).
/// Otherwise a new slot opens, anchored at `fire_ms` and keyed by that time in UTC.
slot_decision decide_by_period(std::span<const past_attempt> attempts, std::int64_t fire_ms);

/// The caller-named slot rule: `attempts` are those with slot key `key`, newest first. Done once
/// any of them succeeded; otherwise run (a takeover when there are failed ones).
slot_decision decide_by_key(std::span<const past_attempt> attempts, const std::string& key,
                            std::int64_t fire_ms);

} // namespace sqlock::detail
