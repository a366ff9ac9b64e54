// The C API's read-only views (since 1.1): a status snapshot of the lock table, and a job's
// run ledger.
#include "fixture.hpp"

#include <cinttypes>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>

using namespace capi_test;
using namespace std::chrono_literals;

namespace {

/// A status snapshot freed at scope exit.
struct snapshot {
    sqlock_status* s = nullptr;
    explicit snapshot(const std::string& name) {
        error_slot err;
        REQUIRE_MESSAGE(sqlock_db_status(db(), name.c_str(), &s, err.out()) == SQLOCK_OK,
                        err.message());
    }
    ~snapshot() { sqlock_status_free(s); }
    snapshot(const snapshot&) = delete;
    snapshot& operator=(const snapshot&) = delete;
    std::size_t count() const { return sqlock_status_count(s); }
    sqlock_lock_info row(std::size_t i) const {
        sqlock_lock_info info;
        info.struct_size = sizeof info;
        error_slot err;
        REQUIRE_MESSAGE(sqlock_status_lock(s, i, &info, err.out()) == SQLOCK_OK, err.message());
        return info;
    }
};

std::string this_host() {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    return host;
}

} // namespace

TEST_SUITE("common") {

    TEST_CASE("status: a held lock shows its holder and token, a waiter waits, then it is free") {
        const auto name = unique_name("status");
        mutex_handle holder(name, opts());
        std::int64_t token = 0;
        REQUIRE(sqlock_mutex_lock(holder.m, SQLOCK_WAIT_FOREVER, nullptr, &token, nullptr) ==
                SQLOCK_OK);
        {
            snapshot s(name);
            REQUIRE(s.count() == 1);
            const auto row = s.row(0);
            CHECK(std::string(row.name) == name);
            CHECK(std::string(row.primitive) == "mutex");
            CHECK(std::string(row.role).empty());
            CHECK(std::string(row.strategy) == under_test().strategy_name);
            CHECK(row.held == 1);
            CHECK(row.pid == getpid());
            if (under_test().backend == "mysql" && !lease_strategy()) {
                // MariaDB's lock monitor names the holder's connection and process, not its host.
                CHECK(std::string(row.host).empty());
                CHECK(std::string(row.owner).starts_with("connection "));
            } else {
                CHECK(std::string(row.host) == this_host());
                CHECK(std::string(row.owner).starts_with(this_host() + ":" +
                                                         std::to_string(getpid())));
            }
            if (lease_strategy()) {
                CHECK(row.token == token);
                CHECK(row.has_lease == 1);
                CHECK(row.expires_in_ms > 0);
                CHECK(row.expires_in_ms <= 30000);
            } else {
                CHECK(row.token == 0); // select_for_update: not stored in the row
                CHECK(row.has_lease == 0);
            }
            CHECK(row.waiters_hidden == 0);
            CHECK(row.waiter_count == 0);
        }

        // A waiter in another process (the server shows the holder's own process as next
        // in line, not as a waiter): the C contender, one grant once we release.
        const auto& t = under_test();
        const auto log = t.scratch + "/" + name + ".log";
        const auto waiter =
            spawn({c_contender_path(), t.url, name, "30000", "1", log, t.strategy_name}, {}, {},
                  t.scratch + "/" + name + ".err");
        std::string who;
        CHECK(eventually(
            [&] {
                snapshot s(name);
                for (std::size_t i = 0; i < s.count(); ++i) {
                    if (s.row(i).waiter_count < 1)
                        continue;
                    sqlock_waiter_info w;
                    w.struct_size = sizeof w;
                    REQUIRE(sqlock_status_waiter(s.s, i, 0, &w, nullptr) == SQLOCK_OK);
                    who = w.who;
                    return true;
                }
                return false;
            },
            20s));
        CHECK(!who.empty());
        // Reading the status in the holder's own process left the lock with it (on SQLite,
        // select_for_update, it once dropped the process's file lock): still ours, and the
        // waiter has not been in.
        CHECK(sqlock_mutex_owns(holder.m) == 1);
        CHECK(read_file(log).empty());
        REQUIRE(sqlock_mutex_unlock(holder.m, nullptr) == SQLOCK_OK);
        CHECK_MESSAGE(wait_exit(waiter) == 0, read_file(t.scratch + "/" + name + ".err"));
        std::int64_t next = 0;
        long pid = 0;
        CHECK(std::sscanf(read_file(log).c_str(), "%" SCNd64 " %ld", &next, &pid) == 2);
        CHECK(pid == waiter);

        snapshot s(name);
        for (std::size_t i = 0; i < s.count(); ++i) {
            const auto row = s.row(i);
            CHECK(row.held == 0);
            CHECK(row.waiter_count == 0);
        }
    }

    TEST_CASE("status: NULLs, an index out of range, an older (smaller) struct") {
        const auto name = unique_name("status-args");
        mutex_handle h(name, opts());
        REQUIRE(sqlock_mutex_lock(h.m, SQLOCK_WAIT_FOREVER, nullptr, nullptr, nullptr) ==
                SQLOCK_OK);
        error_slot err;
        sqlock_status* none = nullptr;
        CHECK(sqlock_db_status(nullptr, nullptr, &none, err.out()) == SQLOCK_E_INVALID_ARGUMENT);
        CHECK(sqlock_db_status(db(), nullptr, nullptr, err.out()) == SQLOCK_E_INVALID_ARGUMENT);
        CHECK(sqlock_status_count(nullptr) == 0);
        sqlock_status_free(nullptr);
        snapshot s(name);
        REQUIRE(s.count() == 1);
        sqlock_lock_info info;
        info.struct_size = sizeof info;
        CHECK(sqlock_status_lock(s.s, 1, &info, err.out()) == SQLOCK_E_INVALID_ARGUMENT);
        CHECK(err.message().find("out of range") != std::string::npos);
        sqlock_waiter_info w;
        w.struct_size = sizeof w;
        CHECK(sqlock_status_waiter(s.s, 0, 0, &w, err.out()) == SQLOCK_E_INVALID_ARGUMENT);
        info.struct_size = 0;
        CHECK(sqlock_status_lock(s.s, 0, &info, err.out()) == SQLOCK_E_INVALID_ARGUMENT);
        // A caller built against a struct that ended after `role`: nothing past it is written.
        sqlock_lock_info old;
        std::memset(&old, 0x5a, sizeof old);
        old.struct_size = offsetof(sqlock_lock_info, strategy);
        REQUIRE(sqlock_status_lock(s.s, 0, &old, err.out()) == SQLOCK_OK);
        CHECK(std::string(old.name) == name);
        CHECK(old.held == 0x5a5a5a5a);
        // Without a name: every row, this one among them.
        sqlock_status* all = nullptr;
        REQUIRE(sqlock_db_status(db(), nullptr, &all, err.out()) == SQLOCK_OK);
        info.struct_size = sizeof info;
        bool found = false;
        for (std::size_t i = 0; i < sqlock_status_count(all); ++i) {
            REQUIRE(sqlock_status_lock(all, i, &info, err.out()) == SQLOCK_OK);
            found = found || std::string(info.name) == name;
        }
        sqlock_status_free(all);
        CHECK(found);
    }
}

