// A TCP relay on 127.0.0.1 to a local server port, to cut one client off from the server the
// way a network partition does: while frozen, nothing passes in either direction and no
// connection is closed (no FIN, no RST), so the client's requests just go unanswered. Severed,
// it drops its connections instead, as a host that went down.
#pragma once

#include <atomic>
#include <string>
#include <thread>

namespace test {

class tcp_relay {
public:
    /// Listens on an ephemeral port of 127.0.0.1 and relays each connection to
    /// 127.0.0.1:`target_port`. Throws std::runtime_error when it cannot listen.
    explicit tcp_relay(int target_port);
    ~tcp_relay();
    tcp_relay(const tcp_relay&) = delete;
    tcp_relay& operator=(const tcp_relay&) = delete;

    int port() const noexcept { return m_port; }
    /// `url` (scheme://user:password@host:port/db...) with host and port replaced by the
    /// relay's.
    std::string relayed(const std::string& url) const;

    /// Stops relaying: bytes stay in the kernel's buffers, new connections wait unanswered.
    void freeze() noexcept { m_frozen = true; }
    /// Relays again (what was held back goes through).
    void thaw() noexcept { m_frozen = false; }
    /// Drops every relayed connection and refuses new ones (closed as soon as accepted), as a
    /// host that went down does: what was in flight is lost, never delivered later.
    void sever() noexcept { m_severed = true; }
    /// Accepts and relays new connections again.
    void heal() noexcept { m_severed = false; }

private:
    void run() noexcept;

    int m_listener = -1;
    int m_port = 0;
    int m_target_port = 0;
    std::atomic<bool> m_frozen{false};
    std::atomic<bool> m_severed{false};
    std::atomic<bool> m_stop{false};
    std::thread m_thread;
};

} // namespace test
