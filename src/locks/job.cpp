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
    using namespace std::chrono;
    auto& impl = *m_db.impl();
    impl.require_schema();
    const std::string_view name = m_name;
    const std::int64_t period_ms = m_options.period.count();

    // The firing's time on the database clock decides its slot (and anchors a slot it opens):
    // a host that then waits for another's run still belongs to the slot it fired in.
    impl.run(statement::job_touch, {name, period_ms});
    const auto fire_ms =
        detail::decode_single<detail::job_now_row>(impl.run(statement::job_now, {})).now_ms;

    mutex m(m_db, m_name, m_options.lock);
    const auto wait = m_options.wait  ? *m_options.wait
                      : period_ms > 0 ? m_options.period
                                      : milliseconds::max();
    const bool granted = wait == milliseconds::max() ? (m.lock(), true)
                         : wait.count() == 0         ? m.try_lock()
                                                     : m.try_lock_for(wait);
    job_result res;
    if (!granted) {
        res.outcome = job_outcome::not_granted;
        return res;
    }
    res.token = m.token();
    const auto& me = detail::this_process();
    const auto owner = m.owner_id();

    // Decide under the lock, in one transaction: earlier attempts still marked running are
    // over (their grants are older than ours), then the slot rule, then skip or start.
    bool started = false;
    {
        auto s = impl.checkout();
        try {
            s->begin();
            for (const auto& stale : detail::decode_rows<detail::token_row>(
                     s->execute(statement::job_stale, {name, res.token})))
                record_end(*s, name, stale.token, "abandoned", nullptr, nullptr,
                           "the runner's lease ran out before it recorded an outcome "
                           "(crashed, killed or cut off)",
                           false);
            const auto window = detail::period_window(fire_ms, period_ms);
            const auto rows = detail::decode_rows<detail::job_attempt_row>(
                m_options.slot.empty()
                    ? s->execute(statement::job_recent, {name, window.first, window.last})
                    : s->execute(statement::job_slot_runs,
                                 {name, std::string_view(m_options.slot)}));
            std::vector<detail::past_attempt> attempts;
            for (const auto& r : rows)
                attempts.push_back({r.slot, r.slot_fired_ms, r.outcome == "succeeded"});
            const auto d = m_options.slot.empty()
                               ? detail::decide_by_period(attempts, fire_ms)
                               : detail::decide_by_key(attempts, m_options.slot, fire_ms);
            res.slot = d.slot;
            res.takeover = d.takeover;
            if (d.done) {
                const auto& r = rows.at(d.matched);
                res.outcome = job_outcome::skipped;
                res.done_by_token = r.token;
                res.done_by_owner = r.owner;
                res.done_by_host = r.host;
                res.done_by_pid = r.pid;
                s->execute(statement::job_skip, {name});
            } else {
                started = s->execute(statement::job_start,
                                     {name, res.token, std::string_view(res.slot),
                                      std::string_view(owner), std::string_view(me.host), me.pid,
                                      period_ms, d.slot_fired_ms})
                              .affected_rows == 1;
                if (!started) {
                    res.outcome = job_outcome::lost;
                    res.message = "the lock was lost before the attempt could be recorded";
                }
            }
            s->commit();
        } catch (...) {
            s->rollback();
            m.unlock();
            throw;
        }
    }
    if (!started) {
        m.unlock();
        return res;
    }

    // Run. The stop token is the grant's: requested when the lock is lost.
    job_report report;
    std::exception_ptr thrown;
    try {
        report = fn(job_context{res.token, m.stop_token(), res.slot});
    } catch (const std::exception& e) {
        thrown = std::current_exception();
        report.exit_status = 1;
        report.message = std::string("exception: ") + e.what();
    } catch (...) {
        thrown = std::current_exception();
        report.exit_status = 1;
        report.message = "exception of unknown type";
    }
    res.exit_status = report.exit_status;
    res.signal = report.signal;
    res.message = report.message;

    // Record the outcome before releasing, so a firing that waited for us reads it.
    const bool lost_while_running = m.stop_token().stop_requested() || !m.owns_lock();
    const bool ok = report.exit_status == 0 && report.signal == 0 && !thrown;
    try {
        auto s = impl.checkout();
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
                // Lost while running, or by the time the success was to be recorded (the
                // fenced update found the lease gone): never a success.
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
            res.duration = milliseconds(ended.duration_ms);
        } catch (...) {
            s->rollback();
            throw;
        }
    } catch (...) {
        m.unlock();
        if (thrown)
            std::rethrow_exception(thrown);
        throw;
    }
    m.unlock();
    if (thrown)
        std::rethrow_exception(thrown);
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
    const auto res = db.impl()->run(statement::job_history, {name, lim});
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
    const auto res = db.impl()->run(statement::job_list, {});
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
