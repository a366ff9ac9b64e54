#include "sqlock/mutex.hpp"

#include "backends/local_queue.hpp"
#include "base/busy_retry.hpp"
#include "base/io_wait.hpp"
#include "base/owner.hpp"
#include "base/waiting.hpp"
#include "locks/hold.hpp"
#include "locks/lock_name.hpp"
#include "locks/mutex_access.hpp"
#include "locks/queue_ticket.hpp"
#include "strategies/strategy.hpp"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

namespace sqlock {

std::string_view to_string(strategy s) noexcept {
    switch (s) {
    case strategy::unique_key:
        return "unique_key";
    case strategy::select_for_update:
        return "select_for_update";
    case strategy::optimistic_version:
        return "optimistic_version";
    }
    return "unknown";
}

std::string_view to_string(loss_reason reason) noexcept {
    switch (reason) {
    case loss_reason::none:
        return "none";
    case loss_reason::lost:
        return "lost";
    case loss_reason::unknown:
        return "unknown";
    }
    return "unknown";
}

strategy parse_strategy(std::string_view text) {
    for (const auto s :
         {strategy::unique_key, strategy::select_for_update, strategy::optimistic_version}) {
        if (text == to_string(s))
            return s;
    }
    throw error(errc::invalid_argument,
                "unknown strategy \"" + std::string(text.substr(0, 40)) +
                    "\" (use unique_key, select_for_update or optimistic_version)");
}

namespace detail {

namespace {

/// "NAME<0x1f>ROLE" (mutex_access::make_reserved()).
void validate_reserved_name(std::string_view name) {
    const auto split = name.find('\x1f');
    if (split == std::string_view::npos || name.size() > max_name_length)
        throw error(errc::invalid_argument, "not a reserved lock name");
    validate_lock_name(name.substr(0, split));
    for (const char c : name.substr(split + 1))
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
            throw error(errc::invalid_argument, "not a reserved lock name");
}

void validate_options(const mutex_options& o) {
    using namespace std::chrono;
    if (o.ttl <= milliseconds::zero())
        throw error(errc::invalid_argument,
                    "ttl must be positive, got " + std::to_string(o.ttl.count()) + " ms");
    if (o.ttl > hours(24 * 30))
        throw error(errc::invalid_argument, "ttl must be at most 30 days");
    if (o.retry_min <= milliseconds::zero() || o.retry_max < o.retry_min)
        throw error(errc::invalid_argument, "need 0 < retry_min <= retry_max");
}

/// The server-side wait for one attempt that ends at `deadline`.
std::chrono::milliseconds wait_budget(std::chrono::steady_clock::time_point deadline) {
    using namespace std::chrono;
    if (deadline == steady_clock::time_point::max())
        return server_wait::forever;
    const auto now = steady_clock::now();
    if (deadline <= now) // also try_lock()'s time_point::min(): never subtract from it
        return server_wait::none;
    return ceil<milliseconds>(deadline - now);
}

/// A grant's local lease starts at the send time of the statement that confirmed it. When that
/// statement waited (a row-lock wait, an acquire queued in the server, a slow reply) the grant
/// arrives with that much of its lease spent, all of it after a wait longer than the TTL. Such a
/// grant (more than half the safety margin spent) is confirmed once more before it is handed
/// out: a renewal sent now restarts the lease on the database, or the server's idle timer, and
/// re-anchors it locally. An uncontended acquire never pays for this.
/// Returns nullopt when the renewal finds the grant already gone (its lease ran out before we
/// could confirm it). When the outcome is unknown, gives the grant back and rethrows.
std::optional<grant> confirmed_after_wait(lock_strategy& strategy, database_impl& db,
                                          const lock_request& req, grant g) {
    const auto spent = lease_end(std::chrono::steady_clock::now(), req.ttl) - g.valid_until;
    if (spent <= lease_margin(req.ttl) / 2)
        return g;
    try {
        return strategy.renew(db, req, g);
    } catch (const error& e) {
        if (e.code() == errc::lock_lost)
            return std::nullopt; // never ours to keep; dropping g leaves any queue it is in
        try {
            strategy.release(db, req, g);
        } catch (...) {
            // The lease expires at its TTL; the pinned session is discarded with g.
        }
        throw;
    }
}

} // namespace

class mutex_impl {
public:
    mutex_impl(database db, std::string name, mutex_options options, bool reserved_name)
        : m_db(std::move(db)), m_name(std::move(name)), m_options(std::move(options)),
          m_handle(next_handle_number()) {
        if (reserved_name)
            validate_reserved_name(m_name);
        else
            validate_lock_name(m_name);
        validate_options(m_options);
        m_strategy = make_strategy(m_options.strategy, m_db.backend());
    }