namespace {

int succeed(const sqlock_job_context* context, void*) {
    sqlock_job_set_message(context, "all done");
    return 0;
}

int fail_with_7(const sqlock_job_context*, void*) {
    return 7;
}

} // namespace

TEST_SUITE("jobs") {

    TEST_CASE("job ledger: each run recorded, newest first, with its outcome, token, runner") {
        const auto name = unique_name("ledger");
        sqlock_job_options o;
        sqlock_job_options_init(&o);
        auto lock = opts();
        o.lock = &lock;
        error_slot err;
        std::vector<std::int64_t> tokens;
        for (const auto* slot : {"a", "b"}) {
            o.slot = slot;
            sqlock_job* job = nullptr;
            REQUIRE_MESSAGE(sqlock_job_open(&job, db(), name.c_str(), &o, err.out()) == SQLOCK_OK,
                            err.message());
            sqlock_job_result r;
            r.struct_size = sizeof r;
            REQUIRE(sqlock_job_run(job, *slot == 'a' ? succeed : fail_with_7, nullptr, &r,
                                   err.out()) == SQLOCK_OK);
            tokens.push_back(r.token);
            sqlock_job_close(job);
        }
        sqlock_job_history* ledger = nullptr;
        REQUIRE_MESSAGE(sqlock_db_job_history(db(), name.c_str(), 10, &ledger, err.out()) ==
                            SQLOCK_OK,
                        err.message());
        REQUIRE(sqlock_job_history_count(ledger) == 2);
        sqlock_job_run_info run;
        run.struct_size = sizeof run;
        REQUIRE(sqlock_job_history_run(ledger, 0, &run, err.out()) == SQLOCK_OK);
        CHECK(std::string(run.slot) == "b"); // newest first
        CHECK(std::string(run.outcome) == "failed");
        CHECK(run.has_exit_status == 1);
        CHECK(run.exit_status == 7);
        CHECK(run.token == tokens[1]);
        CHECK(run.pid == getpid());
        CHECK(std::string(run.host) == this_host());
        CHECK(run.ended_ms >= run.started_ms);
        CHECK(run.duration_ms >= 0);
        REQUIRE(sqlock_job_history_run(ledger, 1, &run, err.out()) == SQLOCK_OK);
        CHECK(std::string(run.slot) == "a");
        CHECK(std::string(run.outcome) == "succeeded");
        CHECK(std::string(run.message) == "all done");
        CHECK(run.exit_status == 0);
        CHECK(run.token == tokens[0]);
        CHECK(tokens[0] < tokens[1]);
        CHECK(sqlock_job_history_run(ledger, 2, &run, err.out()) == SQLOCK_E_INVALID_ARGUMENT);
        sqlock_job_history_free(ledger);

        // Limit 1: the newest only; a job that never ran: an empty ledger; limit 0: refused.
        REQUIRE(sqlock_db_job_history(db(), name.c_str(), 1, &ledger, err.out()) == SQLOCK_OK);
        CHECK(sqlock_job_history_count(ledger) == 1);
        sqlock_job_history_free(ledger);
        REQUIRE(sqlock_db_job_history(db(), unique_name("never").c_str(), 5, &ledger, err.out()) ==
                SQLOCK_OK);
        CHECK(sqlock_job_history_count(ledger) == 0);
        sqlock_job_history_free(ledger);
        CHECK(sqlock_db_job_history(db(), name.c_str(), 0, &ledger, err.out()) ==
              SQLOCK_E_INVALID_ARGUMENT);
        CHECK(sqlock_job_history_count(nullptr) == 0);
        sqlock_job_history_free(nullptr);
    }
}
