// sqlock::shared_mutex: readers hold one of N reader permits (a permit_pool, locks/permits.hpp);
// a writer takes the writer gate, then every permit. Exclusion rests on the permits alone
// (each a lock with everything a mutex has); the gate only makes readers that come after a
// writer wait for it, so that a stream of readers cannot starve writers.
#include "sqlock/shared_mutex.hpp"

#include "locks/handle_access.hpp"
#include "locks/mutex_access.hpp"
#include "locks/permits.hpp"
#include "sqlock/semaphore.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

namespace sqlock {

namespace detail {

class shared_mutex_impl {
public:
    shared_mutex_impl(database db, std::string name, const mutex_options& options,
                      std::int64_t max_readers)
        : m_ttl(options.ttl), m_leases_renewed(options.renew), m_user_on_lost(options.on_lost) {
        validate_primitive_name(name, "shared mutex"); // before the gate's lock name is made
        mutex_options inner = options;
        // Every lease's loss comes here first: the writer's leases end its grant (told once),
        // a reader's is passed on as it is.
        inner.on_lost = [this](const lock_lost_event& event) {
            lease_lost(event);
        };
        mutex_options gate = inner;
        // A lease whatever the permits' strategy: a reader's permit acquire looks at its row
        // to see that a writer holds or waits (lock_request::defer_to); a select_for_update
        // row shows no holder. It only orders readers behind writers (exclusion rests on the
        // permits), and it is renewed where the permits live with their sessions, so that a
        // long write keeps it.
        gate.strategy = strategy::unique_key;
        gate.renew = options.renew || options.strategy == strategy::select_for_update;
        gate.on_lost = [this, name](const lock_lost_event& event) {
            lock_lost_event told = event;
            told.name = name;
            told.message = "writer gate: " + event.message;
            lease_lost(told);
        };
        if (options.on_at_risk) {
            gate.on_at_risk = [callback = options.on_at_risk,
                               name](const lock_at_risk_event& event) {
                lock_at_risk_event told = event;
                told.name = name;
                told.message = "writer gate" + (event.message.empty() ? "" : ": " + event.message);
                callback(told);
            };
        }
        m_gate = mutex_access::make_reserved(db, reserved_name(name, "writer"), std::move(gate));
        m_readers = std::make_unique<permit_pool>(std::move(db), std::move(name), max_readers,
                                                  inner, "reader", "shared mutex", m_gate.get());
    }

    ~shared_mutex_impl() {
        // Permits first (their destructors give back what any thread holds), then the gate.
        m_readers.reset();
        m_gate.reset();
    }

    /// The exclusive grant, while one thread of this object holds it.
    struct writer_grant {
        std::thread::id thread;
        std::int64_t holds = 0;
        std::int64_t token = 0;
        std::set<std::int64_t> tokens; ///< of the gate's and the permits' grants
        std::stop_source stop;
        bool told = false; ///< on_lost was called for this grant
    };

    /// Whose grant m_writer records: the calling thread's, or (owned by handle) the object's.
    std::thread::id holder() const noexcept {
        return m_by_handle ? std::thread::id{} : std::this_thread::get_id();
    }

    bool i_write() const {
        std::lock_guard lock(m_state_mutex);
        return m_writer && m_writer->thread == holder();
    }

    void lease_lost(const lock_lost_event& event) {
        bool tell = true;
        {
            std::lock_guard lock(m_state_mutex);
            if (m_writer && m_writer->tokens.count(event.token)) {
                m_writer->stop.request_stop();
                tell = !m_writer->told;
                m_writer->told = true;
            } else if (m_collected.count(event.token)) {
                // A writer still collecting holds no grant to lose: it finds the loss when it
                // confirms its leases, gives everything back and starts again.
                tell = false;
            }
        }
        if (tell && m_user_on_lost)
            m_user_on_lost(event);
    }

    /// The lease `lease` was taken by a writer that is still collecting (its loss is not told).
    void collected(mutex& lease) {
        const auto token = lease.token();
        std::lock_guard lock(m_state_mutex);
        m_collected.insert(token);
    }

