// The C API's waits without a thread (C API 1.2: the *_start functions), every backend and
// strategy: grants reported to a callback, owned by an object; many waiters on few names cost
// a thread per name, not per waiter; cancels and frees never leave a lock held.
#include "fixture.hpp"

#include <atomic>
#include <dirent.h>
#include <map>
#include <memory>
#include <thread>

using namespace capi_test;
using namespace std::chrono_literals;

namespace {

/// One acquire's outcome as its callback told it (and on which thread).
struct outcome {
    std::mutex m;
    std::condition_variable cv;
    int calls = 0;
    int code = 1000;
    sqlock_acquire* acquire = nullptr;

    static void done(sqlock_acquire* a, int code, void* user) {
        auto* o = static_cast<outcome*>(user);
        std::lock_guard lock(o->m);
        ++o->calls;
        o->code = code;
        o->acquire = a;
        o->cv.notify_all();
    }
    /// The code once reported (1000 when not within `timeout`).
    int wait(std::chrono::milliseconds timeout = 30s) {
        std::unique_lock lock(m);
        cv.wait_for(lock, timeout, [&] { return calls > 0; });
        return calls > 0 ? code : 1000;
    }
    bool reported() {
        std::lock_guard lock(m);
        return calls > 0;
    }
};

/// An acquire freed at scope exit.
struct started {
    sqlock_acquire* a = nullptr;
    ~started() { sqlock_acquire_free(a); }
};

/// Starts an acquire of `m` reported to `o`.
void start(sqlock_mutex* m, std::int64_t timeout_ms, outcome& o, started& s) {
    error_slot err;
    REQUIRE_MESSAGE(sqlock_mutex_lock_start(m, timeout_ms, outcome::done, &o, &s.a, err.out()) ==
                        SQLOCK_OK,
                    err.message());
}

/// The grant of an acquire that reported SQLOCK_OK.
sqlock_grant* grant_of(sqlock_acquire* a) {
    sqlock_grant* g = nullptr;
    error_slot err;
    REQUIRE_MESSAGE(sqlock_acquire_result(a, &g, err.out()) == SQLOCK_OK, err.message());
    return g;
}

std::int64_t token_of(const sqlock_grant* g) {
    std::int64_t t = 0;
    REQUIRE(sqlock_grant_token(g, &t, nullptr) == SQLOCK_OK);
    return t;
}

/// Whether a fresh handle gets `name` at once (the lock is free).
bool free_now(const std::string& name) {
    mutex_handle probe(name, opts());
    if (sqlock_mutex_lock(probe.m, 5000, nullptr, nullptr, nullptr) != SQLOCK_OK)
        return false;
    return sqlock_mutex_unlock(probe.m, nullptr) == SQLOCK_OK;
}

int threads_now() {
    int n = 0;
    if (DIR* d = opendir("/proc/self/task")) {
        while (const dirent* e = readdir(d))
            n += e->d_name[0] != '.';
        closedir(d);
    }
    return n;
}

} // namespace

