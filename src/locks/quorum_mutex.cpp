// sqlock::quorum_mutex: the quorum protocol (strategies/quorum.hpp) behind a TimedLockable
// type, with the process-wide lease keeper renewing and watching its grants.
#include "sqlock/quorum_mutex.hpp"

#include "base/owner.hpp"
#include "base/waiting.hpp"
#include "locks/hold.hpp"
#include "locks/lock_name.hpp"
#include "locks/quorum_members.hpp"
#include "strategies/quorum.hpp"

#include <atomic>
#include <thread>

namespace sqlock::detail {

class quorum_impl {
public:
    quorum_impl(std::vector<database> members, std::string name, quorum_options options);

    std::vector<database> m_members; ///< kept open for as long as this lock lives
    std::shared_ptr<quorum_protocol> m_protocol;
    std::string m_name;
    std::string m_owner;
    quorum_options m_options;

    mutable std::mutex m_state_mutex;
    std::shared_ptr<active_hold> m_held; ///< the current grant, or null
    std::atomic<loss_reason> m_last_loss{loss_reason::none};

    std::shared_ptr<active_hold> held() const {
        std::lock_guard lock(m_state_mutex);
        return m_held;
    }
    lock_request request() const { return lock_request{m_name, m_owner, m_options.ttl}; }
    /// Makes `g` the current grant and has the lease keeper renew and watch it.
    void adopt(grant g);
    /// One attempt; nullopt with `why` when not granted ("held", or too few members).
    std::optional<grant> attempt(std::vector<std::optional<lease_sighting>>& sightings,
                                 std::string& why);
};

namespace {

void validate(const std::vector<database>& members, const quorum_options& o) {
    using namespace std::chrono;
    validate_quorum_members(members);
    if (o.ttl <= milliseconds::zero() || o.ttl > hours(24 * 30))
        throw error(errc::invalid_argument, "ttl must be positive and at most 30 days");
    if (o.retry_min <= milliseconds::zero() || o.retry_max < o.retry_min)
        throw error(errc::invalid_argument, "need 0 < retry_min <= retry_max");
    if (o.member_timeout <= milliseconds::zero() || o.member_timeout >= o.ttl / 2)
        throw error(errc::invalid_argument,
                    "member_timeout must be positive and below ttl / 2 (a round must end well "
                    "within the lease it asks for)");
}

std::shared_ptr<quorum_protocol> make_protocol(const std::vector<database>& members,
                                               const quorum_options& o) {
    std::vector<std::unique_ptr<quorum_member>> list;
    for (const auto& m : members)
        list.push_back(std::make_unique<quorum_member>(database_access::impl(m), m.url(),
                                                       2 * o.member_timeout));
    return std::make_shared<quorum_protocol>(std::move(list), o.member_timeout);
}

} // namespace

quorum_impl::quorum_impl(std::vector<database> members, std::string name, quorum_options options)
    : m_members(std::move(members)), m_name(std::move(name)), m_options(std::move(options)) {
    validate_lock_name(m_name);
    validate(m_members, m_options);
    m_protocol = make_protocol(m_members, m_options);
    m_owner = this_process().id + ":q" + std::to_string(next_handle_number());
}

std::optional<grant> quorum_impl::attempt(std::vector<std::optional<lease_sighting>>& sightings,
                                          std::string& why) {
    return m_protocol->try_acquire_quorum(request(), sightings, why);
}

void quorum_impl::adopt(grant g) {
    auto hold = std::make_shared<active_hold>();
    hold->db = database_access::impl(m_members.front()); // not used by the quorum protocol
    hold->strategy = m_protocol;
    hold->name = m_name;
    hold->owner = m_owner;
    hold->ttl = m_options.ttl;
    hold->thread = std::this_thread::get_id();
    hold->renew = m_options.renew;
    hold->on_lost = m_options.on_lost;
    hold->on_at_risk = m_options.on_at_risk;
    hold->current = std::move(g);
    hold->next_renewal = std::chrono::steady_clock::now() + m_options.ttl / 3;
    {
        std::lock_guard lock(m_state_mutex);
        m_held = hold;
    }
    lease_keeper::instance().track(hold);
}

} // namespace sqlock::detail