    /// When the calling writer took (or last confirmed) its leases: [0] the gate, [k + 1]
    /// permit k; not_taken for a lease it does not hold yet.
    using taken_times = std::vector<std::chrono::steady_clock::time_point>;
    static constexpr auto not_taken = std::chrono::steady_clock::time_point::min();

    enum class collection { complete, timed_out, lease_lost };

    /// Takes every reader permit for the calling thread, which holds the gate, until
    /// `deadline`, recording each in `taken_at`. One try at every permit first: the free ones
    /// are taken at once, and each held one is sighted now, so that the leases of a writer
    /// that died holding them all are waited out together, not one TTL after another. Then it
    /// waits for the rest in order. Leases that nothing renews are re-entered every ttl/3
    /// while it waits (confirm_early_leases), so that a writer waiting longer than its TTL for
    /// a reader keeps its gate: a second writer taking over the gate of a first that had no
    /// permits yet, and the first doing the same in turn, could go on for many TTLs.
    /// Throws what an acquire or re-entry throws (connection trouble); what it took stays
    /// held (the caller gives it back).
    /// With `stop`, each wait looks at it (mutex_access::try_lock_cancellable): timed_out once
    /// it is requested.
    collection collect_permits(std::chrono::steady_clock::time_point deadline,
                               taken_times& taken_at, const std::stop_token* stop) {
        const auto take = [&](std::size_t k) {
            taken_at[k + 1] = std::chrono::steady_clock::now();
            collected(m_readers->permit(k));
        };
        const std::size_t n = m_readers->size();
        for (std::size_t k = 0; k < n; ++k)
            if (m_readers->permit(k).try_lock())
                take(k);
        for (std::size_t k = 0; k < n; ++k) {
            while (taken_at[k + 1] == not_taken) {
                const auto now = std::chrono::steady_clock::now();
                if (now >= deadline) // out of time (a try_lock(): the one try above was all)
                    return collection::timed_out;
                // (deadline may be time_point::min() or max(): compared, never subtracted)
                const auto step_end = now + m_ttl / 3;
                const auto until = !m_leases_renewed && deadline > step_end ? step_end : deadline;
                auto& permit = m_readers->permit(k);
                if (stop ? mutex_access::try_lock_cancellable(permit, until, *stop)
                         : permit.try_lock_until(until))
                    take(k);
                else if (stop && stop->stop_requested())
                    return collection::timed_out;
                else if (std::chrono::steady_clock::now() < deadline &&
                         !confirm_early_leases(taken_at))
                    return collection::lease_lost;
            }
        }
        return collection::complete;
    }

    /// A writer that waited for readers holds leases taken at different times; without
    /// renewal nothing extended the early ones, so the grant would start with part of their
    /// TTL spent (or already lost). Each lease in `taken_at` taken (or confirmed) more than
    /// ttl/20 ago is confirmed: a re-entry restarts it on the database and here (and its time
    /// in `taken_at`), and its extra hold is dropped at once. Returns false when one was lost
    /// meanwhile. Throws what a re-entry throws otherwise (connection trouble).
    bool confirm_early_leases(taken_times& taken_at) {
        for (std::size_t i = 0; i < taken_at.size(); ++i) {
            const auto now = std::chrono::steady_clock::now();
            if (taken_at[i] == not_taken || now - taken_at[i] <= m_ttl / 20)
                continue;
            mutex& lease = i == 0 ? *m_gate : m_readers->permit(i - 1);
            try {
                if (!lease.try_lock())
                    return false;
            } catch (const error& e) {
                if (e.code() == errc::lock_lost)
                    return false;
                throw;
            }
            lease.unlock(); // the re-entry's hold; the grant's stays
            taken_at[i] = now;
        }
        return true;
    }

