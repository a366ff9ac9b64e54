// The C API's semaphore, reader-writer lock, leader election and scheduled job.
#include "fixture.hpp"

#include <atomic>
#include <cstddef>
#include <cstring>
#include <set>
#include <thread>

using namespace capi_test;
using namespace std::chrono_literals;

namespace {

struct semaphore_handle {
    sqlock_semaphore* s = nullptr;
    semaphore_handle(const std::string& name, std::int64_t permits) {
        error_slot err;
        const auto o = opts();
        REQUIRE_MESSAGE(sqlock_semaphore_open(&s, db(), name.c_str(), permits, &o, err.out()) ==
                            SQLOCK_OK,
                        err.message());
    }
    ~semaphore_handle() { sqlock_semaphore_close(s); }
    semaphore_handle(const semaphore_handle&) = delete;
    semaphore_handle& operator=(const semaphore_handle&) = delete;
};

struct shared_handle {
    sqlock_shared_mutex* m = nullptr;
    explicit shared_handle(const std::string& name) {
        error_slot err;
        const auto o = opts();
        REQUIRE_MESSAGE(sqlock_shared_mutex_open(&m, db(), name.c_str(), 4, &o, err.out()) ==
                            SQLOCK_OK,
                        err.message());
    }
    ~shared_handle() { sqlock_shared_mutex_close(m); }
    shared_handle(const shared_handle&) = delete;
    shared_handle& operator=(const shared_handle&) = delete;
};

struct leader_handle {
    sqlock_leader* l = nullptr;
    explicit leader_handle(const std::string& name, const sqlock_leader_options* o = nullptr) {
        error_slot err;
        REQUIRE_MESSAGE(sqlock_leader_open(&l, db(), name.c_str(), o, err.out()) == SQLOCK_OK,
                        err.message());
    }
    ~leader_handle() { sqlock_leader_close(l); }
    leader_handle(const leader_handle&) = delete;
    leader_handle& operator=(const leader_handle&) = delete;
};

/// Runs `f` on a thread of its own (grants belong to the thread that takes them).
template <class F>
void on_thread(F f) {
    std::thread(f).join();
}

} // namespace

TEST_SUITE("semaphore") {

    TEST_CASE("semaphore: N permits with their own tokens, the N+1st waits, release frees one") {
        const auto name = unique_name("sem");
        semaphore_handle a(name, 2), b(name, 2), c(name, 2);
        std::int64_t ta = 0, tb = 0, pa = -1, pb = -1;
        error_slot err;
        REQUIRE(sqlock_semaphore_acquire(a.s, 5000, nullptr, &ta, err.out()) == SQLOCK_OK);
        REQUIRE(sqlock_semaphore_permit(a.s, &pa, err.out()) == SQLOCK_OK);
        on_thread([&] {
            error_slot e;
            REQUIRE(sqlock_semaphore_acquire(b.s, 5000, nullptr, &tb, e.out()) == SQLOCK_OK);
            REQUIRE(sqlock_semaphore_permit(b.s, &pb, e.out()) == SQLOCK_OK);
            CHECK(sqlock_semaphore_owns(b.s) == 1);
            // A third holder is refused while both permits are taken.
            CHECK(sqlock_semaphore_acquire(c.s, 0, nullptr, nullptr, e.out()) ==
                  SQLOCK_NOT_GRANTED);
            CHECK(sqlock_semaphore_release(b.s, e.out()) == SQLOCK_OK);
        });
        CHECK(ta > 0);
        CHECK(tb > 0);
        CHECK(std::set<std::int64_t>{pa, pb} == std::set<std::int64_t>{0, 1});
        std::int64_t tc = 0;
        on_thread([&] {
            error_slot e;
            CHECK(sqlock_semaphore_acquire(c.s, 5000, nullptr, &tc, e.out()) == SQLOCK_OK);
            CHECK(sqlock_semaphore_release(c.s, e.out()) == SQLOCK_OK);
        });
        CHECK(tc > tb); // the permit b gave back, granted again: a greater token
        CHECK(sqlock_semaphore_release(a.s, err.out()) == SQLOCK_OK);
        CHECK(sqlock_semaphore_release(a.s, err.out()) == SQLOCK_E_INVALID_ARGUMENT);
        CHECK(sqlock_semaphore_permit(a.s, &pa, err.out()) == SQLOCK_E_LOCK_LOST);
    }

    TEST_CASE("semaphore: a wait cancelled from another thread holds nothing") {
        const auto name = unique_name("sem-cancel");
        semaphore_handle holder(name, 1), waiter(name, 1), next(name, 1);
        REQUIRE(sqlock_semaphore_acquire(holder.s, 5000, nullptr, nullptr, nullptr) == SQLOCK_OK);
        sqlock_cancel* cancel = nullptr;
        REQUIRE(sqlock_cancel_new(&cancel, nullptr) == SQLOCK_OK);
        std::atomic<int> rc{1000};
        std::thread t([&] {
            rc = sqlock_semaphore_acquire(waiter.s, SQLOCK_WAIT_FOREVER, cancel, nullptr, nullptr);
            CHECK(sqlock_semaphore_owns(waiter.s) == 0);
        });
        std::this_thread::sleep_for(400ms);
        sqlock_cancel_request(cancel);
        t.join();
        sqlock_cancel_free(cancel);
        CHECK(rc.load() == SQLOCK_E_CANCELED);
        CHECK(sqlock_semaphore_release(holder.s, nullptr) == SQLOCK_OK);
        on_thread([&] {
            CHECK(sqlock_semaphore_acquire(next.s, 5000, nullptr, nullptr, nullptr) == SQLOCK_OK);
            CHECK(sqlock_semaphore_release(next.s, nullptr) == SQLOCK_OK);
        });
    }
}

