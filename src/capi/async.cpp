// The C API's waits without a thread (sqlock.h "Waiting without a thread"): each lock
// handle's asynchronous side is the core's async_lockable (src/async: one local line per
// name, a bounded pool), and an acquire is the core's async_acquire, reported to a C callback.
#include "capi/async.hpp"

#include "async/acquire.hpp"
#include "async/lockable.hpp"
#include "async/primitive_slots.hpp"
#include "capi/async_types.hpp"
#include "capi/errors.hpp"
#include "capi/waiting.hpp"
#include "locks/leader_terms.hpp"

using namespace sqlock::capi;
using sqlock::detail::acquire_mode;
using sqlock::detail::acquire_result;
using sqlock::detail::async_calls;
using sqlock::detail::async_lockable;

namespace sqlock::capi {

namespace {

/// The C API's pool: threads start as names are waited on (SQLOCK_ASYNC_THREADS at most),
/// apart from the C++ default pool, whose 4 threads would hold back a fifth waited-on name.
/// Never destroyed: an exit does not wait for its threads.
const std::shared_ptr<detail::worker_pool>& pool() {
    static const auto* p = new std::shared_ptr<detail::worker_pool>(
        std::make_shared<detail::worker_pool>(SQLOCK_ASYNC_THREADS));
    return *p;
}

/// The side's async_lockable, made on first use. Throws what making it throws.
std::shared_ptr<async_lockable> lockable_of(async_side& side) {
    std::lock_guard lock(side.mutex);
    if (!side.lockable)
        side.lockable = side.make();
    return side.lockable;
}

/// The code of `r`, with the details of a cancel or failure in `error` (owned: freed with
/// sqlock_error_free). Never throws.
int outcome_code(const acquire_result& r, const std::string& what, sqlock_error*& error) noexcept {
    using how = acquire_result::outcome;
    if (r.how == how::granted)
        return SQLOCK_OK;
    if (r.how == how::timed_out)
        return SQLOCK_NOT_GRANTED;
    return guarded(&error, [&]() -> int {
        if (r.how == how::cancelled)
            return fail(&error, SQLOCK_E_CANCELED,
                        ("the wait for " + what + " was cancelled").c_str());
        if (!r.error)
            return fail(&error, SQLOCK_E_INTERNAL, "an acquire failed without an error");
        std::rethrow_exception(r.error);
    });
}

/// The core's report of `a`: records the outcome, gives back a grant nobody will take (the
/// acquire was freed), tells the caller's callback, and drops the completion's reference.
void complete(sqlock_acquire& a, acquire_result r) noexcept {
    sqlock_error* error = nullptr;
    const int code = outcome_code(r, a.what, error);
    std::shared_ptr<detail::async_grant> orphan;
    {
        std::lock_guard lock(a.mutex);
        a.ended = true;
        a.code = code;
        a.error = error;
        if (a.freed)
            orphan = std::move(r.grant);
        else
            a.grant = std::move(r.grant);
    }
    if (orphan)
        async_calls::release(std::move(orphan), nullptr);
    a.done(&a, code, a.user);
    unref(a);
}

} // namespace

void unref(sqlock_acquire& a) noexcept {
    if (a.refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        sqlock_error_free(a.error);
        delete &a;
    }
}

int start_acquire(async_side& side, const char* kind, bool shared, std::int64_t timeout_ms,
                  sqlock_acquire_fn done, void* user, sqlock_acquire** out, sqlock_error** err) {
    return guarded(err, [&] {
        require(reinterpret_cast<const void*>(done), "done");
        require(out, "out");
        auto lockable = lockable_of(side);
        const std::string what = subject{kind, async_calls::name(*lockable)}.text();
        auto a = std::make_unique<sqlock_acquire>(done, user, what);
        auto* raw = a.get();
        const auto mode = shared ? acquire_mode::shared : acquire_mode::exclusive;
        a->op = async_calls::prepare(lockable, mode, deadline_of(timeout_ms),
                                     [raw](acquire_result r) { complete(*raw, std::move(r)); });
        const auto op = a->op;
        async_calls::start(op); // may report at once (the pool could not take it)
        *out = a.release();
        return SQLOCK_OK;
    });
}

async_side::~async_side() {
    if (lockable)
        async_calls::cancel_all(*lockable);
}

namespace {
/// The C API has no executor of its caller's: its acquires run on its pool's threads on every
/// backend (PostgreSQL's fibers need an executor to run on).
const asio::any_io_executor no_executor{};
} // namespace

async_maker mutex_maker(const database& db, const std::string& name, const mutex_options& o) {
    return [db, name, o] {
        return detail::make_mutex_lockable(db, name, o, pool(), no_executor);
    };
}

async_maker semaphore_maker(const database& db, const std::string& name, std::int64_t permits,
                            const mutex_options& o) {
    return [db, name, permits, o] {
        return detail::make_semaphore_lockable(db, name, permits, o, pool(), no_executor);
    };
}

async_maker shared_mutex_maker(const database& db, const std::string& name,
                               std::int64_t max_readers, const mutex_options& o) {
    return [db, name, max_readers, o] {
        return detail::make_shared_mutex_lockable(db, name, o, max_readers, pool(), no_executor);
    };
}

async_maker leader_maker(const database& db, const std::string& name, const leader_options& o) {
    return [db, name, m = detail::term_options(o)] {
        return detail::make_mutex_lockable(db, name, m, pool(), no_executor);
    };
}

} // namespace sqlock::capi

extern "C" {

void sqlock_acquire_cancel(sqlock_acquire* acquire) {
    if (!acquire)
        return;
    std::shared_ptr<sqlock::detail::async_acquire> op;
    {
        std::lock_guard lock(acquire->mutex);
        if (!acquire->ended)
            op = acquire->op;
    }
    if (op)
        async_calls::cancel(*op); // may report here, so not under the acquire's mutex
}

int sqlock_acquire_result(sqlock_acquire* acquire, sqlock_grant** grant, sqlock_error** err) {
    return guarded(err, [&]() -> int {
        require(acquire, "acquire");
        std::lock_guard lock(acquire->mutex);
        if (!acquire->ended)
            throw sqlock::error(sqlock::errc::invalid_argument,
                                "the acquire of " + acquire->what + " is still in flight");
        if (acquire->code == SQLOCK_OK) {
            require(grant, "grant");
            if (!acquire->grant)
                throw sqlock::error(sqlock::errc::invalid_argument,
                                    "the grant of " + acquire->what + " was taken already");
            auto g = std::make_unique<sqlock_grant>();
            g->grant = std::move(acquire->grant);
            *grant = g.release();
            return SQLOCK_OK;
        }
        if (err && acquire->error)
            *err = copy_error(*acquire->error);
        return acquire->code;
    });
}

void sqlock_acquire_free(sqlock_acquire* acquire) {
    if (!acquire)
        return;
    std::shared_ptr<sqlock::detail::async_acquire> op;
    std::shared_ptr<sqlock::detail::async_grant> orphan;
    {
        std::lock_guard lock(acquire->mutex);
        acquire->freed = true;
        if (!acquire->ended)
            op = acquire->op;
        orphan = std::move(acquire->grant);
    }
    if (op)
        async_calls::cancel(*op);
    if (orphan)
        async_calls::release(std::move(orphan), nullptr);
    unref(*acquire);
}

} // extern "C"