    /// Gives back the permits and the gate the calling thread holds (a writer's, complete or
    /// not). Returns the worst loss found and records failures.
    loss_reason give_back() noexcept {
        loss_reason worst = loss_reason::none;
        const auto note = [&](mutex& m) {
            if (m.hold_count() == 0)
                return; // dropped already (a confirmation found it lost)
            const std::string earlier = m.last_error();
            {
                std::lock_guard lock(m_state_mutex);
                m_collected.erase(m.token());
            }
            m.unlock();
            if (m.last_loss() != loss_reason::none && worst != loss_reason::lost)
                worst = m.last_loss();
            if (std::string failure = m.last_error(); failure != earlier) {
                std::lock_guard lock(m_state_mutex);
                m_last_error = std::move(failure);
            }
        };
        for (std::size_t k = m_readers->size(); k-- > 0;)
            note(m_readers->permit(k));
        note(*m_gate);
        m_readers->wake_waiters();
        return worst;
    }

    std::chrono::milliseconds m_ttl;
    bool m_by_handle = false; ///< handle_access::own_by_handle(): set before the first lock
    bool m_leases_renewed;    ///< the permits' leases are renewed (the gate's may be regardless)
    std::function<void(const lock_lost_event&)> m_user_on_lost;
    std::unique_ptr<mutex> m_gate;
    std::unique_ptr<permit_pool> m_readers;

