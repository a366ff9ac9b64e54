// sqlock::semaphore: N permits, each a lock of its own, and a queue lock for fair waiting.
//
// Why permits are whole locks: each one then has everything a mutex has (strategy, fencing
// token, renewal, lost signal, takeover of a dead holder's lease, failover handling, status,
// reap), written once. Why a queue lock: polling waiters would race for a freed permit and
// the quickest asker would win every time; instead a waiter that found every permit taken
// waits its turn on "NAME<0x1f>queue" (a mutex, fair on each backend), and only the queue's
// head tries the permits. Mutual exclusion never depends on the queue: the permits are the
// locks, the queue only decides who asks.
#include "sqlock/semaphore.hpp"

#include "core/database_impl.hpp"
#include "core/statements.hpp"
#include "core/waiting.hpp"

#include <algorithm>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <unordered_map>
#include <vector>

namespace sqlock {

namespace detail {

namespace {

std::string reserved_name(const std::string& name, std::string_view role) {
    std::string full = name;
    full += '\x1f';
    full += role;
    return full;
}

} // namespace

/// The ceiling of the queue head's backoff between rounds (when retry_max is longer): it
/// pauses [d, 2d), so a permit freed in another process is found within 2 x this (on
/// PostgreSQL the release notification wakes it sooner).
constexpr std::chrono::milliseconds head_poll_limit{25};

class semaphore_impl {
public:
    semaphore_impl(database db, std::string name, std::int64_t permits,
                   const semaphore_options& options)
        : m_db(std::move(db)), m_name(std::move(name)), m_options(options) {
        if (m_name.size() > max_semaphore_name_length)
            throw error(errc::invalid_argument,
                        "semaphore name is " + std::to_string(m_name.size()) +
                            " bytes; the limit is " + std::to_string(max_semaphore_name_length) +
                            " (\"" + m_name.substr(0, 40) + "...\")");
        if (permits < 1 || permits > max_permits)
            throw error(errc::invalid_argument, "a semaphore needs 1 to " +
                                                    std::to_string(max_permits) + " permits, got " +
                                                    std::to_string(permits));
        // The first reserved name checks the semaphore's name like a mutex's (empty, UTF-8,
        // control characters), so a bad name fails before anything else is made.
        m_permits.reserve(static_cast<std::size_t>(permits));
        for (std::int64_t k = 0; k < permits; ++k)
            m_permits.push_back(std::make_unique<mutex>(
                reserved_name_t{}, m_db, reserved_name(m_name, "permit " + std::to_string(k)),
                permit_options(k)));
        mutex_options queue = m_options;
        // A lease, whatever the permits' strategy: newcomers read it to see whether anyone
        // waits (queue_taken), and PostgreSQL serves its waiters in order in the server.
        queue.strategy = strategy::unique_key;
        queue.renew = true; // a head that waits longer than a TTL keeps its place
        queue.on_lost = nullptr;
        m_queue = std::make_unique<mutex>(reserved_name_t{}, m_db, reserved_name(m_name, "queue"),
                                          std::move(queue));
        m_wake_name = reserved_name(m_name, "permit "); // a prefix of every permit's name
    }

    /// The permit the calling thread holds (a hold, possibly known lost, which its mutex keeps
    /// until unlocked), or nullopt. Forgets a permit whose mutex dropped the hold (a re-entry
    /// that found it lost).
    std::optional<std::size_t> held_by_me() const {
        std::lock_guard lock(m_state_mutex);
        const auto it = m_held.find(std::this_thread::get_id());
        if (it == m_held.end())
            return std::nullopt;
        if (m_permits[it->second]->hold_count() == 0) {
            m_held.erase(it);
            return std::nullopt;
        }
        return it->second;
    }

    void note_held(std::size_t k) {
        std::lock_guard lock(m_state_mutex);
        m_held[std::this_thread::get_id()] = k;
    }

    /// Forgets the calling thread's permit once its mutex no longer has a hold.
    void note_released(std::size_t k) {
        std::lock_guard lock(m_state_mutex);
        m_last_released = k;
        if (m_permits[k]->hold_count() == 0)
            m_held.erase(std::this_thread::get_id());
    }

