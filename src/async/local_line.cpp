#include "async/local_line.hpp"

#include <map>
#include <tuple>

namespace sqlock::detail {

std::shared_ptr<local_line> local_line::of(const void* database, const std::string& key,
                                           std::size_t capacity) {
    // Never destroyed: lines may be let go by threads still running at exit.
    static auto* registry_mutex = new std::mutex;
    static auto* registry =
        new std::map<std::tuple<const void*, std::string, std::size_t>, std::weak_ptr<local_line>>;
    std::lock_guard lock(*registry_mutex);
    std::erase_if(*registry, [](const auto& kv) { return kv.second.expired(); });
    auto& slot = (*registry)[{database, key, capacity}];
    auto line = slot.lock();
    if (!line) {
        line = std::make_shared<local_line>(capacity);
        slot = line;
    }
    return line;
}

void local_line::join(const std::shared_ptr<line_waiter>& op, std::size_t units) {
    {
        std::lock_guard lock(m_mutex);
        m_waiting.push_back({op, units});
    }
    advance();
}

void local_line::head_done() noexcept {
    {
        std::lock_guard lock(m_mutex);
        m_asking = false;
    }
    advance();
}

void local_line::hold(std::size_t units) noexcept {
    std::lock_guard lock(m_mutex);
    m_held += units;
}

void local_line::free(std::size_t units) noexcept {
    {
        std::lock_guard lock(m_mutex);
        m_held -= units < m_held ? units : m_held;
    }
    advance();
}

void local_line::kick() noexcept {
    advance();
}

std::shared_ptr<line_waiter> local_line::next_head() {
    while (!m_asking && !m_waiting.empty()) {
        auto& front = m_waiting.front();
        auto op = front.op;
        if (op->finished()) {
            m_waiting.pop_front(); // cancelled or timed out while queued
            continue;
        }
        if (m_held + front.units > m_capacity)
            return nullptr; // in order: whoever is behind waits too
        m_waiting.pop_front();
        if (!op->claim())
            continue; // ended just now
        m_asking = true;
        return op;
    }
    return nullptr;
}

void local_line::advance() noexcept {
    std::shared_ptr<line_waiter> head;
    {
        std::lock_guard lock(m_mutex);
        head = next_head();
    }
    if (head)
        head->run_claimed();
}

} // namespace sqlock::detail
