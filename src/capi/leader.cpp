// The C API's leader election: sqlock_leader_*() over sqlock::leader_election.
#include "capi/errors.hpp"
#include "capi/handles.hpp"
#include "capi/waiting.hpp"
#include "locks/handle_access.hpp"

using namespace sqlock::capi;

namespace {

/// One campaign until `deadline` (max: as long as it takes; min: one attempt), giving up soon
/// after `stop` is requested when it is not null.
bool campaign_until(sqlock::leader_election& e, steady_time deadline, const std::stop_token* stop) {
    if (stop)
        return sqlock::detail::handle_access::try_campaign_cancellable(e, deadline, *stop)
            .has_value();
    if (deadline == steady_time::max())
        return e.campaign() > 0;
    if (deadline == steady_time::min())
        return e.try_campaign().has_value();
    return e.try_campaign_for(deadline - std::chrono::steady_clock::now()).has_value();
}

void fill(sqlock_leader_info& out, const std::optional<sqlock::leader_info>& who) {
    sqlock_leader_info info{};
    info.struct_size = out.struct_size;
    if (who) {
        info.has_leader = 1;
        info.term = who->term;
        info.pid = who->pid;
        info.remaining_ms = who->remaining.count();
        info.leading_for_ms = who->leading_for.count();
        copy_truncated(info.id, sizeof info.id, who->id);
        copy_truncated(info.host, sizeof info.host, who->host);
    }
    // The caller's struct may be older (smaller) than ours: write no further than it says.
    std::memcpy(&out, &info, out.struct_size < sizeof info ? out.struct_size : sizeof info);
}

} // namespace

extern "C" {

int sqlock_leader_open(sqlock_leader** out, sqlock_db* db, const char* name,
                       const sqlock_leader_options* options, sqlock_error** err) {
    return guarded(err, [&] {
        require(out, "out");
        require(db, "db");
        require(name, "name");
        const auto o = read_options(options, default_leader_options(), "sqlock_leader_options");
        auto handle = std::make_unique<sqlock_leader>();
        auto cpp = to_leader_options(o, handle->gate);
        handle->async.make = leader_maker(db->db, name, cpp);
        handle->lock.emplace(db->db, name, std::move(cpp));
        *out = handle.release();
        return SQLOCK_OK;
    });
}

void sqlock_leader_close(sqlock_leader* leader) {
    delete leader;
}

int sqlock_leader_campaign(sqlock_leader* leader, int64_t timeout_ms, sqlock_cancel* cancel,
                           int64_t* term, sqlock_error** err) {
    return guarded(err, [&] {
        require(leader, "leader");
        auto& e = *leader->lock;
        // Already leading: the term at once (a cancel must not end leadership won before).
        int rc = SQLOCK_OK;
        if (!e.is_leader()) {
            const grant_wait wait{[&](steady_time deadline, const std::stop_token* stop) {
                                      return campaign_until(e, deadline, stop);
                                  },
                                  [&] { e.resign(); }, subject{"election", e.name()}};
            rc = wait_for_grant(wait, timeout_ms, cancel, err);
        }
        if (rc == SQLOCK_OK && term)
            *term = e.term();
        return rc;
    });
}

int sqlock_leader_resign(sqlock_leader* leader, sqlock_error** err) {
    return guarded(err, [&] {
        require(leader, "leader");
        leader->lock->resign();
        return SQLOCK_OK;
    });
}

int sqlock_leader_is_leader(const sqlock_leader* leader) {
    return leader && leader->lock->is_leader() ? 1 : 0;
}

int64_t sqlock_leader_term(const sqlock_leader* leader) {
    return leader ? leader->lock->term() : 0;
}

int sqlock_leader_current(const sqlock_leader* leader, sqlock_leader_info* info,
                          sqlock_error** err) {
    return guarded(err, [&] {
        require(leader, "leader");
        require(info, "info");
        if (info->struct_size < sizeof(size_t))
            throw sqlock::error(sqlock::errc::invalid_argument,
                                "sqlock_leader_info.struct_size must be set to its size");
        fill(*info, leader->lock->leader());
        return SQLOCK_OK;
    });
}

} // extern "C"
