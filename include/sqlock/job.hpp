/// @file
/// job.hpp: sqlock::job, "once per slot" for a job that every host of a fleet fires, and the
/// run ledger that records its attempts (docs: guides/scheduled-jobs.md).
#pragma once

#include "sqlock/database.hpp"
#include "sqlock/mutex.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

namespace sqlock {

/// Shortest period a job may have (see job_options::period).
inline constexpr std::chrono::milliseconds min_job_period = std::chrono::seconds(1);
/// Longest period a job may have.
inline constexpr std::chrono::milliseconds max_job_period = std::chrono::hours(24 * 366);
/// Longest caller-named slot key, in bytes.
inline constexpr std::size_t max_slot_key_length = 255;

/// How one firing of a job ended.
enum class job_outcome {
    succeeded,   ///< this process ran the job and it succeeded: the slot is done
    failed,      ///< this process ran it and it failed: another firing of the slot may take over
    lost,        ///< this process's lock was lost while the job ran (it was asked to stop)
    abandoned,   ///< (ledger only) the runner vanished; found by a later holder of the lock
    skipped,     ///< the slot was already done by someone: the job did not run here
    not_granted, ///< another run held the lock for longer than the wait: the job did not run
};

/// "succeeded", "failed", "lost", "abandoned", "skipped", "not_granted".
std::string_view to_string(job_outcome outcome) noexcept;

/// Settings of a job.
struct job_options {
    /// The job runs successfully at most once per slot of this length. A firing belongs to
    /// the slot whose opening firing fired less than period/2 before or after it (firing
    /// times on the database clock); see docs: guides/scheduled-jobs.md, "How slots are
    /// defined". Must lie in [min_job_period, max_job_period], unless `slot` is set (then 0 is
    /// allowed and the period is only used by status and the missed-run check).
    std::chrono::milliseconds period{0};
    /// A caller-named slot ("2026-11-22", a batch id): when set, the slot is exactly this key
    /// and it is done once any attempt with this key succeeded (as long as the ledger keeps
    /// it: see reap_options::keep_history). 1..max_slot_key_length bytes, no control characters.
    std::string slot{};
    /// How long a firing waits for a run in progress elsewhere to end (and for its outcome).
    /// Default: one period (forever when period is 0). Zero: one try.
    std::optional<std::chrono::milliseconds> wait{};
    /// The lock the job runs under (lock name = job name). Must be a lease strategy
    /// (unique_key or optimistic_version): the ledger's writes are fenced by the lease.
    /// Renewal is always on; on_lost is called as for any mutex.
    mutex_options lock{};
};

/// What the callable of job::run_reporting tells about its run. A run succeeded when both
/// are 0.
struct job_report {
    int exit_status = 0; ///< like a process's exit status; non-zero = failed
    int signal = 0;      ///< the run was killed by this signal (failed)
    std::string message; ///< recorded in the ledger (truncated to 1000 bytes)
};

/// Handed to the callable while it runs.
struct job_context {
    std::int64_t token = 0; ///< the fencing token of this attempt's grant
    std::stop_token stop;   ///< stop requested when the lock is lost: end the work then
    std::string slot;       ///< the slot key this attempt runs for
};

/// The outcome of one job::run.
struct job_result {
    /// How this firing ended.
    job_outcome outcome = job_outcome::skipped;
    std::string slot;       ///< the slot decided on ("" when not granted)
    std::int64_t token = 0; ///< this firing's grant (0 when not granted)
    bool takeover = false;  ///< ran a slot in which an earlier attempt had failed
    /// skipped: who did the slot (owner id, host, pid, token of the successful attempt).
    std::string done_by_owner;
    std::string done_by_host;       ///< skipped: the host of the successful attempt
    std::int64_t done_by_pid = 0;   ///< skipped: its process id
    std::int64_t done_by_token = 0; ///< skipped: its fencing token
    int exit_status = 0;            ///< ran: as reported by the callable
    int signal = 0;                 ///< ran: the signal that killed it, as reported (0: none)
    std::string message;            ///< lost: why; failed: the callable's message
    std::chrono::milliseconds duration{0}; ///< ran: the attempt's duration on the database clock
};

/// A job that every host may fire and that succeeds at most once per slot across all of them.
///
/// run() (or run_reporting()): registers the firing at the database clock, takes the job's
/// lock (a sqlock::mutex named like the job, waiting at most options.wait for a run in
/// progress elsewhere), and under it decides:
///   - a successful attempt of the current slot exists: skip (counted in the job's row);
///   - otherwise record a new attempt (fenced by the grant's token), run the callable with the
///     token and a stop token that fires when the lock is lost, record how it ended (success
///     only while the lease is still held), then release the lock.
///
/// Attempts still marked running by an earlier holder whose lease ran out are marked
/// abandoned first. The lock is released only after the outcome is recorded, so a firing
/// that waited sees it.
///
/// Thread safety: one job object may be used by one thread at a time; use one object per
/// thread (or process) that fires.
class job {
public:
    /// Validates name (like a mutex name), period, slot key and lock options
    /// (errc::invalid_argument; select_for_update: errc::unsupported). Does not contact the
    /// database.
    job(database db, std::string name, job_options options);
    ~job();
    job(const job&) = delete;
    job& operator=(const job&) = delete;

