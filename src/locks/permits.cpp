#include "locks/permits.hpp"

#include "backends/local_queue.hpp"
#include "base/io_wait.hpp"
#include "base/statements.hpp"
#include "base/waiting.hpp"
#include "database/database_impl.hpp"
#include "locks/mutex_access.hpp"
#include "sqlock/semaphore.hpp"

#include <algorithm>
#include <random>

namespace sqlock::detail {

namespace {

/// The ceiling of the queue head's backoff between rounds (when retry_max is longer): it
/// pauses [d, 2d), so a permit freed in another process is found within 2 x this (on
/// PostgreSQL the release notification wakes it sooner).
constexpr std::chrono::milliseconds head_poll_limit{25};

} // namespace

std::string reserved_name(std::string_view name, std::string_view role) {
    std::string full(name);
    full += '\x1f';
    full += role;
    return full;
}

void validate_primitive_name(std::string_view name, std::string_view kind) {
    if (name.size() > max_semaphore_name_length) // room for "<0x1f>permit 999"
        throw error(errc::invalid_argument,
                    std::string(kind) + " name is " + std::to_string(name.size()) +
                        " bytes; the limit is " + std::to_string(max_semaphore_name_length) +
                        " (\"" + std::string(name.substr(0, 40)) + "...\")");
}

permit_pool::permit_pool(database db, std::string name, std::int64_t count,
                         const mutex_options& options, std::string_view role, std::string_view kind,
                         mutex* gate)
    : m_db(std::move(db)), m_name(std::move(name)), m_kind(kind), m_options(options), m_gate(gate) {
    validate_primitive_name(m_name, m_kind);
    if (count < 1 || count > max_permits)
        throw error(errc::invalid_argument,
                    "a " + m_kind + " needs 1 to " + std::to_string(max_permits) + " " +
                        std::string(role) + "s, got " + std::to_string(count));
    // The first reserved name checks the name like a mutex's (empty, UTF-8, NUL, 0x1f), so a
    // bad name fails before anything else is made.
    m_permits.reserve(static_cast<std::size_t>(count));
    for (std::int64_t k = 0; k < count; ++k)
        m_permits.push_back(mutex_access::make_reserved(
            m_db, reserved_name(m_name, std::string(role) + " " + std::to_string(k)),
            permit_options(role, k)));
    mutex_options queue = m_options;
    // A lease, whatever the permits' strategy: a newcomer's permit acquire looks at its row to
    // see whether anyone waits (lock_request::defer_to), and PostgreSQL and MariaDB serve its
    // waiters in order in the server.
    queue.strategy = strategy::unique_key;
    queue.renew = true; // a head that waits longer than a TTL keeps its place
    queue.on_lost = nullptr;
    m_queue = mutex_access::make_reserved(m_db, reserved_name(m_name, std::string(role) + " queue"),
                                          std::move(queue));
    m_wake_name = reserved_name(m_name, std::string(role) + " ");
}

database_impl& permit_pool::db() const {
    return impl_of(m_db);
}

void permit_pool::own_by_handle(mutex* gate) noexcept {
    m_by_handle = true;
    for (auto& permit : m_permits)
        mutex_access::own_by_handle(*permit);
    if (gate)
        mutex_access::own_by_handle(*gate);
}

std::optional<std::size_t> permit_pool::held_by_me() const {
    std::lock_guard lock(m_state_mutex);
    const auto it = m_held.find(holder());
    if (it == m_held.end())
        return std::nullopt;
    if (m_permits[it->second]->hold_count() == 0) { // a re-entry found it lost and dropped it
        m_held.erase(it);
        return std::nullopt;
    }
    return it->second;
}

bool permit_pool::someone_queues_locally() const {
    // A waiter for the queue may still be in SQLite's busy handler, its row not written,
    // while a releaser asking again keeps winning the one write lock (all but 1 % of the
    // grants went straight back to the releaser): its place in the queue lock's line
    // (local_queue.hpp) shows at once. Not so for the writer gate: readers that saw a writer
    // pass through the gate themselves (lock, unlock), so its line is busy with readers too,
    // and readers that looked at it sent each other through the gate again and again (8
    // `sqlock run --shared/--exclusive` on SQLite: readers stuck for 60 s). The gate row says
    // whether a writer holds or waits for it.
    return db().traits().queues_waiters_locally &&
           someone_in_line(queue_file_for(db().lock_file_for(m_queue->name())));
}

permit_pool::round permit_pool::one_round(const std::array<std::string_view, 2>& defer_to) {
    // From a random permit: concurrent askers spread out, and an uncontended acquire is one
    // statement (which also looks at the locks in `defer_to`).
    thread_local std::mt19937_64 rng{std::random_device{}()};
    const std::size_t n = m_permits.size();
    const std::size_t start = static_cast<std::size_t>(rng() % n);
    for (std::size_t i = 0; i < n; ++i) {
        const std::size_t k = (start + i) % n;
        unsigned deferred = 0;
        if (mutex_access::try_lock_deferring(*m_permits[k], defer_to, deferred))
            return {k, 0};
        if (deferred != 0)
            return {std::nullopt, deferred}; // the same for every permit: no use asking on
    }
    return {};
}

mutex_options permit_pool::permit_options(std::string_view role, std::int64_t k) const {
    mutex_options o = m_options;
    if (m_options.on_lost) {
        // The application is told about its primitive, not about a permit's lock name.
        o.on_lost = [callback = m_options.on_lost, name = m_name,
                     what = std::string(role) + " " +
                            std::to_string(k)](const lock_lost_event& event) {
            lock_lost_event told = event;
            told.name = name;
            told.message = what + ": " + event.message;
            callback(told);
        };
    }
    if (m_options.on_at_risk) {
        o.on_at_risk = [callback = m_options.on_at_risk, name = m_name,
                        what = std::string(role) + " " +
                               std::to_string(k)](const lock_at_risk_event& event) {
            lock_at_risk_event told = event;
            told.name = name;
            told.message = event.message.empty() ? what : what + ": " + event.message;
            callback(told);
        };
    }
    return o;
}

/// One acquire() call: its deadline, its place in the queue (given up when the call returns,
/// granted or not), the head's listening session, its backoffs and whether a round found
/// every permit taken.
struct permit_pool::acquire_call {
    acquire_call(std::chrono::steady_clock::time_point until, backoff pauses,
                 const std::stop_token* stop_token)
        : deadline(until), can_wait(until > std::chrono::steady_clock::now()), stop(stop_token),
          delay(pauses) {}