    mutable std::mutex m_state_mutex; ///< guards the members below
    std::optional<writer_grant> m_writer;
    /// Tokens of the leases writers are collecting (not yet a grant; their loss is not told).
    std::set<std::int64_t> m_collected;
    std::optional<loss_reason> m_last_writer_loss; ///< the last exclusive grant's end
    bool m_last_was_writer = false;
    std::string m_last_error;
};

} // namespace detail

shared_mutex::shared_mutex(database db, std::string name, mutex_options options,
                           std::int64_t max_readers)
    : m_impl(std::make_unique<detail::shared_mutex_impl>(std::move(db), std::move(name), options,
                                                         max_readers)) {}

shared_mutex::~shared_mutex() = default;

void shared_mutex::lock() {
    try_lock_until_steady(std::chrono::steady_clock::time_point::max());
}

bool shared_mutex::try_lock() {
    return try_lock_until_steady(std::chrono::steady_clock::time_point::min());
}

bool shared_mutex::try_lock_until_steady(std::chrono::steady_clock::time_point deadline) {
    return lock_exclusive(deadline, nullptr);
}

bool shared_mutex::lock_exclusive(std::chrono::steady_clock::time_point deadline,
                                  const std::stop_token* stop) {
    auto& impl = *m_impl;
    if (impl.i_write()) {
        if (!owns_lock())
            throw error(errc::lock_lost, "shared_mutex \"" + name() +
                                             "\": the exclusive grant was lost before the "
                                             "re-entrant lock");
        std::lock_guard lock(impl.m_state_mutex);
        ++impl.m_writer->holds;
        return true;
    }
    if (impl.m_readers->held_by_me())
        throw error(errc::invalid_argument,
                    "shared_mutex \"" + name() +
                        "\": lock() by a thread that holds it shared (no upgrade: it would wait "
                        "for itself)");
    auto& readers = *impl.m_readers;
    for (;;) {
        if (stop ? !detail::mutex_access::try_lock_cancellable(*impl.m_gate, deadline, *stop)
                 : !impl.m_gate->try_lock_until(deadline))
            return false;
        // The gate is ours: readers that come now wait for us. Take every permit, waiting for
        // the readers inside to leave; keep what we get.
        detail::shared_mutex_impl::taken_times taken_at(readers.size() + 1,
                                                        detail::shared_mutex_impl::not_taken);
        taken_at[0] = std::chrono::steady_clock::now();
        impl.collected(*impl.m_gate);
        auto outcome = detail::shared_mutex_impl::collection::complete;
        try {
            outcome = impl.collect_permits(deadline, taken_at, stop);
            if (outcome == detail::shared_mutex_impl::collection::complete &&
                !impl.confirm_early_leases(taken_at))
                outcome = detail::shared_mutex_impl::collection::lease_lost;
        } catch (...) {
            impl.give_back();
            throw;
        }
        if (outcome == detail::shared_mutex_impl::collection::complete)
            break;
        impl.give_back();
        // Timed out; or a lease taken early ran out (or was taken over) while we waited for
        // the rest: start again while time remains.
        if (outcome == detail::shared_mutex_impl::collection::timed_out ||
            std::chrono::steady_clock::now() >= deadline || (stop && stop->stop_requested()))
            return false;
    }
    detail::shared_mutex_impl::writer_grant grant;
    grant.thread = impl.holder();
    grant.holds = 1;
    grant.tokens.insert(impl.m_gate->token());
    for (std::size_t k = 0; k < readers.size(); ++k)
        grant.tokens.insert(readers.permit(k).token());
    grant.token = *grant.tokens.rbegin(); // drawn last: above every earlier grant's
    {
        std::lock_guard lock(impl.m_state_mutex);
        for (const auto token : grant.tokens)
            impl.m_collected.erase(token);
        impl.m_writer = std::move(grant);
    }
    // A lease lost after its last confirmation but before the grant was recorded was not
    // told (it was being collected): the grant is born lost, and told so once.
    if (!owns_lock()) {
        const auto reason = lost_reason();
        lock_lost_event event{name(), 0, reason == loss_reason::none ? loss_reason::lost : reason,
                              "a lease was lost as the exclusive grant was made"};
        bool tell = false;
        {
            std::lock_guard lock(impl.m_state_mutex);
            impl.m_writer->stop.request_stop();
            event.token = impl.m_writer->token;
            tell = !impl.m_writer->told;
            impl.m_writer->told = true;
        }
        if (tell && impl.m_user_on_lost)
            impl.m_user_on_lost(event);
    }
    return true;
}

void shared_mutex::unlock() noexcept {
    auto& impl = *m_impl;
    if (!impl.i_write()) {
        std::lock_guard lock(impl.m_state_mutex);
        impl.m_last_error = "unlock() of shared_mutex \"" + impl.m_readers->name() +
                            "\" by a thread that does not hold it exclusively";
        return;
    }
    {
        std::lock_guard lock(impl.m_state_mutex);
        if (--impl.m_writer->holds > 0)
            return;
    }
    const auto loss = impl.give_back();
    std::lock_guard lock(impl.m_state_mutex);
    impl.m_writer.reset();
    impl.m_last_writer_loss = loss;
    impl.m_last_was_writer = true;
}

void shared_mutex::lock_shared() {
    try_lock_shared_until_steady(std::chrono::steady_clock::time_point::max());
}

bool shared_mutex::try_lock_shared() {
    return try_lock_shared_until_steady(std::chrono::steady_clock::time_point::min());
}

bool shared_mutex::try_lock_shared_until_steady(std::chrono::steady_clock::time_point deadline) {
    return lock_shared_until(deadline, nullptr);
}

bool shared_mutex::lock_shared_until(std::chrono::steady_clock::time_point deadline,
                                     const std::stop_token* stop) {
    auto& impl = *m_impl;
    if (impl.i_write())
        throw error(errc::invalid_argument,
                    "shared_mutex \"" + name() +
                        "\": lock_shared() by the thread that holds it exclusively (no downgrade)");
    return impl.m_readers->acquire(deadline, stop);
}

void shared_mutex::unlock_shared() noexcept {
    auto& impl = *m_impl;
    const std::string earlier = impl.m_readers->last_error();
    impl.m_readers->release("unlock_shared() of shared_mutex");
    std::string failure = impl.m_readers->last_error();
    std::lock_guard lock(impl.m_state_mutex);
    impl.m_last_was_writer = false;
    if (failure != earlier)
        impl.m_last_error = std::move(failure);
}

bool shared_mutex::owns_lock() const noexcept {
    auto& impl = *m_impl;
    if (!impl.i_write() || !impl.m_gate->owns_lock())
        return false;
    for (std::size_t k = 0; k < impl.m_readers->size(); ++k)
        if (!impl.m_readers->permit(k).owns_lock())
            return false;
    return true;
}

bool shared_mutex::owns_shared() const noexcept {
    const auto k = m_impl->m_readers->held_by_me();
    return k && m_impl->m_readers->permit(*k).owns_lock();
}

loss_reason shared_mutex::lost_reason() const noexcept {
    auto& impl = *m_impl;
    if (impl.i_write()) {
        loss_reason worst = impl.m_gate->lost_reason();
        for (std::size_t k = 0; k < impl.m_readers->size() && worst != loss_reason::lost; ++k)
            if (const auto r = impl.m_readers->permit(k).lost_reason(); r != loss_reason::none)
                worst = r;
        return worst;
    }
    const auto k = impl.m_readers->held_by_me();
    return k ? impl.m_readers->permit(*k).lost_reason() : loss_reason::none;
}

std::stop_token shared_mutex::stop_token() const noexcept {
    auto& impl = *m_impl;
    if (impl.i_write()) {
        std::lock_guard lock(impl.m_state_mutex);
        return impl.m_writer->stop.get_token();
    }
    const auto k = impl.m_readers->held_by_me();
    return k ? impl.m_readers->permit(*k).stop_token() : std::stop_token{};
}

std::int64_t shared_mutex::token() const {
    auto& impl = *m_impl;
    if (impl.i_write()) {
        std::lock_guard lock(impl.m_state_mutex);
        return impl.m_writer->token;
    }
    const auto k = impl.m_readers->held_by_me();
    if (!k)
        throw error(errc::lock_lost, "token() of shared_mutex \"" + name() +
                                         "\": the calling thread does not hold it");
    return impl.m_readers->permit(*k).token();
}

const std::string& shared_mutex::name() const noexcept {
    return m_impl->m_readers->name();
}

std::int64_t shared_mutex::max_readers() const noexcept {
    return static_cast<std::int64_t>(m_impl->m_readers->size());
}

loss_reason shared_mutex::last_loss() const noexcept {
    auto& impl = *m_impl;
    {
        std::lock_guard lock(impl.m_state_mutex);
        if (impl.m_last_was_writer)
            return impl.m_last_writer_loss.value_or(loss_reason::none);
    }
    const auto k = impl.m_readers->last_released();
    return k ? impl.m_readers->permit(*k).last_loss() : loss_reason::none;
}

std::string shared_mutex::last_error() const {
    std::lock_guard lock(m_impl->m_state_mutex);
    return m_impl->m_last_error;
}

} // namespace sqlock

