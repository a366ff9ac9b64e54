// sqlock::job: once per slot, on top of sqlock::mutex (lease, renewal, lost signal, fencing),
// with every attempt recorded in the run ledger.
#include "sqlock/job.hpp"

#include "base/owner.hpp"
#include "base/rows.hpp"
#include "database/database_impl.hpp"
#include "locks/job_rule.hpp"
#include "sqlock/error.hpp"

#include <cstdio>
#include <ctime>
#include <exception>

namespace sqlock {

std::string_view to_string(job_outcome outcome) noexcept {
    switch (outcome) {
    case job_outcome::succeeded:
        return "succeeded";
    case job_outcome::failed:
        return "failed";
    case job_outcome::lost:
        return "lost";
    case job_outcome::abandoned:
        return "abandoned";
    case job_outcome::skipped:
        return "skipped";
    case job_outcome::not_granted:
        return "not_granted";
    }
    return "unknown";
}

std::string format_utc_ms(std::int64_t ms) {
    // Floor division, so times before 1970 still format (they never occur on a sane clock).
    std::int64_t secs = ms / 1000;
    std::int64_t rem = ms % 1000;
    if (rem < 0) {
        rem += 1000;
        --secs;
    }
    const auto t = static_cast<std::time_t>(secs);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[96]; // room for any int fields, so GCC sees no truncation
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<int>(rem));
    return buf;
}

namespace detail {

slot_decision decide_by_period(std::span<const past_attempt> attempts, std::int64_t fire_ms) {
    slot_decision d;
    for (std::size_t i = 0; i < attempts.size(); ++i) {
        if (attempts[i].succeeded) {
            d.done = true;
            d.slot = attempts[i].slot;
            d.matched = i;
            return d;
        }
    }
    if (!attempts.empty()) {
        // Failed, lost or abandoned within the window: the same slot, not yet done.
        d.takeover = true;
        d.slot = attempts.front().slot;
        d.slot_fired_ms = attempts.front().slot_fired_ms;
        return d;
    }
    d.slot = format_utc_ms(fire_ms);
    d.slot_fired_ms = fire_ms;
    return d;
}

slot_decision decide_by_key(std::span<const past_attempt> attempts, const std::string& key,
                            std::int64_t fire_ms) {
    slot_decision d;
    d.slot = key;
    d.slot_fired_ms = fire_ms;
    for (std::size_t i = 0; i < attempts.size(); ++i) {
        if (attempts[i].succeeded) {
            d.done = true;
            d.matched = i;
            return d;
        }
    }
    d.takeover = !attempts.empty();
    if (d.takeover)
        d.slot_fired_ms = attempts.back().slot_fired_ms; // the key's first attempt
    return d;
}

} // namespace detail

