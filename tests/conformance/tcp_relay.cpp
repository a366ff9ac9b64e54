#include "tcp_relay.hpp"

#include "../support/relay_pairs.hpp"

#include <poll.h>
#include <unistd.h>
#include <vector>

namespace test {

tcp_relay::tcp_relay(int target_port) : m_target_port(target_port) {
    m_listener = relay::listen_on_loopback(m_port, "tcp_relay");
    m_thread = std::thread([this] { run(); });
}

tcp_relay::~tcp_relay() {
    m_stop = true;
    m_thread.join();
    close(m_listener);
}

std::string tcp_relay::relayed(const std::string& url) const {
    const auto at = url.rfind('@');
    const auto host = at == std::string::npos ? url.find("://") + 3 : at + 1;
    const auto end = url.find('/', host);
    return url.substr(0, host) + "127.0.0.1:" + std::to_string(m_port) +
           (end == std::string::npos ? "" : url.substr(end));
}

void tcp_relay::run() noexcept {
    relay::pairs pairs(m_listener, m_target_port);
    while (!m_stop) {
        if (m_severed) // a host gone: its connections die, new ones are closed at once
            pairs.close_all();
        // Frozen: nobody is polled for input, so nothing is read, relayed or accepted.
        if (m_frozen) {
            poll(nullptr, 0, 10);
            continue;
        }
        auto fds = pairs.poll_set();
        if (poll(fds.data(), fds.size(), 10) <= 0)
            continue;
        try {
            pairs.serve(fds, m_severed);
        } catch (...) {
            pairs.close_all(); // out of memory: drop the connections rather than the thread
        }
    }
}

} // namespace test