TEST_SUITE("shared_mutex") {

    TEST_CASE("shared mutex: readers together, the writer alone, its token above the readers'") {
        const auto name = unique_name("rw");
        shared_handle r1(name), r2(name), w(name);
        std::int64_t t1 = 0, t2 = 0, tw = 0;
        error_slot err;
        REQUIRE(sqlock_shared_mutex_lock_shared(r1.m, 5000, nullptr, &t1, err.out()) == SQLOCK_OK);
        CHECK(sqlock_shared_mutex_owns_shared(r1.m) == 1);
        CHECK(sqlock_shared_mutex_owns(r1.m) == 0);
        on_thread([&] {
            error_slot e;
            REQUIRE(sqlock_shared_mutex_lock_shared(r2.m, 5000, nullptr, &t2, e.out()) ==
                    SQLOCK_OK);
            CHECK(sqlock_shared_mutex_lock(w.m, 0, nullptr, nullptr, e.out()) ==
                  SQLOCK_NOT_GRANTED);
            CHECK(sqlock_shared_mutex_unlock_shared(r2.m, e.out()) == SQLOCK_OK);
        });
        CHECK(sqlock_shared_mutex_unlock_shared(r1.m, err.out()) == SQLOCK_OK);
        on_thread([&] {
            error_slot e;
            REQUIRE(sqlock_shared_mutex_lock(w.m, 5000, nullptr, &tw, e.out()) == SQLOCK_OK);
            CHECK(sqlock_shared_mutex_owns(w.m) == 1);
            CHECK(sqlock_shared_mutex_lock_shared(r1.m, 0, nullptr, nullptr, e.out()) ==
                  SQLOCK_NOT_GRANTED);
            CHECK(sqlock_shared_mutex_unlock(w.m, e.out()) == SQLOCK_OK);
            CHECK(sqlock_shared_mutex_unlock(w.m, e.out()) == SQLOCK_E_INVALID_ARGUMENT);
        });
        CHECK(t1 > 0);
        CHECK(tw > t1);
        CHECK(tw > t2);
    }
}