namespace {

using detail::statement;

/// Ledger messages: printable ASCII only (every backend's column takes it), bounded.
std::string ledger_message(std::string_view text) {
    std::string out;
    for (const char c : text.substr(0, 1000))
        out += (c >= 0x20 && c < 0x7f) ? c : '?';
    return out;
}

void validate_slot_key(const std::string& key) {
    if (key.size() > max_slot_key_length)
        throw error(errc::invalid_argument, "slot key is " + std::to_string(key.size()) +
                                                " bytes; the limit is " +
                                                std::to_string(max_slot_key_length));
    for (const char c : key)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
            throw error(errc::invalid_argument, "slot key must not contain control characters");
}

struct ended_attempt {
    bool recorded = false;
    std::int64_t duration_ms = 0;
};

/// Records how attempt (name, token) ended and counts it in the job's row, inside the caller's
/// transaction. Only a running attempt changes; `fenced`: only while the lease is still held.
ended_attempt record_end(detail::session& s, std::string_view name, std::int64_t token,
                         std::string_view outcome, detail::param exit_status, detail::param signal,
                         std::string_view message, bool fenced) {
    ended_attempt out;
    const auto changed = s.execute(fenced ? statement::job_finish_fenced : statement::job_finish,
                                   {name, token, outcome, exit_status, signal, message})
                             .affected_rows;
    if (changed != 1)
        return out;
    const auto run =
        detail::decode_first<detail::job_run_row>(s.execute(statement::job_run_get, {name, token}));
    if (!run)
        return out;
    out.duration_ms = run->duration_ms;
    s.execute(statement::job_count,
              {name, outcome, run->started_ms, out.duration_ms, run->ended_ms});
    out.recorded = true;
    return out;
}

/// One firing of a job: what the steps of job::run_reporting share.
struct firing {
    std::string_view name;
    const job_options& options;
    std::int64_t period_ms = 0; ///< 0: caller-named slots
    /// When it fired, on the database clock: this decides its slot (and anchors a slot it
    /// opens), so a host that then waits for another's run still belongs to the slot it
    /// fired in.
    std::int64_t fire_ms = 0;
};

/// Creates or refreshes the job's row, and reads the database clock: the firing's time.
std::int64_t fire_on_database_clock(detail::database_impl& db, std::string_view name,
                                    std::int64_t period_ms) {
    db.run(statement::job_touch, {name, period_ms});
    return detail::decode_single<detail::job_now_row>(db.run(statement::job_now, {})).now_ms;
}

/// Waits for the job's lock as long as `options` say: their wait, else one period, else
/// (caller-named slots) for as long as it takes. Returns whether it was granted.
bool take_job_lock(mutex& m, const job_options& options) {
    using std::chrono::milliseconds;
    const auto wait = options.wait                 ? *options.wait
                      : options.period.count() > 0 ? options.period
                                                   : milliseconds::max();
    return wait == milliseconds::max() ? (m.lock(), true)
           : wait.count() == 0         ? m.try_lock()
                                       : m.try_lock_for(wait);
}

/// Attempts of the job still marked running under a grant older than `token` are over (their
/// runner's lease ran out before it recorded an outcome): records them as abandoned, inside
/// the caller's transaction.
void abandon_stale_attempts(detail::session& s, std::string_view name, std::int64_t token) {
    for (const auto& stale :
         detail::decode_rows<detail::token_row>(s.execute(statement::job_stale, {name, token})))
        record_end(s, name, stale.token, "abandoned", nullptr, nullptr,
                   "the runner's lease ran out before it recorded an outcome "
                   "(crashed, killed or cut off)",
                   false);
}

/// The attempts the slot rule weighs, newest first: those of slots anchored near the firing
/// (the period rule), or those of the caller-named slot.
std::vector<detail::job_attempt_row> past_attempts(detail::session& s, const firing& f) {
    if (!f.options.slot.empty())
        return detail::decode_rows<detail::job_attempt_row>(
            s.execute(statement::job_slot_runs, {f.name, std::string_view(f.options.slot)}));
    const auto window = detail::period_window(f.fire_ms, f.period_ms);
    return detail::decode_rows<detail::job_attempt_row>(
        s.execute(statement::job_recent, {f.name, window.first, window.last}));
}

/// A success of the firing's slot exists (attempt `done`): the firing is skipped, and counted.
void skip_firing(detail::session& s, std::string_view name, const detail::job_attempt_row& done,
                 job_result& res) {
    res.outcome = job_outcome::skipped;
    res.done_by_token = done.token;
    res.done_by_owner = done.owner;
    res.done_by_host = done.host;
    res.done_by_pid = done.pid;
    s.execute(statement::job_skip, {name});
}

/// Under the lock, inside the caller's transaction: the slot rule over `attempts`, then skips
/// the firing or records its attempt (by `owner`, under grant res.token) as started. Returns
/// whether it started; if not, `res` says skipped, or lost (the lease was gone first).
bool start_or_skip(detail::session& s, const firing& f, const std::string& owner,
                   const std::vector<detail::job_attempt_row>& attempts, job_result& res) {
    std::vector<detail::past_attempt> past;
    for (const auto& a : attempts)
        past.push_back({a.slot, a.slot_fired_ms, a.outcome == "succeeded"});
    const auto d = f.options.slot.empty() ? detail::decide_by_period(past, f.fire_ms)
                                          : detail::decide_by_key(past, f.options.slot, f.fire_ms);
    res.slot = d.slot;
    res.takeover = d.takeover;
    if (d.done) {
        skip_firing(s, f.name, attempts.at(d.matched), res);
        return false;
    }
    const auto& me = detail::this_process();
    const bool started =
        s.execute(statement::job_start,
                  {f.name, res.token, std::string_view(res.slot), std::string_view(owner),
                   std::string_view(me.host), me.pid, f.period_ms, d.slot_fired_ms})
            .affected_rows == 1;
    if (!started) {
        res.outcome = job_outcome::lost;
        res.message = "the lock was lost before the attempt could be recorded";
    }
    return started;
}

/// Decides what the firing does, in one transaction under the lock `m`: earlier attempts still
/// marked running are over (their grants are older than ours), then the slot rule, then skip
/// or start. Returns whether the attempt started (see start_or_skip). On an error, rolls back
/// and releases `m`, then rethrows.
bool decide_firing(detail::database_impl& db, const firing& f, mutex& m, job_result& res) {
    auto s = db.checkout();
    try {
        s->begin();
        abandon_stale_attempts(*s, f.name, res.token);
        const bool started = start_or_skip(*s, f, m.owner_id(), past_attempts(*s, f), res);
        s->commit();
        return started;
    } catch (...) {
        s->rollback();
        m.unlock();
        throw;
    }
}

/// What the callable did: its report, and what it threw (rethrown once the outcome is
/// recorded), reported as exit status 1 with the exception's message.
struct callable_run {
    job_report report;
    std::exception_ptr thrown;
};

callable_run run_callable(const std::function<job_report(const job_context&)>& fn,
                          const job_context& context) {
    callable_run out;
    try {
        out.report = fn(context);
    } catch (const std::exception& e) {
        out.thrown = std::current_exception();
        out.report.exit_status = 1;
        out.report.message = std::string("exception: ") + e.what();
    } catch (...) {
        out.thrown = std::current_exception();
        out.report.exit_status = 1;
        out.report.message = "exception of unknown type";
    }
    return out;
}

/// Records how the attempt of grant res.token ended, in one transaction (before the lock is
/// released, so that a firing that waited for it reads it): succeeded (`ok` and the lease
/// still held when the fenced update ran), lost (`lost_while_running`, or the lease gone by
/// the time the success was to be recorded: never a success) or failed. Sets res.outcome,
/// res.duration and, when lost, res.message if the report gave none. Throws what the
/// database throws (rolled back).
void record_outcome(detail::database_impl& db, std::string_view name, const job_report& report,
                    bool ok, bool lost_while_running, job_result& res) {
    auto s = db.checkout();
    try {
        const detail::param exit_param = report.signal != 0
                                             ? detail::param(nullptr)
                                             : detail::param(std::int64_t{report.exit_status});
        const detail::param signal_param = report.signal != 0
                                               ? detail::param(std::int64_t{report.signal})
                                               : detail::param(nullptr);
        ended_attempt ended;
        s->begin();
        if (!lost_while_running && ok) {
            ended = record_end(*s, name, res.token, "succeeded", exit_param, signal_param,
                               ledger_message(report.message), true);
            res.outcome = job_outcome::succeeded;
        }
        if (!ended.recorded && (lost_while_running || ok)) {
            if (res.message.empty())
                res.message = "the lock was lost while the job ran";
            ended = record_end(*s, name, res.token, "lost", exit_param, signal_param,
                               ledger_message(res.message), false);
            res.outcome = job_outcome::lost;
        } else if (!ok) {
            ended = record_end(*s, name, res.token, "failed", exit_param, signal_param,
                               ledger_message(report.message), false);
            res.outcome = job_outcome::failed;
        }
        s->commit();
        res.duration = std::chrono::milliseconds(ended.duration_ms);
    } catch (...) {
        s->rollback();
        throw;
    }
}

} // namespace