    database_impl& db() { return impl_of(m_db); }

    /// The calling thread's hold, or null. Owned by handle (mutex_access::own_by_handle()):
    /// the hold, whichever thread asks.
    std::shared_ptr<active_hold> mine() const {
        std::lock_guard lock(m_state_mutex);
        if (m_held && (m_by_handle || m_held->thread == std::this_thread::get_id()))
            return m_held;
        return nullptr;
    }

    /// The owner id written into the lock row: per thread, or one per handle.
    std::string owner() const {
        return m_by_handle ? handle_owner_id(m_handle) : owner_id(m_handle);
    }

    void record_error(std::string message) {
        std::lock_guard lock(m_state_mutex);
        m_last_error = std::move(message);
    }

    /// Forgets `hold` (released or lost for good) if it is still the current one.
    void drop(const std::shared_ptr<active_hold>& hold) {
        {
            std::lock_guard state(hold->state_mutex);
            hold->released = true;
        }
        std::lock_guard lock(m_state_mutex);
        if (m_held == hold) {
            m_held.reset();
            m_turn.reset(); // after the release: the next in the SQLite queue goes ahead
        }
    }

    database m_db;
    std::string m_name;
    mutex_options m_options;
    std::uint64_t m_handle;
    std::shared_ptr<lock_strategy> m_strategy;
    /// The grant belongs to this object, not to the thread that locked it (asynchronous
    /// locks, src/async): set once, before the first lock call.
    bool m_by_handle = false;

    /// Closed by ~mutex(): no callback of any of its holds runs after that.
    const std::shared_ptr<callback_gate> m_callbacks = std::make_shared<callback_gate>();
    mutable std::mutex m_state_mutex; ///< guards m_held and m_last_error
    std::shared_ptr<active_hold> m_held;
    /// SQLite: the current hold's ticket in the name's waiter queue (local_queue.hpp), kept
    /// until the hold is released or lost so that no one asks the database ahead of it.
    std::unique_ptr<fair_turn> m_turn;
    std::string m_last_error;
    loss_reason m_last_loss = loss_reason::none;
    /// The last grant had to wait for someone: the next lock() queues at once (attempt_state).
    std::atomic<bool> m_contended{false};
    /// The token of this mutex's last grant (lock_request::last_token).
    std::atomic<std::int64_t> m_last_token{0};
    /// A lease whose last release failed without a verdict (connection trouble): the next
    /// lock() gives it back first, instead of waiting for it to expire. Guarded by
    /// m_state_mutex.
    struct unreleased_lease {
        std::string owner;
        grant held;
    };
    std::optional<unreleased_lease> m_unreleased;
    /// The last lease of someone else that an acquire saw (attempt_state::sighting), kept
    /// between calls. Guarded by m_state_mutex.
    std::optional<lease_sighting> m_sighting;

