// Internal: the asynchronous side of every primitive, written once. Its grants are those of
// synchronous lock objects whose grants belong to the object rather than a thread
// (mutex_access / handle_access::own_by_handle): one such "slot" per grant in flight, so every
// grant has an owner id of its own and none re-enters another. Slots are kept for reuse, with
// what a lock object remembers between its calls (its last token, the leases it saw, a release
// left to retry). A `Traits` type says how to lock, read and unlock one kind of slot (see
// primitive_slots.cpp).
#pragma once

#include "async/lockable.hpp"

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <vector>

namespace sqlock::detail {

template <class Traits>
class slot_lockable : public async_lockable,
                      public std::enable_shared_from_this<slot_lockable<Traits>> {
public:
    using slot_type = typename Traits::slot_type;
    using factory = std::function<std::unique_ptr<slot_type>()>;

    /// `make` makes one slot (owned by handle), validating like the primitive's constructor;
    /// the first is made now, so that a bad name or option throws here. `line` and
    /// `exclusive_units` as for async_lockable. Does not contact the database.
    slot_lockable(std::string name, std::shared_ptr<worker_pool> workers, factory make,
                  std::shared_ptr<local_line> line, std::size_t exclusive_units,
                  std::optional<asio::any_io_executor> fibers)
        : async_lockable(std::move(name), std::move(workers), std::move(line), exclusive_units,
                         std::move(fibers)),
          m_make(std::move(make)) {
        give_back(take_slot());
    }

    std::shared_ptr<async_grant> acquire(acquire_mode mode,
                                         std::chrono::steady_clock::time_point deadline,
                                         const std::stop_token& stop) override {
        auto slot = take_slot();
        bool granted = false;
        try {
            granted = Traits::lock(*slot, mode, deadline, stop);
        } catch (...) {
            give_back(std::move(slot));
            throw;
        }
        if (!granted) {
            give_back(std::move(slot));
            return nullptr;
        }
        return std::make_shared<grant>(this->shared_from_this(), std::move(slot), mode);
    }

private:
    /// A grant of a slot: reads go to the slot (owned by handle: any thread may read);
    /// release() unlocks it; the slot goes back to the lock when the grant is destroyed. Its
    /// units of the local line are held from its making until it is released or lost.
    class grant final : public async_grant {
    public:
        grant(std::shared_ptr<slot_lockable> owner, std::unique_ptr<slot_type> slot,
              acquire_mode mode)
            : m_owner(std::move(owner)), m_slot(std::move(slot)), m_mode(mode),
              m_units(m_owner->units(mode)) {
            m_owner->line().hold(m_units);
            m_on_loss.emplace(m_slot->stop_token(), [this] { free_units(); });
        }
        ~grant() override {
            release(); // no-op when it was
            m_on_loss.reset();
            m_owner->give_back(std::move(m_slot));
        }

        bool owns_lock() const noexcept override { return Traits::owns(*m_slot, m_mode); }
        std::int64_t token() const override { return m_slot->token(); }
        loss_reason lost_reason() const noexcept override { return m_slot->lost_reason(); }
        std::stop_token stop_token() const noexcept override { return m_slot->stop_token(); }
        std::chrono::steady_clock::time_point lease_end() const noexcept override {
            return Traits::lease_end(*m_slot);
        }
        const std::string& name() const noexcept override { return m_slot->name(); }
        std::int64_t permit() const noexcept override {
            if constexpr (requires(const slot_type& s) { Traits::permit(s); })
                return Traits::permit(*m_slot);
            else
                return -1;
        }
        worker_pool& workers() noexcept override { return m_owner->workers(); }
        const asio::any_io_executor* fibers() const noexcept override { return m_owner->fibers(); }

        loss_reason release() noexcept override {
            if (m_released.exchange(true))
                return m_loss;
            Traits::unlock(*m_slot, m_mode); // never throws; a loss is recorded in the slot
            m_loss = m_slot->last_loss();
            free_units(); // after the release: the next in line finds the lock free
            return m_loss;
        }

    private:
        /// Gives the grant's units back to the local line, once (released or lost).
        void free_units() noexcept {
            if (!m_units_freed.exchange(true))
                m_owner->line().free(m_units);
        }

        const std::shared_ptr<slot_lockable> m_owner;
        std::unique_ptr<slot_type> m_slot;
        const acquire_mode m_mode;
        const std::size_t m_units;
        std::atomic<bool> m_units_freed{false};
        std::optional<std::stop_callback<std::function<void()>>> m_on_loss;
        std::atomic<bool> m_released{false};
        loss_reason m_loss = loss_reason::none; ///< written once, by the first release()
    };

    /// Takes a free slot, or makes one. Throws what making a slot throws.
    std::unique_ptr<slot_type> take_slot() {
        {
            std::lock_guard lock(m_slots_mutex);
            if (!m_free.empty()) {
                auto slot = std::move(m_free.back());
                m_free.pop_back();
                return slot;
            }
        }
        return m_make();
    }
    /// Keeps `slot` (holding nothing) for the next acquire. Never throws.
    void give_back(std::unique_ptr<slot_type> slot) noexcept {
        if (!slot)
            return;
        std::lock_guard lock(m_slots_mutex);
        try {
            m_free.push_back(std::move(slot));
        } catch (...) {
            // out of memory: the slot is destroyed instead
        }
    }

    const factory m_make;
    std::mutex m_slots_mutex;
    std::vector<std::unique_ptr<slot_type>> m_free; ///< guarded by m_slots_mutex
};

} // namespace sqlock::detail