namespace sqlock {

quorum_mutex::quorum_mutex(std::vector<database> members, std::string name, quorum_options options)
    : m_impl(std::make_unique<detail::quorum_impl>(std::move(members), std::move(name),
                                                   std::move(options))) {}

quorum_mutex::quorum_mutex(const std::vector<std::string>& member_urls, std::string name,
                           quorum_options options, const connect_options& connect)
    : quorum_mutex(detail::unconnected_members(member_urls, connect), std::move(name),
                   std::move(options)) {}

quorum_mutex::~quorum_mutex() {
    unlock();
}

void quorum_mutex::lock() {
    try_lock_until_steady(std::chrono::steady_clock::time_point::max());
}

bool quorum_mutex::try_lock() {
    return try_lock_until_steady(std::chrono::steady_clock::time_point::min());
}

bool quorum_mutex::try_lock_until_steady(std::chrono::steady_clock::time_point deadline) {
    auto& impl = *m_impl;
    if (const auto h = impl.held(); h && !h->released)
        throw error(errc::invalid_argument, "quorum lock \"" + impl.m_name +
                                                "\" is already held by this quorum_mutex "
                                                "(it is not re-entrant)");
    std::vector<std::optional<detail::lease_sighting>> sightings(impl.m_protocol->size());
    detail::backoff pause(impl.m_options.retry_min, impl.m_options.retry_max);
    for (;;) {
        std::string why;
        if (auto g = impl.attempt(sightings, why)) {
            impl.adopt(std::move(*g));
            return true;
        }
        const auto now = std::chrono::steady_clock::now();
        if (now >= deadline) {
            if (why == "held")
                return false;
            throw error(errc::connection, "quorum lock \"" + impl.m_name + "\": " + why);
        }
        const auto sleep = std::chrono::steady_clock::now() + pause.next();
        std::this_thread::sleep_until(std::min(sleep, deadline));
    }
}

void quorum_mutex::unlock() noexcept {
    auto& impl = *m_impl;
    std::shared_ptr<detail::active_hold> held;
    {
        std::lock_guard lock(impl.m_state_mutex);
        held.swap(impl.m_held);
    }
    if (!held)
        return;
    try {
        std::lock_guard op(held->op_mutex);
        detail::grant last;
        if (std::chrono::steady_clock::now() >= held->current.valid_until)
            held->mark_lost(loss_reason::lost, "quorum lock \"" + impl.m_name +
                                                   "\": its lease's local end passed before it "
                                                   "was given back");
        {
            std::lock_guard state(held->state_mutex);
            impl.m_last_loss = held->reason;
            if (held->released)
                return;
            held->released = true;
            last = held->current;
        }
        impl.m_protocol->release(*held->db, held->request(), last);
    } catch (const error& e) {
        if (e.code() == errc::lock_lost) { // lost while held, found at the release: last_loss()
            std::lock_guard state(held->state_mutex);
            if (held->reason == loss_reason::none) {
                held->reason = loss_reason::lost;
                held->message = e.what();
            }
            impl.m_last_loss = held->reason;
        }
    } catch (...) {
        // members not told now are told when they answer again; the rest end with the lease
    }
}

bool quorum_mutex::owns_lock() const noexcept {
    const auto h = m_impl->held();
    return h && h->valid(std::chrono::steady_clock::now());
}

std::int64_t quorum_mutex::token() const {
    const auto h = m_impl->held();
    if (!h || !h->valid(std::chrono::steady_clock::now()))
        throw error(errc::lock_lost,
                    "quorum lock \"" + m_impl->m_name + "\" is not held by this quorum_mutex");
    std::lock_guard state(h->state_mutex);
    return h->current.token;
}

loss_reason quorum_mutex::lost_reason() const noexcept {
    const auto h = m_impl->held();
    if (!h)
        return loss_reason::none;
    std::lock_guard state(h->state_mutex);
    return h->reason;
}

loss_reason quorum_mutex::last_loss() const noexcept {
    return m_impl->m_last_loss.load();
}

std::stop_token quorum_mutex::stop_token() const noexcept {
    const auto h = m_impl->held();
    return h ? h->stop.get_token() : std::stop_token();
}

const std::string& quorum_mutex::name() const noexcept {
    return m_impl->m_name;
}

std::size_t quorum_mutex::members() const noexcept {
    return m_impl->m_protocol->size();
}

std::size_t quorum_mutex::majority() const noexcept {
    return m_impl->m_protocol->majority();
}

} // namespace sqlock
