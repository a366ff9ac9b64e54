// sqlock::job: once per slot, on top of sqlock::mutex (lease, renewal, lost signal, fencing),
// with every attempt recorded in the run ledger.
#include "sqlock/job.hpp"

#include "base/owner.hpp"
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

using detail::column_int;
using detail::statement;

std::optional<std::int64_t> column_opt(const std::optional<std::string>& text) {
    if (!text)
        return std::nullopt;
    return column_int(text);
}

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
    const auto got = s.execute(statement::job_run_get, {name, token});
    if (got.rows.empty())
        return out;
    const auto& r = got.rows.front();
    const auto started = column_int(r.at(0));
    const auto ended = column_int(r.at(1));
    out.duration_ms = column_int(r.at(2));
    s.execute(statement::job_count, {name, outcome, started, out.duration_ms, ended});
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
    auto& impl = detail::impl_of(m_db);
    impl.require_schema();
    const std::string_view name = m_name;
    const std::int64_t period_ms = m_options.period.count();

    // The firing's time on the database clock decides its slot (and anchors a slot it opens):
    // a host that then waits for another's run still belongs to the slot it fired in.
    impl.run(statement::job_touch, {name, period_ms});
    const auto fire_ms = column_int(impl.run(statement::job_now, {}).rows.at(0).at(0));

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
            for (const auto& r : s->execute(statement::job_stale, {name, res.token}).rows)
                record_end(*s, name, column_int(r.at(0)), "abandoned", nullptr, nullptr,
                           "the runner's lease ran out before it recorded an outcome "
                           "(crashed, killed or cut off)",
                           false);
            const auto window = detail::period_window(fire_ms, period_ms);
            const auto rows =
                m_options.slot.empty()
                    ? s->execute(statement::job_recent, {name, window.first, window.last})
                    : s->execute(statement::job_slot_runs,
                                 {name, std::string_view(m_options.slot)});
            std::vector<detail::past_attempt> attempts;
            for (const auto& r : rows.rows)
                attempts.push_back({r.at(0).value_or(""), column_int(r.at(1)),
                                    r.at(2).value_or("") == "succeeded"});
            const auto d = m_options.slot.empty()
                               ? detail::decide_by_period(attempts, fire_ms)
                               : detail::decide_by_key(attempts, m_options.slot, fire_ms);
            res.slot = d.slot;
            res.takeover = d.takeover;
            if (d.done) {
                const auto& r = rows.rows.at(d.matched);
                res.outcome = job_outcome::skipped;
                res.done_by_token = column_int(r.at(3));
                res.done_by_owner = r.at(4).value_or("");
                res.done_by_host = r.at(5).value_or("");
                res.done_by_pid = column_int(r.at(6));
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
    const auto res = detail::impl_of(db).run(statement::job_history, {name, lim});
    std::vector<job_run_info> out;
    for (const auto& r : res.rows) {
        job_run_info i;
        i.name = std::string(name);
        i.token = column_int(r.at(0));
        i.slot = r.at(1).value_or("");
        i.owner = r.at(2).value_or("");
        i.host = r.at(3).value_or("");
        i.pid = column_int(r.at(4));
        i.period_ms = column_int(r.at(5));
        i.started_ms = column_int(r.at(6));
        i.ended_ms = column_opt(r.at(7));
        i.duration_ms = column_opt(r.at(8));
        if (r.at(9))
            i.exit_status = static_cast<int>(column_int(r.at(9)));
        if (r.at(10))
            i.signal = static_cast<int>(column_int(r.at(10)));
        i.outcome = r.at(11).value_or("");
        i.message = r.at(12).value_or("");
        out.push_back(std::move(i));
    }
    return out;
}

std::vector<job_info> list_jobs(database& db) {
    const auto res = detail::impl_of(db).run(statement::job_list, {});
    std::vector<job_info> out;
    for (const auto& r : res.rows) {
        job_info j;
        j.name = r.at(0).value_or("");
        j.period_ms = column_int(r.at(1));
        j.first_fired_ms = column_int(r.at(2));
        j.last_fired_ms = column_int(r.at(3));
        j.last_outcome = r.at(4).value_or("");
        j.last_started_ms = column_int(r.at(5));
        j.last_duration_ms = column_int(r.at(6));
        j.last_success_started_ms = column_int(r.at(7));
        j.last_success_ended_ms = column_int(r.at(8));
        j.succeeded = column_int(r.at(9));
        j.failed = column_int(r.at(10));
        j.lost = column_int(r.at(11));
        j.abandoned = column_int(r.at(12));
        j.skipped = column_int(r.at(13));
        j.running_since_ms = column_opt(r.at(14));
        j.now_ms = column_int(r.at(15));
        out.push_back(std::move(j));
    }
    return out;
}

} // namespace sqlock