    std::chrono::steady_clock::time_point deadline;
    bool can_wait;
    const std::stop_token* stop; ///< a cancellable call's stop token, or null
    bool stopped() const noexcept { return stop && stop->stop_requested(); }
    /// Waits for `m` (the queue, the writer gate) until the deadline, or a stop request.
    bool wait_for(mutex& m) const {
        return stop ? mutex_access::try_lock_cancellable(m, deadline, *stop)
                    : m.try_lock_until(deadline);
    }
    /// The end of a pause meant to last until `until`: a cancellable call looks at its stop
    /// token at least every 100 ms.
    std::chrono::steady_clock::time_point pause_end(std::chrono::steady_clock::time_point until) {
        const auto soon = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
        return stop && soon < until ? soon : until;
    }
    struct queue_place {
        mutex* queue = nullptr;
        ~queue_place() {
            if (queue)
                queue->unlock();
        }
    } place;
    /// The head's session for release notifications (PostgreSQL), kept for the wait; its
    /// rounds run on it too, so that waiting costs no extra connection
    /// (docs/site/guides/connections.md).
    std::optional<pooled_session> listener;
    backoff delay;
    full_server_backoff full_delay;
    /// Since when the server has refused every connection for lack of slots, and its last
    /// refusal (unset while it takes them).
    struct refusals {
        std::chrono::steady_clock::time_point since;
        error last;
    };
    std::optional<refusals> refused;
    bool tried = false;     ///< a round of this call found every permit taken
    std::uint64_t seen = 0; ///< the wake-up generation before the round

