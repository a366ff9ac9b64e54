// The C API's read-only views: the lock table (sqlock_db_status) and a job's run ledger
// (sqlock_db_job_history) and the list of jobs (sqlock_db_list_jobs), as snapshots the caller reads
// row by row and frees.
#include "capi/errors.hpp"
#include "capi/handles.hpp"

#include <cstring>
#include <string>
#include <utility>
#include <vector>

using sqlock::capi::guarded;
using sqlock::capi::require;

/// The snapshot owns the C++ rows; the structs handed out point into their strings.
struct sqlock_status {
    std::vector<sqlock::lock_info> rows;
    std::vector<std::string> names; ///< primitive names, NUL-terminated (name is a view)
    std::vector<std::string> roles;
};

struct sqlock_job_history {
    std::vector<sqlock::job_run_info> runs;
};

struct sqlock_job_list {
    std::vector<sqlock::job_info> jobs;
};

namespace {

/// Throws invalid_argument unless the caller set a struct_size (a struct it fills).
void require_size(std::size_t struct_size, const char* what) {
    if (struct_size < sizeof(std::size_t))
        throw sqlock::error(sqlock::errc::invalid_argument,
                            std::string(what) + ".struct_size must be set to its size");
}

/// Copies `filled` into the caller's struct, no further than its struct_size (it may be an
/// older, smaller struct).
template <class T>
void hand_out(T& out, T filled) {
    filled.struct_size = out.struct_size;
    std::memcpy(&out, &filled, out.struct_size < sizeof filled ? out.struct_size : sizeof filled);
}

void require_index(std::size_t index, std::size_t count, const char* what) {
    if (index >= count)
        throw sqlock::error(sqlock::errc::invalid_argument,
                            std::string(what) + " " + std::to_string(index) +
                                " is out of range (there are " + std::to_string(count) + ")");
}

const char* primitive_of(std::string_view role) {
    if (role.empty())
        return "mutex";
    return role.starts_with("permit") ? "semaphore" : "shared_mutex";
}

} // namespace