TEST_SUITE("leader") {

    TEST_CASE("leader election: one leader, its term, the next one's greater term") {
        const auto name = unique_name("leader");
        sqlock_leader_options o;
        sqlock_leader_options_init(&o);
        o.ttl_ms = 5000;
        leader_handle a(name, &o), b(name, &o);
        std::int64_t term_a = 0, term_b = 0;
        error_slot err;
        REQUIRE(sqlock_leader_campaign(a.l, 5000, nullptr, &term_a, err.out()) == SQLOCK_OK);
        CHECK(term_a > 0);
        CHECK(sqlock_leader_is_leader(a.l) == 1);
        CHECK(sqlock_leader_term(a.l) == term_a);
        CHECK(sqlock_leader_campaign(b.l, 0, nullptr, &term_b, err.out()) == SQLOCK_NOT_GRANTED);
        sqlock_leader_info info;
        info.struct_size = sizeof info;
        REQUIRE(sqlock_leader_current(b.l, &info, err.out()) == SQLOCK_OK);
        CHECK(info.has_leader == 1);
        CHECK(info.term == term_a);
        CHECK(info.pid == getpid());
        CHECK(std::string(info.id).find(':') != std::string::npos);
        CHECK(info.remaining_ms > 0);

        // A campaign cancelled from another thread.
        sqlock_cancel* cancel = nullptr;
        REQUIRE(sqlock_cancel_new(&cancel, nullptr) == SQLOCK_OK);
        std::atomic<int> rc{1000};
        std::thread t([&] {
            rc = sqlock_leader_campaign(b.l, SQLOCK_WAIT_FOREVER, cancel, nullptr, nullptr);
        });
        std::this_thread::sleep_for(300ms);
        sqlock_cancel_request(cancel);
        t.join();
        sqlock_cancel_free(cancel);
        CHECK(rc.load() == SQLOCK_E_CANCELED);
        CHECK(sqlock_leader_is_leader(b.l) == 0);

        CHECK(sqlock_leader_resign(a.l, err.out()) == SQLOCK_OK);
        CHECK(sqlock_leader_is_leader(a.l) == 0);
        REQUIRE(sqlock_leader_campaign(b.l, 5000, nullptr, &term_b, err.out()) == SQLOCK_OK);
        CHECK(term_b > term_a);
        CHECK(sqlock_leader_resign(b.l, err.out()) == SQLOCK_OK);
        REQUIRE(sqlock_leader_current(a.l, &info, err.out()) == SQLOCK_OK);
        CHECK(info.has_leader == 0);
    }
}

namespace {

struct job_probe {
    int calls = 0;
    std::int64_t token = 0;
    std::string slot;
    int status = 0;
};

int job_body(const sqlock_job_context* context, void* user) {
    auto& p = *static_cast<job_probe*>(user);
    ++p.calls;
    p.token = context->token;
    p.slot = context->slot;
    if (sqlock_job_stop_requested(context))
        return 99;
    if (p.status != 0)
        sqlock_job_set_message(context, "the job said no");
    return p.status;
}

} // namespace

