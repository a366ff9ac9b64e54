// checker.hpp: verifies a torture run's history (see tools/torture/README.md, "Checks").
//
// Every rule only flags what is certainly a violation given that each timestamp was read after
// the event it records (or before, for the kinds history.hpp marks "before"), on one monotonic
// clock shared by all processes of the host.
#pragma once

#include "history.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace torture {

/// One write the fenced resource accepted, in the order it accepted them.
struct fence_entry {
    std::int64_t t_ns = 0;
    std::int64_t pid = 0;
    std::int64_t token = 0;
};

/// Everything a run left behind.
struct check_input {
    /// One entry per worker history file, each in file order.
    std::vector<std::vector<event>> workers;
    /// The harness's notes (faults, stops, run start/end), in file order.
    std::vector<event> harness;
    /// The fenced resource's accept log.
    std::vector<fence_entry> fence_log;
    /// Final value of the read-modify-write counter (nullopt: the file was never written, 0).
    std::optional<std::int64_t> counter_final;
};

struct check_params {
    std::int64_t ttl_ns = 0;
    /// Longest hold a worker may choose (liveness allows a legitimate holder to finish).
    std::int64_t max_hold_ns = 0;
    /// Extra time allowed for grants to resume after a fault: TTL + max hold + this.
    std::int64_t liveness_bound_ns = 5'000'000'000;
    /// Nemesis "none": any loss signal is a false loss and fails the run.
    bool no_fault = false;
    /// Failover faults (nemesis "failover"): a grant must be recorded within this long after
    /// each failover began (the old primary's crash); 0: not checked, only measured.
    std::int64_t resume_bound_ns = 0;
    /// The lock lives in a server session (select_for_update): a grant made before a failover
    /// died with the old primary, so its holder must hear it.
    bool lock_dies_with_server = false;
    /// The workers were leader_election electors (worker --mode leader): a term whose elector
    /// saw is_leader() turn false must also have seen its stop_token() requested (rule
    /// leader-stop).
    bool leader = false;
    /// Semaphore mode (worker --mode semaphore) with this many permits; 0: not a semaphore.
    /// The grant events carry the permit. At most `permits` grants may be certainly held at
    /// once (rule sem-count); overlap, token-dup and token-order apply per permit; fence and
    /// counter do not apply (no fenced or counter writes are made).
    std::int64_t permits = 0;
    /// Reader-writer mode (worker --mode rw): grant events carry "reader" or "writer". No
    /// grant certainly held at the same time as a writer's (rw-overlap); overlap only for
    /// writers' observations; writer tokens unique and above every grant recorded before the
    /// writer's acquire (token-dup, token-order); fence and counter for writers.
    bool rw = false;
};

struct violation {
    std::string rule; ///< overlap, counter, token-dup, token-order, fence, fence-silent, pause,
                      ///< liveness, resume, failover-own, failover-silent, leader-stop,
                      ///< sem-count, rw-overlap
    std::string message;
};

struct check_result {
    std::int64_t grants = 0;
    std::int64_t releases = 0;
    /// Grants that got any loss signal (told, on_lost, last_loss() != none).
    std::int64_t losses = 0;
    /// losses when no_fault (0 otherwise).
    std::int64_t false_losses = 0;
    std::int64_t timeouts = 0;
    std::int64_t errors = 0;
    std::int64_t fence_refused = 0;
    /// Faults injected, per nemesis (from the harness's fault notes).
    std::map<std::string, std::int64_t> faults;
    std::int64_t pauses_checked = 0;
    std::int64_t liveness_windows_checked = 0;
    /// Whether the counter rule applied (no loss at all, no writer killed mid-write).
    bool counter_checked = false;
    /// Per failover fault: from the old primary's death (its `crashed` note, else the fault's
    /// start) to the first grant after it (-1: none recorded).
    std::vector<std::int64_t> resume_ns;
    /// Grants made before a failover and released after it began (or never): held across it.
    std::int64_t failover_held = 0;
    /// Of those, the ones whose holder was told during the hold (owns_lock() false, on_lost).
    std::int64_t failover_told = 0;
    /// Semaphore mode: most grants certainly held at one instant. rw mode: most readers
    /// certainly held at one instant (shows readers did share).
    std::int64_t max_concurrent = 0;
    /// rw mode: grants taken exclusively.
    std::int64_t writers = 0;
    std::vector<violation> violations;

    /// No violation, and no false loss in no-fault mode.
    bool passed() const noexcept { return violations.empty() && false_losses == 0; }
};

/// Runs every check. Malformed input (a token event before its grant) is reported as an error
/// count, never as a violation.
check_result check(const check_input& input, const check_params& params);

/// Parses a fence log line "T_NS PID TOKEN"; nullopt when malformed.
std::optional<fence_entry> parse_fence_line(std::string_view line);

} // namespace torture