extern "C" {

int sqlock_db_status(sqlock_db* db, const char* name, sqlock_status** out, sqlock_error** err) {
    return guarded(err, [&] {
        require(db, "db");
        require(out, "out");
        auto snapshot = std::make_unique<sqlock_status>();
        for (auto& row : db->db.list())
            if (!name || row.primitive_name() == name)
                snapshot->rows.push_back(std::move(row));
        for (const auto& row : snapshot->rows) {
            snapshot->names.emplace_back(row.primitive_name());
            snapshot->roles.emplace_back(row.role());
        }
        *out = snapshot.release();
        return SQLOCK_OK;
    });
}

size_t sqlock_status_count(const sqlock_status* status) {
    return status ? status->rows.size() : 0;
}

int sqlock_status_lock(const sqlock_status* status, size_t index, sqlock_lock_info* info,
                       sqlock_error** err) {
    return guarded(err, [&] {
        require(status, "status");
        require(info, "info");
        require_size(info->struct_size, "sqlock_lock_info");
        require_index(index, status->rows.size(), "lock row");
        const auto& r = status->rows[index];
        const bool transactional = r.strategy == "select_for_update";
        sqlock_lock_info c{};
        c.name = status->names[index].c_str();
        c.role = status->roles[index].c_str();
        c.primitive = primitive_of(r.role());
        c.strategy = r.strategy.c_str();
        c.held = r.holder_hidden ? -1 : (r.held() ? 1 : 0);
        c.owner = r.owner.c_str();
        c.host = r.owner.empty() ? "" : r.host.c_str();
        c.pid = r.owner.empty() ? 0 : r.pid;
        c.token = r.token;
        c.hold_count = r.hold_count;
        c.has_lease = !transactional && !r.owner.empty() ? 1 : 0;
        c.expires_in_ms = c.has_lease ? r.expires_in.count() : 0;
        c.held_for_ms = r.held() ? r.held_for.count() : 0;
        c.acquired_at = r.owner.empty() ? "" : r.acquired_at.c_str();
        c.expires_at = c.has_lease ? r.expires_at.c_str() : "";
        c.waiters_hidden = r.waiters_hidden ? 1 : 0;
        c.waiter_count = static_cast<int64_t>(r.waiters.size());
        hand_out(*info, c);
        return SQLOCK_OK;
    });
}

int sqlock_status_waiter(const sqlock_status* status, size_t index, size_t waiter,
                         sqlock_waiter_info* info, sqlock_error** err) {
    return guarded(err, [&] {
        require(status, "status");
        require(info, "info");
        require_size(info->struct_size, "sqlock_waiter_info");
        require_index(index, status->rows.size(), "lock row");
        const auto& waiters = status->rows[index].waiters;
        require_index(waiter, waiters.size(), "waiter");
        const auto& w = waiters[waiter];
        sqlock_waiter_info c{};
        c.who = w.who.c_str();
        c.waited_for_ms = w.waited_for ? w.waited_for->count() : -1;
        c.position = w.position.value_or(0);
        hand_out(*info, c);
        return SQLOCK_OK;
    });
}

void sqlock_status_free(sqlock_status* status) {
    delete status;
}

int sqlock_db_job_history(sqlock_db* db, const char* name, size_t limit, sqlock_job_history** out,
                          sqlock_error** err) {
    return guarded(err, [&] {
        require(db, "db");
        require(name, "name");
        require(out, "out");
        *out = new sqlock_job_history{sqlock::job_history(db->db, name, limit)};
        return SQLOCK_OK;
    });
}

size_t sqlock_job_history_count(const sqlock_job_history* history) {
    return history ? history->runs.size() : 0;
}

int sqlock_job_history_run(const sqlock_job_history* history, size_t index,
                           sqlock_job_run_info* info, sqlock_error** err) {
    return guarded(err, [&] {
        require(history, "history");
        require(info, "info");
        require_size(info->struct_size, "sqlock_job_run_info");
        require_index(index, history->runs.size(), "run");
        const auto& r = history->runs[index];
        sqlock_job_run_info c{};
        c.name = r.name.c_str();
        c.slot = r.slot.c_str();
        c.token = r.token;
        c.owner = r.owner.c_str();
        c.host = r.host.c_str();
        c.pid = r.pid;
        c.period_ms = r.period_ms;
        c.started_ms = r.started_ms;
        c.ended_ms = r.ended_ms.value_or(0);
        c.duration_ms = r.duration_ms.value_or(-1);
        c.outcome = r.outcome.c_str();
        c.has_exit_status = r.exit_status ? 1 : 0;
        c.exit_status = r.exit_status.value_or(0);
        c.signal = r.signal.value_or(0);
        c.message = r.message.c_str();
        hand_out(*info, c);
        return SQLOCK_OK;
    });
}

void sqlock_job_history_free(sqlock_job_history* history) {
    delete history;
}

int sqlock_db_list_jobs(sqlock_db* db, sqlock_job_list** out, sqlock_error** err) {
    return guarded(err, [&] {
        require(db, "db");
        require(out, "out");
        *out = new sqlock_job_list{sqlock::list_jobs(db->db)};
        return SQLOCK_OK;
    });
}

size_t sqlock_job_list_count(const sqlock_job_list* list) {
    return list ? list->jobs.size() : 0;
}

int sqlock_job_list_job(const sqlock_job_list* list, size_t index, sqlock_job_info* info,
                        sqlock_error** err) {
    return guarded(err, [&] {
        require(list, "list");
        require(info, "info");
        require_size(info->struct_size, "sqlock_job_info");
        require_index(index, list->jobs.size(), "job");
        const auto& j = list->jobs[index];
        sqlock_job_info c{};
        c.name = j.name.c_str();
        c.period_ms = j.period_ms;
        c.first_fired_ms = j.first_fired_ms;
        c.last_fired_ms = j.last_fired_ms;
        c.last_outcome = j.last_outcome.c_str();
        c.last_started_ms = j.last_started_ms;
        c.last_duration_ms = j.last_duration_ms;
        c.last_success_started_ms = j.last_success_started_ms;
        c.last_success_ended_ms = j.last_success_ended_ms;
        c.succeeded = j.succeeded;
        c.failed = j.failed;
        c.lost = j.lost;
        c.abandoned = j.abandoned;
        c.skipped = j.skipped;
        c.running = j.running_since_ms ? 1 : 0;
        c.running_since_ms = j.running_since_ms.value_or(0);
        c.now_ms = j.now_ms;
        c.slot_done = j.slot_done() ? 1 : 0;
        c.overdue = j.overdue() ? 1 : 0;
        hand_out(*info, c);
        return SQLOCK_OK;
    });
}

void sqlock_job_list_free(sqlock_job_list* list) {
    delete list;
}

} // extern "C"