    /// Gives back a lease left over by a failed release, once (any outcome forgets it: at
    /// worst it expires at its TTL).
    void release_leftover() noexcept {
        std::optional<unreleased_lease> leftover;
        {
            std::lock_guard lock(m_state_mutex);
            leftover.swap(m_unreleased);
        }
        if (!leftover)
            return;
        try {
            m_strategy->release(db(), lock_request{m_name, leftover->owner, m_options.ttl},
                                leftover->held);
        } catch (...) {
            // Lost meanwhile, or still unreachable: the lease ends at its TTL either way.
        }
    }
};

namespace {

/// Re-entry by the thread that holds `hold` (impl.mine()): one statement, conditional on our
/// owner id and token, that raises the hold count and moves the lease's local end. A grant
/// already known lost is never resurrected. Throws errc::lock_lost when the hold is lost (known
/// before, its lease's local end passed, or found by the statement): the hold is then marked
/// lost and forgotten. Any other sqlock::error is thrown with the hold kept as it was.
void reenter(mutex_impl& impl, const std::shared_ptr<active_hold>& hold, std::string_view owner) {
    const lock_request req{impl.m_name, owner, impl.m_options.ttl};
    std::unique_lock op(hold->op_mutex);
    grant held;
    std::string lost_message;
    {
        std::lock_guard state(hold->state_mutex);
        held = hold->current;
        if (hold->reason != loss_reason::none)
            lost_message = hold->message;
        else if (std::chrono::steady_clock::now() >= held.valid_until)
            // The database would still take the re-entry (it does not judge leases by its
            // clock), but others may already have dropped the lease.
            lost_message = "its lease's local end passed before the re-entrant lock";
    }
    try {
        if (!lost_message.empty())
            throw error(errc::lock_lost, "lock \"" + impl.m_name + "\" was lost: " + lost_message);
        auto renewed = impl.m_strategy->reenter(impl.db(), req, held);
        std::lock_guard state(hold->state_mutex);
        hold->current.hold_count = renewed.hold_count;
        hold->current.valid_until = renewed.valid_until;
    } catch (const error& e) {
        if (e.code() == errc::lock_lost) {
            op.unlock();
            hold->mark_lost(loss_reason::lost, e.what());
            impl.drop(hold);
        }
        throw;
    }
}

/// How often a cancellable lock call (mutex_access::try_lock_cancellable) looks at its stop
/// token while it waits locally, and the longest it waits in the server per attempt.
constexpr std::chrono::milliseconds cancel_poll{100};
constexpr std::chrono::milliseconds cancel_server_step{1000};

/// The end of the next wait of a call that waits until `until`: with a stop token, at most
/// cancel_poll from now, so that a stop request is seen that soon.
std::chrono::steady_clock::time_point cancel_horizon(const std::stop_token* stop,
                                                     std::chrono::steady_clock::time_point until) {
    if (!stop || !stop->stop_possible())
        return until;
    const auto soon = std::chrono::steady_clock::now() + cancel_poll;
    return soon < until ? soon : until;
}

/// This process's turn at a lock name (database_impl::local_gate): threads of this process
/// waiting for the same name queue here, so only one of them at a time asks the database (and
/// holds a connection for it). The turn is left when this object is destroyed.
class local_turn {
public:
    local_turn() = default;
    local_turn(const local_turn&) = delete;
    local_turn& operator=(const local_turn&) = delete;
    ~local_turn() {
        if (m_gate)
            m_gate->leave();
    }

    /// Waits for the turn at `name` until `deadline`; false when it did not come by then, or
    /// `stop` (when given) was requested first (looked at every cancel_poll). A call with no
    /// time to wait (`deadline` passed: try_lock()) takes no turn and returns true. Call once.
    bool enter(database_impl& db, const std::string& name,
               std::chrono::steady_clock::time_point deadline, const std::stop_token* stop) {
        if (deadline > std::chrono::steady_clock::now()) {
            auto gate = db.local_gate(name);
            for (;;) {
                if (stop && stop->stop_requested())
                    return false;
                const auto until = cancel_horizon(stop, deadline);
                if (gate->enter(until))
                    break;
                if (until == deadline)
                    return false;
            }
            m_gate = std::move(gate);
        }
        return true;
    }

private:
    std::shared_ptr<turnstile> m_gate;
};

/// What one acquire attempt came to.
enum class attempt_outcome {
    granted,     ///< the lock is this mutex's hold now, tracked by the lease keeper
    not_granted, ///< the database answered: not ours (yet), or held back (held_back())
    failed,      ///< a retryable error: connection trouble, a conflict, a full server
};

/// One lock call's way to a new grant, attempt by attempt, and what it keeps across its
/// attempts: their pacing, the session it waits on, its places in a server-side queue and in
/// SQLite's waiter queue, and whether the server refuses connections. Lives from the process's
/// local turn to the end of the call; its members go in reverse order of declaration: the
/// SQLite ticket first (the kernel drops its locks), then the sighting is kept, the queue seat
/// leaves, the wait session goes back, and the connect bound ends.
class acquire_call {
public:
    using time_point = std::chrono::steady_clock::time_point;

    /// Sets up the call: the connect bound, the queueing hint and lease sighting this mutex
    /// kept from its earlier calls, and (SQLite, time to wait) a ticket in the name's waiter
    /// queue. `request` must outlive the call. Throws only std::bad_alloc.
    /// With `stop` (a cancellable call), every wait looks at it at least every cancel_poll
    /// (waits in the server: cancel_server_step), and stopped() tells the caller to give up.
    acquire_call(mutex_impl& impl, const lock_request& request, time_point deadline,
                 const std::stop_token* stop = nullptr);

    /// True when the call's stop token (if any) was requested. Never throws.
    bool stopped() const noexcept { return m_stop && m_stop->stop_requested(); }

