// What every backend's session shares: skipping unchanged settings, the clock watch, and
// running single statements and batches.
#include "base/session.hpp"

#include "base/clock_watch.hpp"

#include <algorithm>
#include <charconv>
#include <iterator>

namespace sqlock::detail {

namespace {

/// How a skip-if-unchanged parameter is remembered: its value, tagged by type.
std::optional<std::string> remembered(const param& p) {
    if (const auto* n = std::get_if<std::int64_t>(&p))
        return std::to_string(*n);
    if (const auto* v = std::get_if<std::string_view>(&p)) {
        std::string quoted(1, '\'');
        quoted.append(*v);
        return quoted;
    }
    return std::string("NULL");
}

/// remembered(p) == stored, without building the string (this runs on every lock()).
bool same_as_remembered(const param& p, const std::optional<std::string>& stored) {
    if (!stored)
        return false;
    if (const auto* n = std::get_if<std::int64_t>(&p)) {
        char digits[24];
        const auto end = std::to_chars(std::begin(digits), std::end(digits), *n).ptr;
        return std::string_view(digits, static_cast<std::size_t>(end - digits)) == *stored;
    }
    if (const auto* v = std::get_if<std::string_view>(&p))
        return stored->size() == v->size() + 1 && stored->front() == '\'' &&
               std::string_view(*stored).substr(1) == *v;
    return *stored == "NULL";
}

thread_local std::optional<std::chrono::milliseconds> t_busy_wait_limit;
thread_local std::optional<std::chrono::steady_clock::time_point> t_connect_deadline;
thread_local bool t_finish_connects = false;

} // namespace

busy_wait_limit::busy_wait_limit(std::chrono::milliseconds limit) noexcept
    : m_outer(t_busy_wait_limit) {
    t_busy_wait_limit = limit;
}

busy_wait_limit::~busy_wait_limit() {
    t_busy_wait_limit = m_outer;
}

std::optional<std::chrono::milliseconds> busy_wait_limit::current() noexcept {
    return t_busy_wait_limit;
}

connect_deadline::connect_deadline(std::chrono::steady_clock::time_point deadline) noexcept
    : m_outer(t_connect_deadline) {
    t_connect_deadline = deadline;
}

connect_deadline::~connect_deadline() {
    t_connect_deadline = m_outer;
}

std::optional<std::chrono::steady_clock::time_point> connect_deadline::current() noexcept {
    return t_connect_deadline;
}

finish_connects::finish_connects() noexcept : m_outer(t_finish_connects) {
    t_finish_connects = true;
}

finish_connects::~finish_connects() {
    t_finish_connects = m_outer;
}

bool finish_connects::current() noexcept {
    return t_finish_connects;
}

wait_scopes exchange_wait_scopes(const wait_scopes& next) noexcept {
    wait_scopes previous{t_busy_wait_limit, t_connect_deadline, t_finish_connects};
    t_busy_wait_limit = next.busy_wait_limit;
    t_connect_deadline = next.connect_deadline;
    t_finish_connects = next.finish_connects;
    return previous;
}

std::chrono::milliseconds connect_budget(std::chrono::milliseconds connect_timeout) noexcept {
    using namespace std::chrono;
    if (!t_connect_deadline || *t_connect_deadline == steady_clock::time_point::max())
        return connect_timeout;
    const auto now = steady_clock::now();
    const auto left = *t_connect_deadline <= now ? milliseconds::zero()
                                                 : ceil<milliseconds>(*t_connect_deadline - now);
    return std::min(connect_timeout, std::max(left, min_connect_budget));
}

bool session::needs_sending(statement id, std::span<const param> params) {
    if (m_catalog.is_noop(id))
        return false;
    if (!m_catalog.skips_if_unchanged(id))
        return true;
    const auto index = static_cast<std::size_t>(id);
    // Compare only the parameters this backend's SQL uses ($N present in the text).
    const auto used_mask = m_catalog.used_params(id);
    const auto is_used = [&](std::size_t i) {
        return i >= 64 || ((used_mask >> i) & 1U) != 0;
    };
    auto& last = m_last_params[index];
    if (last && last->size() == params.size()) {
        bool same = true;
        for (std::size_t i = 0; same && i < params.size(); ++i)
            same = is_used(i) ? same_as_remembered(params[i], (*last)[i]) : !(*last)[i];
        if (same)
            return false;
    }
    std::vector<std::optional<std::string>> used;
    used.reserve(params.size());
    for (std::size_t i = 0; i < params.size(); ++i)
        used.emplace_back(is_used(i) ? remembered(params[i]) : std::nullopt);
    last = std::move(used);
    return true;
}

void session::show_clock(statement id, const result& res,
                         std::chrono::steady_clock::time_point sent) {
    if (m_clock == nullptr || !m_catalog.returns_server_clock(id) || res.rows.empty() ||
        res.rows.front().empty() || !res.rows.front().back())
        return;
    m_clock->observe(column_int(res.rows.front().back()), sent, std::chrono::steady_clock::now());
}

result session::execute(statement id, std::span<const param> params) {
    if (!needs_sending(id, params))
        return {};
    try {
        const auto sent = std::chrono::steady_clock::now();
        auto res = do_execute(id, params);
        show_clock(id, res, sent);
        return res;
    } catch (...) {
        m_last_params[static_cast<std::size_t>(id)].reset(); // unknown state: send next time
        throw;
    }
}

std::vector<result> session::execute_batch(std::span<const batch_item> items) {
    std::vector<result> out(items.size());
    std::vector<batch_item> to_send;
    std::vector<std::size_t> slots;
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (needs_sending(items[i].id, items[i].params)) {
            to_send.push_back(items[i]);
            slots.push_back(i);
        }
    }
    std::vector<result> sent(to_send.size());
    const auto sent_at = std::chrono::steady_clock::now();
    try {
        do_execute_batch(to_send, sent);
    } catch (...) {
        for (const auto& item : to_send)
            m_last_params[static_cast<std::size_t>(item.id)].reset();
        throw;
    }
    for (std::size_t k = 0; k < slots.size(); ++k) {
        show_clock(to_send[k].id, sent[k], sent_at);
        out[slots[k]] = std::move(sent[k]);
    }
    return out;
}

void session::do_execute_batch(std::span<const batch_item> items, std::vector<result>& out) {
    for (std::size_t i = 0; i < items.size(); ++i)
        out[i] = do_execute(items[i].id, items[i].params);
}

} // namespace sqlock::detail