TEST_SUITE("jobs") {

    TEST_CASE("scheduled job: runs once per slot, a failure is an outcome with its message") {
        sqlock_job_options o;
        sqlock_job_options_init(&o);
        o.period_ms = 3600 * 1000;
        auto lock = opts();
        o.lock = &lock;
        sqlock_job* job = nullptr;
        error_slot err;
        REQUIRE_MESSAGE(sqlock_job_open(&job, db(), unique_name("job").c_str(), &o, err.out()) ==
                            SQLOCK_OK,
                        err.message());
        job_probe probe;
        sqlock_job_result r;
        r.struct_size = sizeof r;
        REQUIRE_MESSAGE(sqlock_job_run(job, job_body, &probe, &r, err.out()) == SQLOCK_OK,
                        err.message());
        CHECK(r.outcome == SQLOCK_JOB_SUCCEEDED);
        CHECK(probe.calls == 1);
        CHECK(r.token == probe.token);
        CHECK(r.token > 0);
        CHECK(std::string(r.slot) == probe.slot);
        REQUIRE(sqlock_job_run(job, job_body, &probe, &r, err.out()) == SQLOCK_OK);
        CHECK(r.outcome == SQLOCK_JOB_SKIPPED);
        CHECK(probe.calls == 1);
        CHECK(r.done_by_pid == getpid());
        sqlock_job_close(job);

        // A slot named by the caller, failing: recorded as failed with the function's message.
        o.period_ms = 0;
        const auto slot = unique_name("slot");
        o.slot = slot.c_str();
        REQUIRE(sqlock_job_open(&job, db(), unique_name("job-fails").c_str(), &o, err.out()) ==
                SQLOCK_OK);
        probe.status = 3;
        REQUIRE(sqlock_job_run(job, job_body, &probe, &r, err.out()) == SQLOCK_OK);
        CHECK(r.outcome == SQLOCK_JOB_FAILED);
        CHECK(r.exit_status == 3);
        CHECK(std::string(r.message) == "the job said no");
        CHECK(std::string(r.slot) == slot);
        sqlock_job_close(job);
    }

    TEST_CASE("list_jobs: every job that fired, with its counts; a short info struct is kept") {
        const auto ok_name = unique_name("listed-ok"), failing_name = unique_name("listed-fails");
        sqlock_job_options o;
        sqlock_job_options_init(&o);
        o.period_ms = 3600 * 1000;
        auto lock = opts();
        o.lock = &lock;
        error_slot err;
        job_probe probe;
        sqlock_job_result r;
        r.struct_size = sizeof r;
        for (const auto* name : {&ok_name, &failing_name}) {
            sqlock_job* job = nullptr;
            REQUIRE(sqlock_job_open(&job, db(), name->c_str(), &o, err.out()) == SQLOCK_OK);
            probe.status = name == &ok_name ? 0 : 3;
            REQUIRE_MESSAGE(sqlock_job_run(job, job_body, &probe, &r, err.out()) == SQLOCK_OK,
                            err.message());
            sqlock_job_close(job);
        }

        sqlock_job_list* list = nullptr;
        REQUIRE_MESSAGE(sqlock_db_list_jobs(db(), &list, err.out()) == SQLOCK_OK, err.message());
        const auto count = sqlock_job_list_count(list);
        int seen = 0;
        for (std::size_t i = 0; i < count; ++i) {
            sqlock_job_info info;
            info.struct_size = sizeof info;
            REQUIRE(sqlock_job_list_job(list, i, &info, err.out()) == SQLOCK_OK);
            const std::string name = info.name;
            if (name != ok_name && name != failing_name)
                continue; // other tests' jobs
            ++seen;
            const bool ok = name == ok_name;
            CHECK(info.period_ms == 3600 * 1000);
            CHECK(std::string(info.last_outcome) == (ok ? "succeeded" : "failed"));
            CHECK(info.succeeded == (ok ? 1 : 0));
            CHECK(info.failed == (ok ? 0 : 1));
            CHECK(info.running == 0);
            CHECK(info.first_fired_ms > 0);
            CHECK(info.last_fired_ms >= info.first_fired_ms);
            CHECK(info.slot_done == (ok ? 1 : 0));
            CHECK((info.last_success_started_ms > 0) == ok);
        }
        CHECK(seen == 2);

        // An older caller's shorter struct: nothing written past its struct_size.
        struct old_info {
            sqlock_job_info head;
        } older;
        std::memset(&older, 0x5a, sizeof older);
        older.head.struct_size = offsetof(sqlock_job_info, last_outcome);
        REQUIRE(count > 0);
        REQUIRE(sqlock_job_list_job(list, 0, &older.head, err.out()) == SQLOCK_OK);
        CHECK(older.head.name != nullptr);
        CHECK(older.head.succeeded == static_cast<std::int64_t>(0x5a5a5a5a5a5a5a5aLL));

        CHECK(sqlock_job_list_job(list, count, nullptr, err.out()) == SQLOCK_E_INVALID_ARGUMENT);
        sqlock_job_info past;
        past.struct_size = sizeof past;
        CHECK(sqlock_job_list_job(list, count, &past, err.out()) == SQLOCK_E_INVALID_ARGUMENT);
        CHECK(sqlock_job_list_count(nullptr) == 0);
        sqlock_job_list_free(list);
        sqlock_job_list_free(nullptr);
    }
}