job::job(database db, std::string name, job_options options)
    : m_db(std::move(db)), m_name(std::move(name)), m_options(std::move(options)) {
    using namespace std::chrono;
    const auto period = m_options.period;
    if (m_options.slot.empty() || period != milliseconds::zero()) {
        if (period < min_job_period || period > max_job_period)
            throw error(errc::invalid_argument, "job \"" + m_name +
                                                    "\": period must be between 1s and 366d, got " +
                                                    std::to_string(period.count()) + " ms");
    }
    if (!m_options.slot.empty())
        validate_slot_key(m_options.slot);
    if (m_options.wait && m_options.wait->count() < 0)
        throw error(errc::invalid_argument, "job \"" + m_name + "\": wait must not be negative");
    if (m_options.lock.strategy == strategy::select_for_update)
        throw error(errc::unsupported,
                    "job \"" + m_name +
                        "\": select_for_update has no lease to fence the run ledger with; use "
                        "unique_key or optimistic_version");
    // A lease that ran out while the job still runs would let another host run it as well.
    m_options.lock.renew = true;
    mutex probe(m_db, m_name, m_options.lock); // validates the name and lock options
}

job::~job() = default;

job_result job::run(const std::function<void(std::int64_t, std::stop_token)>& fn) {
    return run_reporting([&](const job_context& ctx) {
        fn(ctx.token, ctx.stop);
        return job_report{};
    });
}