    /// One try at each permit, from a random one (so that concurrent askers spread out and an
    /// uncontended acquire is one statement); the permit granted, or nullopt.
    std::optional<std::size_t> one_round() {
        thread_local std::mt19937_64 rng{std::random_device{}()};
        const std::size_t n = m_permits.size();
        const std::size_t start = static_cast<std::size_t>(rng() % n);
        for (std::size_t i = 0; i < n; ++i) {
            const std::size_t k = (start + i) % n;
            if (m_permits[k]->try_lock())
                return k;
        }
        return std::nullopt;
    }

    database_impl& db() const { return *m_db.impl(); }

    /// Whether someone holds the queue lock, i.e. waits for a permit (a lease row with an
    /// owner; a dead head's lease counts until a queued waiter drops it).
    bool queue_taken() const {
        const auto res = db().run(statement::inspect_lock, {std::string_view(m_queue->name())});
        return !res.rows.empty() && !res.rows.front().at(0).value_or("").empty();
    }

    mutex_options permit_options(std::int64_t k) const {
        mutex_options o = m_options;
        if (m_options.on_lost) {
            // The application is told about its semaphore, not about a permit's lock name.
            o.on_lost = [callback = m_options.on_lost, name = m_name,
                         k](const lock_lost_event& event) {
                lock_lost_event told = event;
                told.name = name;
                told.message = "permit " + std::to_string(k) + ": " + event.message;
                callback(told);
            };
        }
        return o;
    }

    database m_db;
    std::string m_name;
    semaphore_options m_options;
    std::vector<std::unique_ptr<mutex>> m_permits;
    std::unique_ptr<mutex> m_queue;
    std::string m_wake_name; ///< local wake-ups of this name's waiters (a release happened)
    /// The last acquire had to wait: the next one queues at once, so that a releaser asking
    /// again does not overtake the waiters it handed over to.
    std::atomic<bool> m_contended{false};

