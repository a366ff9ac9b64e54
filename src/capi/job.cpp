// The C API's scheduled jobs: sqlock_job_*() over sqlock::job.
#include "capi/errors.hpp"
#include "capi/handles.hpp"

#include <cstring>
#include <stop_token>

using namespace sqlock::capi;

namespace {

/// What sqlock_job_context::internal points to while the job's function runs.
struct job_call {
    std::stop_token stop;
    std::string message;
};

sqlock::job_options to_job_options(const sqlock_job_options& o,
                                   std::shared_ptr<callback_gate>& gate) {
    sqlock::job_options out;
    out.period = std::chrono::milliseconds(o.period_ms);
    if (o.slot)
        out.slot = o.slot;
    if (o.wait_ms >= 0)
        out.wait = std::chrono::milliseconds(o.wait_ms);
    const auto lock = read_options(o.lock, default_lock_options(), "sqlock_lock_options");
    out.lock = to_mutex_options(lock, gate);
    return out;
}

int outcome_of(sqlock::job_outcome outcome) {
    switch (outcome) {
    case sqlock::job_outcome::succeeded:
        return SQLOCK_JOB_SUCCEEDED;
    case sqlock::job_outcome::failed:
        return SQLOCK_JOB_FAILED;
    case sqlock::job_outcome::lost:
        return SQLOCK_JOB_LOST;
    case sqlock::job_outcome::abandoned:
        return SQLOCK_JOB_ABANDONED;
    case sqlock::job_outcome::skipped:
        return SQLOCK_JOB_SKIPPED;
    case sqlock::job_outcome::not_granted:
        return SQLOCK_JOB_NOT_GRANTED;
    }
    return SQLOCK_JOB_FAILED;
}

void fill(sqlock_job_result& out, const sqlock::job_result& r) {
    sqlock_job_result c{};
    c.struct_size = out.struct_size;
    c.outcome = outcome_of(r.outcome);
    c.token = r.token;
    c.takeover = r.takeover ? 1 : 0;
    c.exit_status = r.exit_status;
    c.duration_ms = r.duration.count();
    c.done_by_pid = r.done_by_pid;
    c.done_by_token = r.done_by_token;
    copy_truncated(c.slot, sizeof c.slot, r.slot);
    copy_truncated(c.done_by_host, sizeof c.done_by_host, r.done_by_host);
    copy_truncated(c.message, sizeof c.message, r.message);
    // The caller's struct may be older (smaller) than ours: write no further than it says.
    std::memcpy(&out, &c, out.struct_size < sizeof c ? out.struct_size : sizeof c);
}

} // namespace

extern "C" {

int sqlock_job_open(sqlock_job** out, sqlock_db* db, const char* name,
                    const sqlock_job_options* options, sqlock_error** err) {
    return guarded(err, [&] {
        require(out, "out");
        require(db, "db");
        require(name, "name");
        require(options, "options");
        const auto o = read_options(options, default_job_options(), "sqlock_job_options");
        auto handle = std::make_unique<sqlock_job>();
        handle->lock.emplace(db->db, name, to_job_options(o, handle->gate));
        *out = handle.release();
        return SQLOCK_OK;
    });
}

void sqlock_job_close(sqlock_job* job) {
    delete job;
}

int sqlock_job_stop_requested(const sqlock_job_context* context) {
    if (!context || !context->internal)
        return 0;
    return static_cast<const job_call*>(context->internal)->stop.stop_requested() ? 1 : 0;
}

void sqlock_job_set_message(const sqlock_job_context* context, const char* message) {
    if (!context || !context->internal || !message)
        return;
    quietly(0, [&] {
        static_cast<job_call*>(context->internal)->message = message;
        return 0;
    });
}

int sqlock_job_run(sqlock_job* job, sqlock_job_fn fn, void* user, sqlock_job_result* result,
                   sqlock_error** err) {
    return guarded(err, [&] {
        require(job, "job");
        if (!fn)
            throw sqlock::error(sqlock::errc::invalid_argument, "fn must not be NULL");
        if (result && result->struct_size < sizeof(size_t))
            throw sqlock::error(sqlock::errc::invalid_argument,
                                "sqlock_job_result.struct_size must be set to its size");
        const auto r = job->lock->run_reporting([&](const sqlock::job_context& context) {
            job_call call{context.stop, {}};
            const sqlock_job_context c{sizeof(sqlock_job_context), context.token,
                                       context.slot.c_str(), &call};
            const int status = fn(&c, user);
            return sqlock::job_report{status, 0, std::move(call.message)};
        });
        if (result)
            fill(*result, r);
        return SQLOCK_OK;
    });
}

} // extern "C"