TEST_SUITE("common") {

    TEST_CASE("start: a grant reported to the callback, owned by its object, released") {
        const auto name = unique_name("start");
        mutex_handle h(name, opts());
        outcome o;
        started s;
        start(h.m, 5000, o, s);
        REQUIRE(o.wait() == SQLOCK_OK);
        CHECK(o.acquire == s.a);
        sqlock_grant* g = grant_of(s.a);
        CHECK(token_of(g) > 0);
        CHECK(sqlock_grant_owns(g) == 1);
        CHECK(sqlock_grant_lost_reason(g) == SQLOCK_LOSS_NONE);
        CHECK(sqlock_mutex_owns(h.m) == 0); // the handle's threads hold nothing
        sqlock_grant* again = nullptr;
        error_slot err;
        CHECK(sqlock_acquire_result(s.a, &again, err.out()) == SQLOCK_E_INVALID_ARGUMENT);
        std::int64_t permit = 0;
        CHECK(sqlock_grant_permit(g, &permit, nullptr) == SQLOCK_E_INVALID_ARGUMENT);
        mutex_handle probe(name, opts());
        CHECK(sqlock_mutex_lock(probe.m, 0, nullptr, nullptr, nullptr) == SQLOCK_NOT_GRANTED);
        // Released on another thread than the one the callback ran on: any thread may.
        std::thread([&] { CHECK(sqlock_grant_release(g, nullptr) == SQLOCK_OK); }).join();
        CHECK(free_now(name));
        CHECK(o.calls == 1);
    }

    TEST_CASE("a held lock: an acquire with a timeout reports NOT_GRANTED; 0 is one attempt") {
        const auto name = unique_name("start-timeout");
        mutex_handle holder(name, opts()), waiter(name, opts());
        REQUIRE(sqlock_mutex_lock(holder.m, 0, nullptr, nullptr, nullptr) == SQLOCK_OK);
        outcome o1, o2;
        started s1, s2;
        const auto began = std::chrono::steady_clock::now();
        start(waiter.m, 300, o1, s1);
        start(waiter.m, 0, o2, s2);
        CHECK(o2.wait() == SQLOCK_NOT_GRANTED);
        CHECK(o1.wait() == SQLOCK_NOT_GRANTED);
        CHECK(std::chrono::steady_clock::now() - began >= 300ms);
        error_slot err;
        CHECK(sqlock_acquire_result(s1.a, nullptr, err.out()) == SQLOCK_NOT_GRANTED);
        CHECK(err.get() == nullptr);
        CHECK(sqlock_mutex_unlock(holder.m, nullptr) == SQLOCK_OK);
    }

    TEST_CASE("cancel: a waiting acquire reports CANCELED before cancel returns; nothing held") {
        const auto name = unique_name("start-cancel");
        mutex_handle holder(name, opts()), waiter(name, opts());
        REQUIRE(sqlock_mutex_lock(holder.m, 0, nullptr, nullptr, nullptr) == SQLOCK_OK);
        outcome head, queued;
        started s1, s2;
        start(waiter.m, SQLOCK_WAIT_FOREVER, head, s1);   // the line's head: in the lock call
        start(waiter.m, SQLOCK_WAIT_FOREVER, queued, s2); // behind it in this process's line
        std::this_thread::sleep_for(300ms);               // both are waiting
        CHECK(!head.reported());
        sqlock_acquire_cancel(s2.a);
        CHECK(queued.reported()); // still in line: ended at once
        CHECK(queued.code == SQLOCK_E_CANCELED);
        const auto requested = std::chrono::steady_clock::now();
        sqlock_acquire_cancel(s1.a);
        CHECK(head.wait() == SQLOCK_E_CANCELED); // in the lock call: soon
        CHECK(std::chrono::steady_clock::now() - requested < 3s);
        error_slot err;
        CHECK(sqlock_acquire_result(s1.a, nullptr, err.out()) == SQLOCK_E_CANCELED);
        CHECK(err.message().find("cancelled") != std::string::npos);
        CHECK(sqlock_mutex_unlock(holder.m, nullptr) == SQLOCK_OK);
        CHECK(free_now(name));
    }

    TEST_CASE("a cancel racing the grant, and a free before the outcome: never left held") {
        const auto name = unique_name("start-race");
        mutex_handle holder(name, opts()), waiter(name, opts());
        for (int round = 0; round < 6; ++round) {
            REQUIRE(sqlock_mutex_lock(holder.m, 5000, nullptr, nullptr, nullptr) == SQLOCK_OK);
            auto o = std::make_unique<outcome>();
            started s;
            start(waiter.m, 20000, *o, s);
            std::this_thread::sleep_for(std::chrono::milliseconds(100 + 30 * round));
            CHECK(sqlock_mutex_unlock(holder.m, nullptr) == SQLOCK_OK);
            if (round % 2 == 0) {
                sqlock_acquire_cancel(s.a);
                const int rc = o->wait();
                CHECK((rc == SQLOCK_OK || rc == SQLOCK_E_CANCELED));
                if (rc == SQLOCK_OK) // granted before the cancel: ours to release
                    CHECK(sqlock_grant_release(grant_of(s.a), nullptr) == SQLOCK_OK);
            } else {
                sqlock_acquire_free(s.a); // a grant nobody took goes back
                s.a = nullptr;
                CHECK(o->wait() != 1000); // the callback still runs, once
            }
            CHECK(eventually([&] { return free_now(name); }, 10s));
        }
    }

    TEST_CASE("100 acquires on 10 names: all granted, one holder per name, threads per name") {
        constexpr std::size_t names = 10, per_name = 10;
        std::vector<std::string> lock_names;
        std::vector<std::unique_ptr<mutex_handle>> handles;
        for (std::size_t n = 0; n < names; ++n)
            lock_names.push_back(unique_name("many-" + std::to_string(n)));
        std::vector<std::unique_ptr<mutex_handle>> holders;
        for (std::size_t n = 0; n < names; ++n) { // held, so that every acquire queues
            holders.push_back(std::make_unique<mutex_handle>(lock_names[n], opts()));
            REQUIRE(sqlock_mutex_lock(holders.back()->m, 0, nullptr, nullptr, nullptr) ==
                    SQLOCK_OK);
        }
        const int threads_before = threads_now();
        std::vector<std::unique_ptr<outcome>> outcomes;
        std::vector<started> acquires(names * per_name);
        // Half of the acquires (every name has its head then), then the other half: waiting
        // costs threads per name, so the second half adds none (SQLite select_for_update
        // keeps a few more per name than the lease strategies).
        int threads_half = 0;
        for (std::size_t i = 0; i < names * per_name; ++i) {
            if (i == names * per_name / 2) {
                std::this_thread::sleep_for(500ms);
                threads_half = threads_now();
            }
            handles.push_back(std::make_unique<mutex_handle>(lock_names[i % names], opts()));
            outcomes.push_back(std::make_unique<outcome>());
            start(handles.back()->m, 60000, *outcomes.back(), acquires[i]);
        }
        std::this_thread::sleep_for(500ms);
        const int threads_waiting = threads_now();
        MESSAGE("threads: " << threads_before << " before, " << threads_half << " with 50 acquires "
                            << "waiting on 10 names, " << threads_waiting << " with 100");
        CHECK(threads_waiting - threads_half <= 2); // not one per waiter
        CHECK(threads_waiting - threads_before <= 2 * static_cast<int>(names) + 6);
        for (auto& h : holders)
            CHECK(sqlock_mutex_unlock(h->m, nullptr) == SQLOCK_OK);
        // Each grant is released as soon as it is seen; a name's tokens rise grant by grant.
        std::map<std::size_t, std::int64_t> last_token;
        std::size_t granted = 0;
        const auto deadline = std::chrono::steady_clock::now() + 60s;
        while (granted < names * per_name && std::chrono::steady_clock::now() < deadline) {
            bool any = false;
            for (std::size_t i = 0; i < names * per_name; ++i) {
                auto& o = *outcomes[i];
                if (!acquires[i].a || !o.reported())
                    continue;
                REQUIRE(o.code == SQLOCK_OK);
                sqlock_grant* g = grant_of(acquires[i].a);
                const auto t = token_of(g);
                CHECK(t > last_token[i % names]);
                last_token[i % names] = t;
                CHECK(sqlock_grant_release(g, nullptr) == SQLOCK_OK);
                sqlock_acquire_free(acquires[i].a);
                acquires[i].a = nullptr;
                ++granted;
                any = true;
            }
            if (!any)
                std::this_thread::sleep_for(2ms);
        }
        CHECK(granted == names * per_name);
    }

    TEST_CASE("every primitive starts: semaphore permits, shared and exclusive, a leader's term") {
        const auto name = unique_name("start-kinds");
        auto o = opts();
        error_slot err;
        sqlock_semaphore* sem = nullptr;
        REQUIRE(sqlock_semaphore_open(&sem, db(), (name + "-s").c_str(), 2, &o, err.out()) ==
                SQLOCK_OK);
        outcome so;
        started ss;
        REQUIRE(sqlock_semaphore_acquire_start(sem, 5000, outcome::done, &so, &ss.a, err.out()) ==
                SQLOCK_OK);
        REQUIRE(so.wait() == SQLOCK_OK);
        sqlock_grant* sg = grant_of(ss.a);
        std::int64_t permit = -1;
        CHECK(sqlock_grant_permit(sg, &permit, nullptr) == SQLOCK_OK);
        CHECK((permit == 0 || permit == 1));
        CHECK(sqlock_grant_release(sg, nullptr) == SQLOCK_OK);
        sqlock_semaphore_close(sem);

        sqlock_shared_mutex* rw = nullptr;
        REQUIRE(sqlock_shared_mutex_open(&rw, db(), (name + "-rw").c_str(), 0, &o, err.out()) ==
                SQLOCK_OK);
        outcome r1, r2, w;
        started s1, s2, sw;
        REQUIRE(sqlock_shared_mutex_lock_shared_start(rw, 5000, outcome::done, &r1, &s1.a,
                                                      err.out()) == SQLOCK_OK);
        REQUIRE(sqlock_shared_mutex_lock_shared_start(rw, 5000, outcome::done, &r2, &s2.a,
                                                      err.out()) == SQLOCK_OK);
        REQUIRE(r1.wait() == SQLOCK_OK);
        REQUIRE(r2.wait() == SQLOCK_OK); // two readers at once
        REQUIRE(sqlock_shared_mutex_lock_start(rw, 300, outcome::done, &w, &sw.a, err.out()) ==
                SQLOCK_OK);
        CHECK(w.wait() == SQLOCK_NOT_GRANTED); // the readers hold it
        CHECK(sqlock_grant_release(grant_of(s1.a), nullptr) == SQLOCK_OK);
        CHECK(sqlock_grant_release(grant_of(s2.a), nullptr) == SQLOCK_OK);
        sqlock_shared_mutex_close(rw);

        sqlock_leader* le = nullptr;
        REQUIRE(sqlock_leader_open(&le, db(), (name + "-le").c_str(), nullptr, err.out()) ==
                SQLOCK_OK);
        outcome lo;
        started ls;
        REQUIRE(sqlock_leader_campaign_start(le, 5000, outcome::done, &lo, &ls.a, err.out()) ==
                SQLOCK_OK);
        REQUIRE(lo.wait() == SQLOCK_OK);
        sqlock_grant* term = grant_of(ls.a);
        CHECK(token_of(term) > 0);
        sqlock_leader_info info{};
        info.struct_size = sizeof info;
        REQUIRE(sqlock_leader_current(le, &info, err.out()) == SQLOCK_OK);
        CHECK(info.has_leader == 1);
        CHECK(info.term == token_of(term));
        CHECK(sqlock_grant_release(term, nullptr) == SQLOCK_OK);
        sqlock_leader_close(le);
    }

    TEST_CASE("closing the handle cancels its waiting acquires; NULLs are refused") {
        const auto name = unique_name("start-close");
        mutex_handle holder(name, opts());
        REQUIRE(sqlock_mutex_lock(holder.m, 0, nullptr, nullptr, nullptr) == SQLOCK_OK);
        sqlock_mutex* waiter = nullptr;
        auto o = opts();
        REQUIRE(sqlock_mutex_open(&waiter, db(), name.c_str(), &o, nullptr) == SQLOCK_OK);
        outcome w;
        started s;
        start(waiter, SQLOCK_WAIT_FOREVER, w, s);
        std::this_thread::sleep_for(200ms);
        sqlock_mutex_close(waiter);
        CHECK(w.wait() == SQLOCK_E_CANCELED);
        CHECK(sqlock_mutex_unlock(holder.m, nullptr) == SQLOCK_OK);
        CHECK(free_now(name));
        error_slot err;
        sqlock_acquire* a = nullptr;
        CHECK(sqlock_mutex_lock_start(nullptr, 0, outcome::done, nullptr, &a, err.out()) ==
              SQLOCK_E_INVALID_ARGUMENT);
        CHECK(sqlock_mutex_lock_start(holder.m, 0, nullptr, nullptr, &a, err.out()) ==
              SQLOCK_E_INVALID_ARGUMENT);
        CHECK(sqlock_grant_owns(nullptr) == 0);
        sqlock_acquire_cancel(nullptr);
        sqlock_acquire_free(nullptr);
        sqlock_grant_release_start(nullptr, nullptr, nullptr);
    }
}