    /// A round failed with `e`: a full server is waited out, other retryable trouble retried
    /// while time remains (as mutex::lock()), anything else thrown.
    void note_failure(const error& e) {
        if (is_server_full(e)) {
            if (!can_wait)
                throw;
            if (refused)
                refused->last = e;
            else
                refused.emplace(refusals{std::chrono::steady_clock::now(), e});
            return;
        }
        if (!e.retryable() || std::chrono::steady_clock::now() >= deadline)
            throw;
        refused.reset();
    }
};

permit_pool::round_end permit_pool::acquire_round(acquire_call& call) {
    // A caller with time to wait takes no permit past the queue's waiters: it queues when its
    // last acquire had to, or after a round found every permit taken, or when the round finds
    // someone in the queue (the permits' acquire statements look at the queue lock: one round
    // trip when nobody waits). Only a try-acquire asks without looking (except past a writer's
    // gate, which it never passes).
    const bool queue_now = call.can_wait && !call.place.queue && (call.tried || m_contended);
    const bool look = call.can_wait && !call.place.queue && !queue_now;
    std::array<std::string_view, 2> defer_to{};
    if (look)
        defer_to[defer_queue] = m_queue->name();
    if (m_gate)
        defer_to[defer_gate] = m_gate->name();
    round r;
    if (queue_now || (look && someone_queues_locally())) {
        r.deferred = 1u << defer_queue; // queue without asking the permits first
    } else {
        const route_scope via_listener(db(), call.listener ? &**call.listener : nullptr);
        r = one_round(defer_to);
    }
    if (r.granted) {
        {
            std::lock_guard lock(m_state_mutex);
            m_held[holder()] = *r.granted;
        }
        m_contended.store(call.tried);
        return round_end::granted;
    }
    if (r.deferred_to(defer_gate)) {
        // A writer holds or waits for the gate: it goes first.
        if (!call.can_wait || !call.wait_for(*m_gate))
            return round_end::not_granted;
        m_gate->unlock();
        return round_end::again;
    }
    if (r.deferred_to(defer_queue)) {
        // Someone waits for a permit (or our last acquire had to): into the queue, then a
        // round at once.
        if (!call.wait_for(*m_queue))
            return round_end::not_granted;
        call.place.queue = m_queue.get();
        return round_end::again;
    }
    return round_end::wait;
}

bool permit_pool::pause_between_rounds(acquire_call& call, bool failed) {
    auto& database = db();
    const auto now = std::chrono::steady_clock::now();
    const auto deadline = call.deadline;
    if (failed && call.refused) {
        if (now >= deadline)
            throw server_full_timeout(m_name, call.refused->last, now - call.refused->since);
        const auto pause = call.full_delay.next();
        pause_until(call.pause_end(deadline - now < pause ? deadline : now + pause));
        return true;
    }
    if (!failed) {
        call.refused.reset();
        call.full_delay.reset();
    }
    if (now >= deadline)
        return false;
    if (!call.place.queue && !failed)
        return true; // join the queue now, without a pause
    // The head waits for a permit to free up: woken by a release in this process, or
    // (PostgreSQL) by the release notification of any of the permits.
    if (call.listener && !(*call.listener)->usable())
        call.listener.reset();
    if (!call.listener && !failed && database.notifies_releases()) {
        if (auto idle = database.try_checkout_idle(); idle && database.listen_for_releases(**idle))
            call.listener.emplace(std::move(*idle));
    }
    const auto pause = call.delay.next();
    database.await_release(call.listener ? &**call.listener : nullptr, m_wake_name, call.seen,
                           deadline - now < pause ? deadline : now + pause, true);
    return true;
}

bool permit_pool::acquire(std::chrono::steady_clock::time_point deadline,
                          const std::stop_token* stop) {
    if (const auto k = held_by_me())
        return m_permits[*k]->try_lock_until(deadline); // re-entry (or lock_lost)
    acquire_call call(deadline,
                      backoff(m_options.retry_min, std::min(m_options.retry_max, head_poll_limit)),
                      stop);
    for (;;) {
        if (call.stopped())
            return false;
        bool failed = false;
        call.seen = db().wakeups().generation(m_wake_name);
        try {
            switch (acquire_round(call)) {
            case round_end::granted:
                return true;
            case round_end::not_granted:
                return false;
            case round_end::again:
                continue;
            case round_end::wait:
                call.tried = true;
                break;
            }
        } catch (const error& e) {
            call.note_failure(e);
            failed = true;
        }
        if (!pause_between_rounds(call, failed))
            return false;
    }
}

void permit_pool::release(std::string_view what) noexcept {
    const auto k = held_by_me();
    if (!k) {
        std::lock_guard lock(m_state_mutex);
        m_last_error = std::string(what) + " \"" + m_name + "\" by a thread that holds no " +
                       m_kind + " permit";
        return;
    }
    auto& permit = *m_permits[*k];
    const std::string earlier = permit.last_error();
    permit.unlock();
    std::string failure = permit.last_error();
    {
        std::lock_guard lock(m_state_mutex);
        m_last_released = *k;
        if (permit.hold_count() == 0)
            m_held.erase(holder());
        if (failure != earlier)
            m_last_error = std::move(failure);
    }
    wake_waiters();
}

void permit_pool::wake_waiters() {
    db().wakeups().wake(m_wake_name); // a head in this process tries at once
}

std::optional<std::size_t> permit_pool::last_released() const {
    std::lock_guard lock(m_state_mutex);
    return m_last_released;
}

std::string permit_pool::last_error() const {
    std::lock_guard lock(m_state_mutex);
    return m_last_error;
}

} // namespace sqlock::detail
