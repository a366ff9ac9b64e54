// sqlock::leader_election: a sqlock::mutex (unique_key, renewed) per term.
//
// Each term has its own mutex object, so that any thread may end the term: a mutex's hold
// belongs to the thread that locked it, but destroying the mutex releases it from anywhere.
#include "sqlock/leader.hpp"

#include "database/database_impl.hpp"
#include "locks/handle_access.hpp"
#include "locks/leader_terms.hpp"
#include "locks/mutex_access.hpp"

#include <mutex>
#include <thread>
#include <utility>

namespace sqlock {

namespace detail {

mutex_options term_options(const leader_options& o) {
    mutex_options m;
    m.strategy = strategy::unique_key;
    m.ttl = o.ttl;
    m.retry_min = o.retry_min;
    m.retry_max = o.retry_max;
    m.renew = true;
    m.on_lost = o.on_lost;
    m.on_at_risk = o.on_at_risk;
    return m;
}

class leader_election_impl {
public:
    leader_election_impl(database db, std::string name, leader_options options)
        : m_db(std::move(db)), m_name(std::move(name)), m_options(std::move(options)) {
        m_next = make_mutex(); // validates name and options
    }

    std::unique_ptr<mutex> make_mutex() const {
        return std::make_unique<mutex>(m_db, m_name, term_options(m_options));
    }

    /// The current term is still ours (caller holds m_state).
    bool leading_locked() const noexcept {
        if (!m_held || m_stop.stop_requested())
            return false;
        return m_leading_thread != std::this_thread::get_id() || m_held->owns_lock();
    }

    /// Ends the current term, if any: stop first, then release (see resign()).
    void end_term() noexcept {
        std::unique_ptr<mutex> held;
        bool on_leading_thread = false;
        {
            std::lock_guard state(m_state);
            if (!m_held)
                return;
            held = std::move(m_held);
            on_leading_thread = m_leading_thread == std::this_thread::get_id();
            m_leading_thread = {};
            m_stop.request_stop();
            m_forward_stop.reset();
        }
        // Why the term ended: lost while leading (told by stop_token()/on_lost), else lost as
        // resign() found out (its lease was taken over while this process was paused).
        auto loss = held->lost_reason();
        if (on_leading_thread) {
            held->unlock();
            if (loss == loss_reason::none)
                loss = held->last_loss();
            if (auto failure = held->last_error(); !failure.empty()) {
                std::lock_guard state(m_state);
                m_last_error = std::move(failure);
            }
        }
        {
            std::lock_guard state(m_state);
            m_last_loss = loss;
        }
        held.reset(); // releases what is still held (off the leading thread: all of it)
    }

    /// One campaign until `deadline`; with `stop`, it also gives up soon after a stop request
    /// (mutex_access::try_lock_cancellable).
    std::optional<std::int64_t> campaign(std::chrono::steady_clock::time_point deadline,
                                         const std::stop_token* stop = nullptr) {
        using clock = std::chrono::steady_clock;
        // One campaign at a time (a turnstile, not std::timed_mutex: its timed lock is a
        // pthread_mutex_clocklock, which ThreadSanitizer cannot see).
        if (!m_campaign.enter(deadline))
            return std::nullopt;
        struct turn_guard {
            turnstile& gate;
            ~turn_guard() { gate.leave(); }
        } turn{m_campaign};
        {
            std::lock_guard state(m_state);
            if (leading_locked())
                return m_term;
        }
        end_term(); // a term that was lost: its mutex goes (its release finds it gone)
        if (!m_next)
            m_next = make_mutex();
        bool won = false;
        if (stop) {
            won = mutex_access::try_lock_cancellable(*m_next, deadline, *stop);
        } else if (deadline == clock::time_point::max()) {
            m_next->lock();
            won = true;
        } else {
            won = m_next->try_lock_until(deadline);
        }
        if (!won)
            return std::nullopt;
        const auto term = m_next->token();
        const auto lost = m_next->stop_token();
        std::lock_guard state(m_state);
        m_held = std::move(m_next);
        m_leading_thread = std::this_thread::get_id();
        m_term = term;
        m_stop = std::stop_source();
        m_forward_stop =
            std::make_unique<std::stop_callback<forward_stop>>(lost, forward_stop{m_stop});
        return term;
    }