    /// Before each attempt (SQLite): waits in the waiter queue for the tickets ahead. False
    /// when the attempt bypasses a stopped waiter ahead (or is the last one, at the deadline).
    /// True without a ticket. Never throws.
    bool await_queue_turn() { return m_ticket.await_turn(m_deadline, m_delay); }

    /// One attempt at the lock, on the wait session if the call keeps one. A grant that
    /// waited long is confirmed once more (confirmed_after_wait), then made this mutex's hold
    /// (adopt). Throws the attempt's sqlock::error when retrying cannot help (worth_retrying):
    /// not retryable, the deadline passed, or a full server for try_lock().
    attempt_outcome attempt();

    /// True when the last attempt was held back for an owner of a lock in
    /// lock_request::defer_to; stores which in `*deferred` (when given). Never throws.
    bool held_back(unsigned* deferred) const;

    /// The lock is a lock file's transaction (select_for_update where the backend locks
    /// files): it ends the moment its holder process dies (queue_ticket::claim_holder).
    bool dies_with_process() const noexcept {
        return m_db.traits().lock_files &&
               m_impl.m_options.strategy == sqlock::strategy::select_for_update;
    }

    /// After an attempt made before joining SQLite's queue (it was idle) that was not
    /// granted: into the line now, so that no later attempt overtakes those who queued
    /// meanwhile. Never throws.
    void join_queue_if_asked_first() noexcept { m_ticket.join_if_asked_first(m_deadline); }

    /// After a `failed` attempt while the server refuses connections for lack of slots: sleeps
    /// one full-server pause (at most to the deadline) and returns true, the caller attempts
    /// once more. Throws server_full_timeout (errc::timeout) once `now` is past the deadline.
    /// Otherwise false; after an attempt that did not fail, it also forgets an earlier refusal
    /// (a connection got through: the server has slots again).
    bool wait_out_full_server(bool failed, time_point now);

    /// Between attempts, before the deadline (`now`): waits for the lock to be worth asking
    /// again. SQLite with a ticket: for the holder in the queue (not after a bypass). A wait
    /// the server already made (a server-side wait, a queue seat): none. Otherwise a jittered
    /// backoff pause that a release ends early (a local unlock; on PostgreSQL a notification,
    /// after an answered attempt). Never throws.
    void wait_before_next_attempt(bool failed, bool bypass, time_point now);

private:
    /// Classifies an attempt's error, noting a full server's refusal (for
    /// wait_out_full_server). True when another attempt may help while time remains; false
    /// when the error must reach the caller. Never throws.
    bool worth_retrying(const error& e);
    /// Makes `g` this mutex's hold for the calling thread, hands it the SQLite ticket (kept to
    /// its release) and has the lease keeper track it. Throws only std::bad_alloc.
    void adopt(grant g);
    /// The session on which to hear release notifications while waiting (PostgreSQL): the
    /// queue seat's, or the wait session (taken idle from the pool if none is kept yet),
    /// subscribed. nullptr when the backend does not notify, no session is at hand without a
    /// new connection, or subscribing failed. Never throws.
    session* release_listener();