    /// Fires the job: runs `fn(token, stop)` unless the slot is done. `fn` fails by throwing:
    /// the attempt is recorded as failed (message: what()) and the exception is rethrown after
    /// the lock was released. Returns succeeded, lost (fn returned after the lock was lost),
    /// skipped or not_granted. Throws sqlock::error when the database cannot be used (the
    /// callable has not run then, or its outcome is recorded as far as possible).
    job_result run(const std::function<void(std::int64_t token, std::stop_token stop)>& fn);

    /// The same for callables that report a status instead of throwing (the CLI runs a
    /// command with it): failed when exit_status or signal is non-zero. An exception from `fn`
    /// is recorded as failed and rethrown.
    job_result run_reporting(const std::function<job_report(const job_context&)>& fn);

    /// The job name, which is also the name of the lock it runs under.
    const std::string& name() const noexcept { return m_name; }

private:
    database m_db;
    std::string m_name;
    job_options m_options;
};

/// One attempt in the ledger. Times are ms since 1970 UTC on the database clock.
struct job_run_info {
    std::string name; ///< the job name
    /// The slot key the attempt ran for: the UTC time of the slot's opening firing (see
    /// format_utc_ms()) under the period rule, else the caller-named key.
    std::string slot{};
    std::int64_t token = 0;      ///< fencing token of the attempt's grant; unique per job name
    std::string owner;           ///< the runner's full owner id: host:pid:nonce/handle
    std::string host;            ///< the runner's host name
    std::int64_t pid = 0;        ///< the runner's process id
    std::int64_t period_ms = 0;  ///< the period the job was fired with (0: none)
    std::int64_t started_ms = 0; ///< when the attempt was recorded as started
    std::optional<std::int64_t> ended_ms;    ///< nullopt while running
    std::optional<std::int64_t> duration_ms; ///< nullopt while running
    /// As reported by the callable; nullopt while running, when the run was killed by a
    /// signal, and for an abandoned attempt.
    std::optional<int> exit_status;
    std::optional<int> signal; ///< the signal that killed the run; nullopt when there was none
    std::string outcome;       ///< "running", "succeeded", "failed", "lost", "abandoned"
    /// The callable's message, or what happened (lost, abandoned); printable ASCII (other
    /// bytes become '?'), at most 1000 bytes.
    std::string message;
};

/// One job as status, Prometheus and the missed-run check see it. Times are ms since 1970 UTC
/// on the database clock.
struct job_info {
    std::string name;           ///< the job name
    std::int64_t period_ms = 0; ///< the period of its most recent firing (0: caller-named slots)
    std::int64_t first_fired_ms = 0;   ///< when it first fired
    std::int64_t last_fired_ms = 0;    ///< when it last fired
    std::string last_outcome;          ///< of the last ended attempt ("" when none ended yet)
    std::int64_t last_started_ms = 0;  ///< start of the last ended attempt (0: none yet)
    std::int64_t last_duration_ms = 0; ///< duration of the last ended attempt, in ms
    std::int64_t last_success_started_ms = 0; ///< 0: never succeeded
    std::int64_t last_success_ended_ms = 0;   ///< end of the last success (0: never succeeded)
    /// @var succeeded
    /// Attempts that ended succeeded (these counters only grow, like Prometheus counters).
    /// @var failed
    /// Attempts that ended failed.
    /// @var lost
    /// Attempts that ended lost.
    /// @var abandoned
    /// Attempts found abandoned by a later holder of the lock.
    /// @var skipped
    /// Firings that found their slot already done (counted here, not stored in the ledger).
    std::int64_t succeeded = 0, failed = 0, lost = 0, abandoned = 0, skipped = 0;
    /// Start of an attempt in progress whose runner still holds a live lease.
    std::optional<std::int64_t> running_since_ms;
    std::int64_t now_ms = 0; ///< the database clock when this was read

    /// Time since the last successful start (nullopt: never succeeded).
    std::optional<std::chrono::milliseconds> success_age() const noexcept;
    /// The current slot is done: a success started less than one period ago (needs a period).
    bool slot_done() const noexcept;
    /// No success within 1.5 periods (counted from the first firing when there never was one).
    /// Needs a period; false without one.
    bool overdue() const noexcept;
};

/// The newest `limit` attempts of job `name`, newest first. Throws sqlock::error.
std::vector<job_run_info> job_history(database& db, std::string_view name, std::size_t limit = 20);

/// Every job that ever fired, by name. Throws sqlock::error.
std::vector<job_info> list_jobs(database& db);

/// "2026-11-22T03:00:00.123Z" for `ms` since 1970 UTC (the key of a slot the period rule opens).
std::string format_utc_ms(std::int64_t ms);

} // namespace sqlock