    struct forward_stop {
        std::stop_source target;
        void operator()() noexcept { target.request_stop(); }
    };

    database m_db;
    std::string m_name;
    leader_options m_options;

    turnstile m_campaign;          ///< one campaign at a time; guards m_next
    std::unique_ptr<mutex> m_next; ///< the mutex the next campaign locks

    mutable std::mutex m_state;    ///< guards what follows
    std::unique_ptr<mutex> m_held; ///< the current term's mutex (null: not leading)
    std::thread::id m_leading_thread;
    std::int64_t m_term = 0;
    std::stop_source m_stop{std::nostopstate}; ///< the current (or last) term's stop
    /// Requests m_stop when the mutex reports the grant lost.
    std::unique_ptr<std::stop_callback<forward_stop>> m_forward_stop;
    std::string m_last_error;
    loss_reason m_last_loss = loss_reason::none; ///< how the last term ended
};

} // namespace detail

leader_election::leader_election(database db, std::string name, leader_options options)
    : m_impl(std::make_unique<detail::leader_election_impl>(std::move(db), std::move(name),
                                                            std::move(options))) {}

leader_election::~leader_election() {
    m_impl->end_term();
}

std::int64_t leader_election::campaign() {
    return *m_impl->campaign(std::chrono::steady_clock::time_point::max());
}

std::optional<std::int64_t> leader_election::try_campaign() {
    return m_impl->campaign(std::chrono::steady_clock::time_point::min());
}

std::optional<std::int64_t>
leader_election::try_campaign_until_steady(std::chrono::steady_clock::time_point deadline) {
    return m_impl->campaign(deadline);
}

void leader_election::resign() noexcept {
    m_impl->end_term();
}

bool leader_election::is_leader() const noexcept {
    std::lock_guard state(m_impl->m_state);
    return m_impl->leading_locked();
}

std::int64_t leader_election::term() const noexcept {
    std::lock_guard state(m_impl->m_state);
    return m_impl->leading_locked() ? m_impl->m_term : 0;
}

std::stop_token leader_election::stop_token() const noexcept {
    std::lock_guard state(m_impl->m_state);
    return m_impl->m_stop.get_token();
}

std::optional<leader_info> leader_election::leader() const {
    auto db = m_impl->m_db; // database's members are not const: a copy shares the pool
    const auto row = db.find(m_impl->m_name);
    if (!row)
        return std::nullopt;
    if (row->strategy != to_string(strategy::unique_key))
        throw error(errc::invalid_argument,
                    "lock \"" + m_impl->m_name + "\" is a " + row->strategy +
                        " lock, not a leader election: use another election name");
    if (row->owner.empty() || row->expired())
        return std::nullopt; // released, or its holder stopped renewing
    leader_info info;
    info.id = row->owner;
    info.host = row->host;
    info.pid = row->pid;
    info.term = row->token;
    info.since = row->acquired_at;
    info.expires = row->expires_at;
    info.remaining = row->expires_in;
    info.leading_for = row->held_for;
    return info;
}

const std::string& leader_election::name() const noexcept {
    return m_impl->m_name;
}

std::string leader_election::last_error() const {
    std::lock_guard state(m_impl->m_state);
    return m_impl->m_last_error;
}

loss_reason leader_election::last_loss() const {
    std::lock_guard state(m_impl->m_state);
    return m_impl->m_last_loss;
}

std::optional<std::int64_t>
detail::handle_access::try_campaign_cancellable(leader_election& e,
                                                std::chrono::steady_clock::time_point deadline,
                                                const std::stop_token& stop) {
    return e.m_impl->campaign(deadline, &stop);
}

} // namespace sqlock