    mutable std::mutex m_state_mutex; ///< guards the members below
    mutable std::unordered_map<std::thread::id, std::size_t> m_held;
    std::optional<std::size_t> m_last_released;
    std::string m_last_error;
};

} // namespace detail

semaphore::semaphore(database db, std::string name, std::int64_t permits, semaphore_options options)
    : m_impl(std::make_unique<detail::semaphore_impl>(std::move(db), std::move(name), permits,
                                                      options)) {}

semaphore::~semaphore() = default; // each permit's mutex gives back what it holds

void semaphore::lock() {
    try_lock_until_steady(std::chrono::steady_clock::time_point::max());
}

bool semaphore::try_lock() {
    return try_lock_until_steady(std::chrono::steady_clock::time_point::min());
}

bool semaphore::try_lock_until_steady(std::chrono::steady_clock::time_point deadline) {
    auto& impl = *m_impl;
    if (const auto k = impl.held_by_me())
        return impl.m_permits[*k]->try_lock_until_steady(deadline); // re-entry (or lock_lost)

    auto& db = impl.db();
    const bool can_wait = deadline > std::chrono::steady_clock::now();
    // Our place in the queue, given up when this call returns (granted or not).
    struct queue_place {
        mutex* queue = nullptr;
        ~queue_place() {
            if (queue)
                queue->unlock();
        }
    } place;
    // The head's session for release notifications (PostgreSQL), kept for the wait; its
    // rounds run on it too, so that waiting costs no extra connection (DESIGN §12).
    std::optional<detail::pooled_session> listener;
    detail::backoff delay(impl.m_options.retry_min,
                          std::min(impl.m_options.retry_max, detail::head_poll_limit));
    detail::full_server_backoff full_delay;
    // Since when the server has refused every connection for lack of slots, and its last
    // refusal (unset while it takes them).
    struct refusals {
        std::chrono::steady_clock::time_point since;
        error last;
    };
    std::optional<refusals> refused;
    bool tried = false; // a round of this call found every permit taken
    for (;;) {
        bool failed = false;
        const auto seen = db.wakeups().generation(impl.m_wake_name);
        try {
            // A caller with time to wait takes no permit past the queue's waiters: it queues
            // when someone already does (or when its last acquire had to), else after a round
            // found every permit taken. Only try_lock() asks without looking.
            if (can_wait && !place.queue &&
                (tried || impl.m_contended.load() || impl.queue_taken())) {
                if (!impl.m_queue->try_lock_until_steady(deadline))
                    return false;
                place.queue = impl.m_queue.get();
            }
            const detail::route_scope via_listener(db, listener ? &**listener : nullptr);
            if (const auto k = impl.one_round()) {
                impl.note_held(*k);
                impl.m_contended.store(tried);
                return true;
            }
        } catch (const error& e) {
            // As mutex::lock(): a full server is waited out, other retryable trouble retried
            // while time remains, anything else reported.
            if (is_server_full(e)) {
                if (!can_wait)
                    throw;
                if (refused)
                    refused->last = e;
                else
                    refused.emplace(refusals{std::chrono::steady_clock::now(), e});
            } else {
                if (!e.retryable() || std::chrono::steady_clock::now() >= deadline)
                    throw;
                refused.reset();
            }
            failed = true;
        }
        if (!failed)
            tried = true;
        const auto now = std::chrono::steady_clock::now();
        if (failed && refused) {
            if (now >= deadline)
                throw detail::server_full_timeout(impl.m_name, refused->last, now - refused->since);
            const auto pause = full_delay.next();
            std::this_thread::sleep_until(deadline - now < pause ? deadline : now + pause);
            continue;
        }
        if (!failed) {
            refused.reset();
            full_delay.reset();
        }
        if (now >= deadline)
            return false;
        if (!place.queue && !failed)
            continue; // join the queue now, without a pause
        // The head waits for a permit to free up: woken by a release in this process, or
        // (PostgreSQL) by the release notification of any of its permits.
        if (listener && !(*listener)->usable())
            listener.reset();
        if (!listener && !failed && db.notifies_releases()) {
            if (auto idle = db.try_checkout_idle(); idle && db.listen_for_releases(**idle))
                listener.emplace(std::move(*idle));
        }
        const auto pause = delay.next();
        db.await_release(listener ? &**listener : nullptr, impl.m_wake_name, seen,
                         deadline - now < pause ? deadline : now + pause, true);
    }
}

void semaphore::unlock() noexcept {
    auto& impl = *m_impl;
    const auto k = impl.held_by_me();
    if (!k) {
        std::lock_guard lock(impl.m_state_mutex);
        impl.m_last_error =
            "unlock() of semaphore \"" + impl.m_name + "\" by a thread that holds no permit";
        return;
    }
    auto& permit = *impl.m_permits[*k];
    const std::string earlier = permit.last_error();
    permit.unlock();
    std::string failure = permit.last_error();
    impl.note_released(*k);
    if (failure != earlier) {
        std::lock_guard lock(impl.m_state_mutex);
        impl.m_last_error = std::move(failure);
    }
    impl.db().wakeups().wake(impl.m_wake_name); // a head in this process tries at once
}

bool semaphore::owns_lock() const noexcept {
    const auto k = m_impl->held_by_me();
    return k && m_impl->m_permits[*k]->owns_lock();
}

loss_reason semaphore::lost_reason() const noexcept {
    const auto k = m_impl->held_by_me();
    return k ? m_impl->m_permits[*k]->lost_reason() : loss_reason::none;
}

std::stop_token semaphore::stop_token() const noexcept {
    const auto k = m_impl->held_by_me();
    return k ? m_impl->m_permits[*k]->stop_token() : std::stop_token{};
}

std::int64_t semaphore::token() const {
    const auto k = m_impl->held_by_me();
    if (!k)
        throw error(errc::lock_lost, "token() of semaphore \"" + m_impl->m_name +
                                         "\": the calling thread holds no permit");
    return m_impl->m_permits[*k]->token();
}

std::int64_t semaphore::permit() const {
    const auto k = m_impl->held_by_me();
    if (!k)
        throw error(errc::lock_lost, "permit() of semaphore \"" + m_impl->m_name +
                                         "\": the calling thread holds no permit");
    return static_cast<std::int64_t>(*k);
}

std::int64_t semaphore::hold_count() const noexcept {
    const auto k = m_impl->held_by_me();
    return k ? m_impl->m_permits[*k]->hold_count() : 0;
}

const std::string& semaphore::name() const noexcept {
    return m_impl->m_name;
}

std::int64_t semaphore::permits() const noexcept {
    return static_cast<std::int64_t>(m_impl->m_permits.size());
}

loss_reason semaphore::last_loss() const noexcept {
    std::optional<std::size_t> k;
    {
        std::lock_guard lock(m_impl->m_state_mutex);
        k = m_impl->m_last_released;
    }
    return k ? m_impl->m_permits[*k]->last_loss() : loss_reason::none;
}

std::string semaphore::last_error() const {
    std::lock_guard lock(m_impl->m_state_mutex);
    return m_impl->m_last_error;
}

} // namespace sqlock
