#include "async/primitive_slots.hpp"

#include "async/local_line.hpp"
#include "async/slot_lockable.hpp"
#include "database/database_impl.hpp"
#include "locks/handle_access.hpp"
#include "locks/mutex_access.hpp"
#include "sqlock/semaphore.hpp"
#include "sqlock/shared_mutex.hpp"

namespace sqlock::detail {

namespace {

struct mutex_slot {
    using slot_type = mutex;
    static bool lock(mutex& m, acquire_mode, std::chrono::steady_clock::time_point deadline,
                     const std::stop_token& stop) {
        return mutex_access::try_lock_cancellable(m, deadline, stop);
    }
    static void unlock(mutex& m, acquire_mode) noexcept { m.unlock(); }
    static bool owns(const mutex& m, acquire_mode) noexcept { return m.owns_lock(); }
    static std::chrono::steady_clock::time_point lease_end(const mutex& m) noexcept {
        return mutex_access::lease_end(m);
    }
};

struct semaphore_slot {
    using slot_type = semaphore;
    static bool lock(semaphore& s, acquire_mode, std::chrono::steady_clock::time_point deadline,
                     const std::stop_token& stop) {
        return handle_access::try_lock_cancellable(s, deadline, stop);
    }
    static void unlock(semaphore& s, acquire_mode) noexcept { s.unlock(); }
    static bool owns(const semaphore& s, acquire_mode) noexcept { return s.owns_lock(); }
    static std::int64_t permit(const semaphore& s) noexcept {
        try {
            return s.permit();
        } catch (...) {
            return -1; // released or lost meanwhile
        }
    }
    static std::chrono::steady_clock::time_point lease_end(const semaphore& s) noexcept {
        return handle_access::lease_end(s);
    }
};

struct shared_mutex_slot {
    using slot_type = shared_mutex;
    static bool lock(shared_mutex& m, acquire_mode mode,
                     std::chrono::steady_clock::time_point deadline, const std::stop_token& stop) {
        return mode == acquire_mode::shared
                   ? handle_access::try_lock_shared_cancellable(m, deadline, stop)
                   : handle_access::try_lock_cancellable(m, deadline, stop);
    }
    static void unlock(shared_mutex& m, acquire_mode mode) noexcept {
        if (mode == acquire_mode::shared)
            m.unlock_shared();
        else
            m.unlock();
    }
    static bool owns(const shared_mutex& m, acquire_mode mode) noexcept {
        return mode == acquire_mode::shared ? m.owns_shared() : m.owns_lock();
    }
    static std::chrono::steady_clock::time_point lease_end(const shared_mutex& m) noexcept {
        return handle_access::lease_end(m);
    }
};

/// `executor` when `db`'s sessions wait through the wait hook (acquires run on its fibers),
/// else none (on worker threads).
std::optional<asio::any_io_executor> fiber_executor(const database& db,
                                                    const asio::any_io_executor& executor) {
    if (impl_of(db).waits_through_hook() && executor)
        return executor;
    return std::nullopt;
}

/// A count of permits or readers as units of a local line (the slot's constructor has
/// validated it by then: at least 1).
std::size_t to_units(std::int64_t count) {
    return count < 1 ? 1 : static_cast<std::size_t>(count);
}

} // namespace

std::shared_ptr<async_lockable> make_mutex_lockable(database db, std::string name,
                                                    mutex_options options,
                                                    std::shared_ptr<worker_pool> workers,
                                                    const asio::any_io_executor& executor) {
    auto make = [db, name, options] {
        auto slot = std::make_unique<mutex>(db, name, options);
        mutex_access::own_by_handle(*slot);
        return slot;
    };
    auto line = local_line::of(&impl_of(db), "mutex " + name, 1);
    const auto fibers = fiber_executor(db, executor);
    return std::make_shared<slot_lockable<mutex_slot>>(name, std::move(workers), std::move(make),
                                                       std::move(line), 1, fibers);
}

std::shared_ptr<async_lockable> make_semaphore_lockable(database db, std::string name,
                                                        std::int64_t permits, mutex_options options,
                                                        std::shared_ptr<worker_pool> workers,
                                                        const asio::any_io_executor& executor) {
    auto make = [db, name, permits, options] {
        auto slot = std::make_unique<semaphore>(db, name, permits, options);
        handle_access::own_by_handle(*slot);
        return slot;
    };
    auto line = local_line::of(&impl_of(db), "semaphore " + name, to_units(permits));
    const auto fibers = fiber_executor(db, executor);
    return std::make_shared<slot_lockable<semaphore_slot>>(
        name, std::move(workers), std::move(make), std::move(line), 1, fibers);
}

std::shared_ptr<async_lockable> make_shared_mutex_lockable(database db, std::string name,
                                                           mutex_options options,
                                                           std::int64_t max_readers,
                                                           std::shared_ptr<worker_pool> workers,
                                                           const asio::any_io_executor& executor) {
    auto make = [db, name, options, max_readers] {
        auto slot = std::make_unique<shared_mutex>(db, name, options, max_readers);
        handle_access::own_by_handle(*slot);
        return slot;
    };
    const auto readers = to_units(max_readers);
    auto line = local_line::of(&impl_of(db), "shared_mutex " + name, readers);
    const auto fibers = fiber_executor(db, executor);
    return std::make_shared<slot_lockable<shared_mutex_slot>>(
        name, std::move(workers), std::move(make), std::move(line), readers, fibers);
}

} // namespace sqlock::detail