namespace sqlock::detail {

void handle_access::own_by_handle(shared_mutex& m) noexcept {
    m.m_impl->m_by_handle = true;
    m.m_impl->m_readers->own_by_handle(m.m_impl->m_gate.get());
}

bool handle_access::try_lock_cancellable(shared_mutex& m,
                                         std::chrono::steady_clock::time_point deadline,
                                         const std::stop_token& stop) {
    return m.lock_exclusive(deadline, &stop);
}

bool handle_access::try_lock_shared_cancellable(shared_mutex& m,
                                                std::chrono::steady_clock::time_point deadline,
                                                const std::stop_token& stop) {
    return m.lock_shared_until(deadline, &stop);
}

std::chrono::steady_clock::time_point handle_access::lease_end(const shared_mutex& m) noexcept {
    auto& impl = *m.m_impl;
    if (!impl.i_write()) {
        const auto k = impl.m_readers->held_by_me();
        return k ? mutex_access::lease_end(impl.m_readers->permit(*k))
                 : std::chrono::steady_clock::time_point::min();
    }
    auto end = mutex_access::lease_end(*impl.m_gate);
    for (std::size_t k = 0; k < impl.m_readers->size(); ++k)
        end = std::min(end, mutex_access::lease_end(impl.m_readers->permit(k)));
    return end;
}

} // namespace sqlock::detail
