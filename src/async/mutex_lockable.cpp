#include "async/mutex_lockable.hpp"

#include "locks/mutex_access.hpp"

#include <atomic>

namespace sqlock::detail {

namespace {

/// A grant of a slot: reads go to the slot (owned by handle: any thread may read); release()
/// unlocks it; the slot goes back to the lock when the grant is destroyed.
class mutex_grant final : public async_grant {
public:
    mutex_grant(std::shared_ptr<mutex_lockable> owner, std::unique_ptr<mutex> slot)
        : m_owner(std::move(owner)), m_slot(std::move(slot)) {}
    ~mutex_grant() override {
        release(); // no-op when it was
        m_owner->give_back(std::move(m_slot));
    }

    bool owns_lock() const noexcept override { return m_slot->owns_lock(); }
    std::int64_t token() const override { return m_slot->token(); }
    loss_reason lost_reason() const noexcept override { return m_slot->lost_reason(); }
    std::stop_token stop_token() const noexcept override { return m_slot->stop_token(); }
    std::chrono::steady_clock::time_point lease_end() const noexcept override {
        return mutex_access::lease_end(*m_slot);
    }
    const std::string& name() const noexcept override { return m_slot->name(); }
    worker_pool& workers() noexcept override { return m_owner->workers(); }

    loss_reason release() noexcept override {
        if (m_released.exchange(true))
            return m_loss;
        m_slot->unlock(); // never throws; a loss or failure is recorded in the slot
        m_loss = m_slot->last_loss();
        return m_loss;
    }

private:
    const std::shared_ptr<mutex_lockable> m_owner;
    std::unique_ptr<mutex> m_slot;
    std::atomic<bool> m_released{false};
    loss_reason m_loss = loss_reason::none; ///< written once, by the first release()
};

} // namespace

mutex_lockable::mutex_lockable(database db, std::string name, mutex_options options,
                               std::shared_ptr<worker_pool> workers)
    : async_lockable(name, std::move(workers)), m_db(std::move(db)), m_options(std::move(options)) {
    give_back(take_slot()); // validates name and options now, like sqlock::mutex
}

std::unique_ptr<mutex> mutex_lockable::take_slot() {
    {
        std::lock_guard lock(m_slots_mutex);
        if (!m_free.empty()) {
            auto slot = std::move(m_free.back());
            m_free.pop_back();
            return slot;
        }
    }
    auto slot = std::make_unique<mutex>(m_db, name(), m_options);
    mutex_access::own_by_handle(*slot);
    return slot;
}

void mutex_lockable::give_back(std::unique_ptr<mutex> slot) noexcept {
    if (!slot)
        return;
    std::lock_guard lock(m_slots_mutex);
    try {
        m_free.push_back(std::move(slot));
    } catch (...) {
        // out of memory: the slot is destroyed instead
    }
}

std::shared_ptr<async_grant> mutex_lockable::acquire(acquire_mode,
                                                     std::chrono::steady_clock::time_point deadline,
                                                     const std::stop_token& stop) {
    auto slot = take_slot();
    bool granted = false;
    try {
        granted = mutex_access::try_lock_cancellable(*slot, deadline, stop);
    } catch (...) {
        give_back(std::move(slot));
        throw;
    }
    if (!granted) {
        give_back(std::move(slot));
        return nullptr;
    }
    return std::make_shared<mutex_grant>(shared_from_this(), std::move(slot));
}

} // namespace sqlock::detail