    mutex_impl& m_impl;
    database_impl& m_db;
    const lock_request& m_request;
    const time_point m_deadline;
    const std::stop_token* const m_stop; ///< a cancellable call's stop token, or null
    const bool m_server_waits;           ///< the strategy waits server-side (select_for_update)
    std::uint64_t m_seen = 0; ///< the name's local wake-up generation at the last attempt
    /// A connection opened for an attempt (a seat, a lock session, a pooled one) gives up at
    /// the deadline too, not only at connect_timeout: a connect in flight then is abandoned.
    std::optional<connect_deadline> m_connect_bound;
    backoff m_delay;
    full_server_backoff m_full_delay;
    // Whether the server refuses every connection for lack of slots, since when, and its last
    // refusal. (A plain time point and a flag, not an optional: GCC 12 warns, wrongly, that an
    // optional one may be read uninitialized.)
    bool m_refused = false;
    time_point m_refused_since{};
    std::optional<error> m_refusal;
    // A polling waiter's session, kept from its first wait to the end of this call: its
    // attempts run there and it listens there for releases (PostgreSQL), so that waiting costs
    // no connection beyond the one the attempts use (docs/site/guides/connections.md). Declared
    // before `m_attempts`: a seat left in the queue goes back first.
    std::optional<pooled_session> m_wait_session;
    attempt_state m_attempts; // a place in a server-side queue: left when the call ends
    // The sighting of someone else's lease outlives this call, so that a caller polling with
    // try_lock() (a semaphore trying its permits) also drops a lease nobody renewed for its TTL.
    struct sighting_keeper {
        mutex_impl& impl;
        attempt_state& attempts;
        ~sighting_keeper() {
            std::lock_guard lock(impl.m_state_mutex);
            impl.m_sighting = attempts.sighting;
        }
    } m_keep_sighting{m_impl, m_attempts};
    queue_ticket m_ticket; ///< SQLite: this call's ticket in the name's waiter queue
};

acquire_call::acquire_call(mutex_impl& impl, const lock_request& request, time_point deadline,
                           const std::stop_token* stop)
    : m_impl(impl), m_db(impl.db()), m_request(request), m_deadline(deadline), m_stop(stop),
      m_server_waits(impl.m_strategy->waits_server_side()),
      m_delay(impl.m_options.retry_min, impl.m_options.retry_max) {
    if (deadline != time_point::max() && deadline != time_point::min())
        m_connect_bound.emplace(deadline);
    m_attempts.queue_first = impl.m_contended.load(std::memory_order_relaxed);
    {
        std::lock_guard lock(impl.m_state_mutex);
        m_attempts.sighting = impl.m_sighting;
    }
    m_ticket.enter(m_db, impl.m_name, deadline);
}

attempt_outcome acquire_call::attempt() {
    m_db.count_acquire_attempt();
    m_seen = m_db.wakeups().generation(m_impl.m_name);
    m_attempts.waited = false;
    m_attempts.deferred = 0;
    if (m_wait_session && (seat_session(m_attempts) || !(*m_wait_session)->usable()))
        m_wait_session.reset(); // a seat took over (or it broke): one connection at a time
    try {
        const route_scope via_wait_session(m_db, m_wait_session ? &**m_wait_session : nullptr);
        std::optional<busy_wait_limit> asking_first;
        m_ticket.limit_asking_first(asking_first);
        auto budget = m_ticket.server_budget(wait_budget(m_deadline));
        if (m_stop && (budget == server_wait::forever || budget > cancel_server_step))
            budget = cancel_server_step; // a cancellable call looks at its stop token so often
        auto g = m_impl.m_strategy->try_acquire(m_db, m_request, budget, m_attempts);
        if (g)
            g = confirmed_after_wait(*m_impl.m_strategy, m_db, m_request, std::move(*g));
        if (g && dies_with_process() && !m_ticket.claim_holder(m_db, m_impl.m_name)) {
            // A killed holder's guard is still stopping its job: not ours yet.
            m_impl.m_strategy->release(m_db, m_request, *g);
            return attempt_outcome::not_granted;
        }
        if (g) {
            adopt(std::move(*g));
            return attempt_outcome::granted;
        }
    } catch (const error& e) {
        if (!worth_retrying(e))
            throw;
        return attempt_outcome::failed;
    }
    return attempt_outcome::not_granted;
}

bool acquire_call::worth_retrying(const error& e) {
    if (is_server_full(e)) {
        // No free connection slot on the server (docs/site/guides/api.md, "A full server is
        // waited out"): it frees up as other clients disconnect, so a caller with time left waits
        // it out. try_lock() (no time to wait) reports it at once.
        if (m_deadline == time_point::min())
            return false;
        if (!m_refused) {
            m_refused = true;
            m_refused_since = std::chrono::steady_clock::now();
        }
        m_refusal = e;
        return true;
    }
    // Connection trouble and conflicts are worth another try while time remains; anything
    // else (missing table, bad input) will not get better by waiting.
    if (!e.retryable() || std::chrono::steady_clock::now() >= m_deadline)
        return false;
    m_refused = false;
    return true;
}

void acquire_call::adopt(grant g) {
    auto hold = std::make_shared<active_hold>();
    hold->db = database_access::impl(m_impl.m_db);
    hold->strategy = m_impl.m_strategy;
    hold->name = m_impl.m_name;
    hold->owner = m_request.owner;
    hold->ttl = m_impl.m_options.ttl;
    hold->thread = std::this_thread::get_id();
    hold->renew = m_impl.m_options.renew;
    hold->on_lost = gated(m_impl.m_callbacks, m_impl.m_options.on_lost);
    hold->on_at_risk = gated(m_impl.m_callbacks, m_impl.m_options.on_at_risk);
    hold->current = std::move(g);
    m_impl.m_contended.store(m_attempts.contended, std::memory_order_relaxed);
    m_impl.m_last_token.store(hold->current.token, std::memory_order_relaxed);
    hold->next_renewal = std::chrono::steady_clock::now() + m_impl.m_options.ttl / 3;
    {
        std::lock_guard lock(m_impl.m_state_mutex);
        m_impl.m_held = hold;
        // A ticket kept by an earlier hold of this mutex that was lost and never unlocked
        // goes first, so that this one can take the holder byte.
        m_impl.m_turn.reset();
        m_impl.m_turn = m_ticket.hand_to_hold();
    }
    lease_keeper::instance().track(hold);
}

bool acquire_call::held_back(unsigned* deferred) const {
    if (m_attempts.deferred == 0)
        return false;
    // Held back for someone who goes first: the caller (a permit pool) decides what to do
    // about that; asking this lock again would only be held back again.
    if (deferred)
        *deferred = m_attempts.deferred;
    return true;
}

bool acquire_call::wait_out_full_server(bool failed, time_point now) {
    if (failed && m_refused) {
        if (now >= m_deadline)
            throw server_full_timeout(m_impl.m_name, *m_refusal, now - m_refused_since);
        const auto pause = m_full_delay.next();
        pause_until(cancel_horizon(m_stop, m_deadline - now < pause ? m_deadline : now + pause));
        return true;
    }
    if (!failed) {
        m_refused = false; // a connection got through: the server has slots again
        m_full_delay.reset();
    }
    return false;
}

void acquire_call::wait_before_next_attempt(bool failed, bool bypass, time_point now) {
    if (m_ticket.active() && !failed) {
        // Queued (SQLite): not first in line (the attempt bypassed a stopped waiter ahead)
        // goes back to waiting in line; first in line waits for the holder to go, at most
        // for the backoff's pause, then asks again (a stale lease is dropped at that pace).
        if (!bypass)
            m_ticket.wait_for_holder(now, cancel_horizon(m_stop, m_deadline), m_delay);
        return;
    }
    if ((m_server_waits || m_attempts.waited) && !failed)
        return; // the server already waited; its wait ended before our deadline
    // Never listens after a failed attempt: a release is not what that waits for.
    session* const listener = failed ? nullptr : release_listener();
    // Sleep with jittered backoff, but wake at once when the lock may have become free.
    const auto pause = m_delay.next();
    m_db.await_release(listener, m_impl.m_name, m_seen,
                       cancel_horizon(m_stop, m_deadline - now < pause ? m_deadline : now + pause));
}

session* acquire_call::release_listener() {
    // Contended: from now on (PostgreSQL) a release notification wakes us instead of the next
    // poll, received on the session this call already uses: its queue seat, or the pooled
    // session its attempts ran on, kept from now on. Never a new connection.
    if (!m_db.notifies_releases())
        return nullptr;
    session* listener = seat_session(m_attempts);
    if (!listener) {
        if (!m_wait_session) {
            if (auto idle = m_db.try_checkout_idle())
                m_wait_session.emplace(std::move(*idle));
        }
        if (m_wait_session)
            listener = &**m_wait_session;
    }
    if (listener && !m_db.listen_for_releases(*listener))
        listener = nullptr;
    return listener;
}

/// The core of every lock call (mutex::try_lock_until_steady): re-enters a hold the caller has,
/// else retries until `deadline` on the steady clock (time_point::max(): forever;
/// time_point::min(): one attempt). With `defer_to`, a new grant is held back while another
/// owner holds a lock named there (false, with a bit per held name in `*deferred`). With
/// `stop`, gives up (false, nothing held) soon after a stop request: see acquire_call.
bool lock_until(mutex_impl& impl, std::chrono::steady_clock::time_point deadline,
                const std::array<std::string_view, 2>* defer_to, unsigned* deferred,
                const std::stop_token* stop) {
    const std::string owner = impl.owner();
    if (const auto hold = impl.mine()) {
        reenter(impl, hold, owner); // throws lock_lost for a hold already lost
        return true;
    }

    auto& db = impl.db();
    db.require_schema(); // a clear "run sqlock migrate" instead of a failing statement
    impl.release_leftover();
    lock_request request{impl.m_name, owner, impl.m_options.ttl,
                         impl.m_last_token.load(std::memory_order_relaxed)};
    if (defer_to)
        request.defer_to = *defer_to;
    local_turn turn;
    if (!turn.enter(db, impl.m_name, deadline, stop))
        return false; // other threads of this process asked for the name until the deadline

    acquire_call call(impl, request, deadline, stop);
    for (;;) {
        if (call.stopped())
            return false;
        const bool bypass = !call.await_queue_turn();
        const auto outcome = call.attempt();
        if (outcome == attempt_outcome::granted)
            return true;
        if (call.held_back(deferred))
            return false; // asking this lock again would only be held back again
        call.join_queue_if_asked_first();
        const auto now = std::chrono::steady_clock::now();
        const bool failed = outcome == attempt_outcome::failed;
        if (call.wait_out_full_server(failed, now))
            continue; // one more attempt, at the latest at the deadline
        if (now >= deadline)
            return false;
        call.wait_before_next_attempt(failed, bypass, now);
    }
}

} // namespace

} // namespace detail

mutex::mutex(database db, std::string name, mutex_options options)
    : m_impl(std::make_unique<detail::mutex_impl>(std::move(db), std::move(name),
                                                  std::move(options), false)) {}

mutex::mutex(reserved_name_t, database db, std::string name, mutex_options options)
    : m_impl(std::make_unique<detail::mutex_impl>(std::move(db), std::move(name),
                                                  std::move(options), true)) {}

mutex::~mutex() {
    // First: a loss the lease keeper is telling right now (its callback may use state that
    // goes with this object, as a shared_mutex's does) is waited out, and none comes later.
    m_impl->m_callbacks->close();
    m_impl->release_leftover(); // a lease an earlier failed release left behind
    // Destroying a held mutex gives the lock back (all holds) instead of leaving it to expire.
    std::shared_ptr<detail::active_hold> held;
    {
        std::lock_guard lock(m_impl->m_state_mutex);
        held.swap(m_impl->m_held);
    }
    if (!held)
        return;
    try {
        detail::lock_op(held->op_mutex);
        std::lock_guard op(held->op_mutex, std::adopt_lock);
        detail::grant last;
        {
            std::lock_guard state(held->state_mutex);
            held->released = true;
            last = held->current;
        }
        last.hold_count = 1;
        m_impl->m_strategy->release(m_impl->db(), held->request(), last);
    } catch (...) {
        // Nothing to report to: a lease expires at its TTL, a session ends with its connection.
    }
}

void mutex::lock() {
    try_lock_until_steady(std::chrono::steady_clock::time_point::max());
}

bool mutex::try_lock() {
    // One attempt: a deadline in the past means "do not wait".
    return try_lock_until_steady(std::chrono::steady_clock::time_point::min());
}

bool mutex::try_lock_until_steady(std::chrono::steady_clock::time_point deadline) {
    return try_lock_until_steady(deadline, nullptr, nullptr);
}

bool mutex::try_lock_until_steady(std::chrono::steady_clock::time_point deadline,
                                  const std::array<std::string_view, 2>* defer_to,
                                  unsigned* deferred) {
    return detail::lock_until(*m_impl, deadline, defer_to, deferred, nullptr);
}

namespace {

/// strategy.release(), once more (twice at most) when the database refused it as busy or
/// conflicting (SQLite's write lock held past busy_timeout by a crowd of writers, a
/// serialization failure), while the hold is still valid: such a release did not run, and a
/// lease left behind makes the next holder wait out its TTL. Throws what the last try threw.
void release_retrying_busy(detail::lock_strategy& strategy, detail::database_impl& db,
                           const detail::active_hold& hold, const detail::grant& held) {
    detail::retry_if_busy([&] { strategy.release(db, hold.request(), held); },
                          std::chrono::milliseconds(20),
                          [&] { return hold.valid(std::chrono::steady_clock::now()); });
}

/// unlock()'s first look at `hold`: the loss already known (by the lease keeper), else none.
/// When this unlock() ends a hold still valid, marks it `releasing`: from here its lease may
/// end without a loss being reported (the holder's work is done). A hold already past its
/// local end is left to the lease keeper, which tells on_lost on its own thread: never on the
/// caller's, where the callback might want a mutex the caller holds.
loss_reason mark_releasing(detail::active_hold& hold) {
    std::lock_guard state(hold.state_mutex);
    if (hold.reason == loss_reason::none && hold.current.hold_count <= 1 &&
        std::chrono::steady_clock::now() < hold.current.valid_until)
        hold.releasing = true;
    return hold.reason;
}

} // namespace

void mutex::unlock() noexcept {
    auto& impl = *m_impl;
    const auto hold = impl.mine();
    if (!hold) {
        impl.record_error("unlock() of lock \"" + impl.m_name +
                          "\" by a thread that does not hold it");
        return;
    }
    std::string failure;
    bool gone = false;
    loss_reason loss = mark_releasing(*hold);
    try {
        detail::lock_op(hold->op_mutex); // a release may run on a fiber
        std::lock_guard op(hold->op_mutex, std::adopt_lock);
        detail::grant held;
        {
            std::lock_guard state(hold->state_mutex);
            held = hold->current;
        }
        gone = held.hold_count <= 1;
        try {
            release_retrying_busy(*impl.m_strategy, impl.db(), *hold, held);
            if (!gone) {
                std::lock_guard state(hold->state_mutex);
                --hold->current.hold_count;
            }
        } catch (const error& e) {
            failure = e.what();
            if (e.code() == errc::lock_lost) {
                gone = true; // nothing left to release later
                if (loss == loss_reason::none)
                    loss = loss_reason::lost;
            } else if (!gone) {
                std::lock_guard state(hold->state_mutex);
                --hold->current.hold_count;
            } else if (!held.pinned) {
                // The lease may still be ours: the next lock() gives it back first.
                held.seat.reset();
                held.hold_count = 1;
                std::lock_guard lock(impl.m_state_mutex);
                impl.m_unreleased = detail::mutex_impl::unreleased_lease{hold->owner, held};
            }
        }
        if (gone) {
            // Before the lease keeper can take op_mutex again: a renewal sent after our own
            // release would find the row gone and report a loss nobody caused (a `sqlock run`
            // whose command had finished exited 76).
            std::lock_guard state(hold->state_mutex);
            hold->released = true;
        }
    } catch (const std::exception& e) {
        failure = e.what();
    } catch (...) {
        failure = "unknown failure while releasing";
    }
    if (!failure.empty())
        impl.record_error(failure);
    if (gone) {
        {
            std::lock_guard lock(impl.m_state_mutex);
            impl.m_last_loss = loss;
        }
        impl.drop(hold);
        impl.db().wakeups().wake(impl.m_name); // local waiters retry at once
    }
}

bool mutex::owns_lock() const noexcept {
    const auto hold = m_impl->mine();
    if (!hold || !hold->valid(std::chrono::steady_clock::now()))
        return false;
    std::lock_guard state(hold->state_mutex);
    // A select_for_update lock is gone with its session; the check never blocks.
    return !hold->current.pinned || hold->current.pinned->usable();
}

loss_reason mutex::lost_reason() const noexcept {
    const auto hold = m_impl->mine();
    if (!hold)
        return loss_reason::none;
    std::lock_guard state(hold->state_mutex);
    return hold->reason;
}

std::stop_token mutex::stop_token() const noexcept {
    const auto hold = m_impl->mine();
    return hold ? hold->stop.get_token() : std::stop_token{};
}

std::int64_t mutex::token() const {
    const auto hold = m_impl->mine();
    if (!hold)
        throw error(errc::lock_lost, "token() of lock \"" + m_impl->m_name +
                                         "\": the calling thread does not hold it");
    std::lock_guard state(hold->state_mutex);
    return hold->current.token;
}

std::int64_t mutex::hold_count() const noexcept {
    const auto hold = m_impl->mine();
    if (!hold)
        return 0;
    std::lock_guard state(hold->state_mutex);
    return hold->current.hold_count;
}

std::int64_t mutex::server_session_id() const noexcept {
    const auto hold = m_impl->mine();
    if (!hold)
        return 0;
    std::lock_guard state(hold->state_mutex);
    return hold->current.pinned ? hold->current.pinned->server_session_id() : 0;
}

const std::string& mutex::name() const noexcept {
    return m_impl->m_name;
}

std::string mutex::owner_id() const {
    return m_impl->owner();
}

loss_reason mutex::last_loss() const noexcept {
    std::lock_guard lock(m_impl->m_state_mutex);
    return m_impl->m_last_loss;
}

std::string mutex::last_error() const {
    std::lock_guard lock(m_impl->m_state_mutex);
    return m_impl->m_last_error;
}

void detail::mutex_access::own_by_handle(mutex& m) noexcept {
    m.m_impl->m_by_handle = true;
}

bool detail::mutex_access::try_lock_cancellable(mutex& m,
                                                std::chrono::steady_clock::time_point deadline,
                                                const std::stop_token& stop) {
    return detail::lock_until(*m.m_impl, deadline, nullptr, nullptr, &stop);
}

std::chrono::steady_clock::time_point detail::mutex_access::lease_end(const mutex& m) noexcept {
    const auto hold = m.m_impl->mine();
    if (!hold)
        return std::chrono::steady_clock::time_point::min();
    std::lock_guard state(hold->state_mutex);
    return hold->current.valid_until;
}

} // namespace sqlock