job_result job::run_reporting(const std::function<job_report(const job_context&)>& fn) {
    auto& impl = detail::impl_of(m_db);
    impl.require_schema();
    const std::int64_t period_ms = m_options.period.count();
    const firing f{m_name, m_options, period_ms, fire_on_database_clock(impl, m_name, period_ms)};

    mutex m(m_db, m_name, m_options.lock);
    job_result res;
    if (!take_job_lock(m, m_options)) {
        res.outcome = job_outcome::not_granted;
        return res;
    }
    res.token = m.token();
    if (!decide_firing(impl, f, m, res)) {
        m.unlock();
        return res;
    }

    // Run. The stop token is the grant's: requested when the lock is lost.
    const auto ran = run_callable(fn, job_context{res.token, m.stop_token(), res.slot});
    res.exit_status = ran.report.exit_status;
    res.signal = ran.report.signal;
    res.message = ran.report.message;

    // Record the outcome before releasing, so a firing that waited for us reads it.
    const bool lost_while_running = m.stop_token().stop_requested() || !m.owns_lock();
    const bool ok = ran.report.exit_status == 0 && ran.report.signal == 0 && !ran.thrown;
    try {
        record_outcome(impl, m_name, ran.report, ok, lost_while_running, res);
    } catch (...) {
        m.unlock();
        if (ran.thrown)
            std::rethrow_exception(ran.thrown);
        throw;
    }
    m.unlock();
    if (ran.thrown)
        std::rethrow_exception(ran.thrown);
    return res;
}

std::optional<std::chrono::milliseconds> job_info::success_age() const noexcept {
    if (last_success_started_ms <= 0)
        return std::nullopt;
    return std::chrono::milliseconds(now_ms - last_success_started_ms);
}

bool job_info::slot_done() const noexcept {
    const auto age = success_age();
    return period_ms > 0 && age && age->count() < period_ms;
}

bool job_info::overdue() const noexcept {
    if (period_ms <= 0)
        return false;
    const auto since = last_success_started_ms > 0 ? last_success_started_ms : first_fired_ms;
    return (now_ms - since) * 2 > period_ms * 3;
}

std::vector<job_run_info> job_history(database& db, std::string_view name, std::size_t limit) {
    if (limit == 0)
        throw error(errc::invalid_argument, "history limit must be at least 1");
    const auto lim = static_cast<std::int64_t>(std::min<std::size_t>(limit, 1'000'000));
    const auto res = detail::impl_of(db).run(statement::job_history, {name, lim});
    std::vector<job_run_info> out;
    for (auto& r : detail::decode_rows<detail::job_history_row>(res)) {
        job_run_info i;
        i.name = std::string(name);
        i.token = r.token;
        i.slot = std::move(r.slot);
        i.owner = std::move(r.owner);
        i.host = std::move(r.host);
        i.pid = r.pid;
        i.period_ms = r.period_ms;
        i.started_ms = r.started_ms;
        i.ended_ms = r.ended_ms;
        i.duration_ms = r.duration_ms;
        if (r.exit_status)
            i.exit_status = static_cast<int>(*r.exit_status);
        if (r.term_signal)
            i.signal = static_cast<int>(*r.term_signal);
        i.outcome = std::move(r.outcome);
        i.message = std::move(r.message);
        out.push_back(std::move(i));
    }
    return out;
}

std::vector<job_info> list_jobs(database& db) {
    const auto res = detail::impl_of(db).run(statement::job_list, {});
    std::vector<job_info> out;
    for (auto& r : detail::decode_rows<detail::job_list_row>(res)) {
        job_info j;
        j.name = std::move(r.name);
        j.period_ms = r.period_ms;
        j.first_fired_ms = r.first_fired_ms;
        j.last_fired_ms = r.last_fired_ms;
        j.last_outcome = std::move(r.last_outcome);
        j.last_started_ms = r.last_started_ms;
        j.last_duration_ms = r.last_duration_ms;
        j.last_success_started_ms = r.last_success_started_ms;
        j.last_success_ended_ms = r.last_success_ended_ms;
        j.succeeded = r.succeeded;
        j.failed = r.failed;
        j.lost = r.lost;
        j.abandoned = r.abandoned;
        j.skipped = r.skipped;
        j.running_since_ms = r.running_since_ms;
        j.now_ms = r.now_ms;
        out.push_back(std::move(j));
    }
    return out;
}

} // namespace sqlock
