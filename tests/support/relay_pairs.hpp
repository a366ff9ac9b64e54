// The moving parts of a TCP relay on 127.0.0.1 (a client's way to a local server that a test
// can freeze or cut, as a network partition would): the listener, the relayed connection
// pairs, and one round of accepting and passing bytes on. How a relay waits between rounds
// (a thread's poll with a timeout, a process's ppoll with signals) is its owner's business:
// tests/conformance/tcp_relay.cpp and the torture worker's relay (tools/torture/worker.cpp).
// Header-only, for tests and test tools.
#pragma once

#include <arpa/inet.h>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <netinet/in.h>
#include <poll.h>
#include <stdexcept>
#include <string>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

namespace test::relay {

inline sockaddr_in loopback(int port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

/// Moves what `from` has to `to` (blocking write of one read's worth). False when `from` is
/// closed or failed, or `to` failed.
inline bool pass_on(int from, int to) {
    char buf[16384];
    const auto n = ::read(from, buf, sizeof buf);
    if (n <= 0)
        return false;
    for (ssize_t done = 0; done < n;) {
        const auto w = ::write(to, buf + done, static_cast<std::size_t>(n - done));
        if (w <= 0)
            return false;
        done += w;
    }
    return true;
}

/// A listening socket on an ephemeral port of 127.0.0.1 (close-on-exec); its port in `port`.
/// Throws std::runtime_error naming `who` when it cannot listen.
inline int listen_on_loopback(int& port, const std::string& who) {
    const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    auto addr = loopback(0);
    socklen_t len = sizeof addr;
    if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listener, 64) != 0 ||
        ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
        const std::string why = std::strerror(errno);
        if (listener >= 0)
            ::close(listener);
        throw std::runtime_error(who + ": " + why);
    }
    port = ntohs(addr.sin_port);
    return listener;
}

/// The connections a relay passes on: each accepted client paired with its own connection to
/// 127.0.0.1:target_port. Not thread-safe: one relay loop owns it.
class pairs {
public:
    pairs(int listener, int target_port) : m_listener(listener), m_target_port(target_port) {}
    ~pairs() { close_all(); }
    pairs(const pairs&) = delete;
    pairs& operator=(const pairs&) = delete;

    /// What to poll for one round: the listener, then each pair's client and server (POLLIN).
    std::vector<pollfd> poll_set() const {
        std::vector<pollfd> fds{{m_listener, POLLIN, 0}};
        for (const auto& p : m_pairs) {
            fds.push_back({p.client, POLLIN, 0});
            fds.push_back({p.server, POLLIN, 0});
        }
        return fds;
    }

    /// After a poll of poll_set(): accepts a waiting client (paired when the target accepts
    /// and `refuse` is false; else closed at once, as a server that is down closes it) and
    /// passes on what each pair has; a pair with a side closed or failed is closed whole.
    void serve(const std::vector<pollfd>& fds, bool refuse) {
        const std::size_t polled = m_pairs.size(); // a pair accepted below was not polled
        std::vector<pair> kept;
        if (fds[0].revents & POLLIN)
            accept_one(refuse, kept);
        for (std::size_t i = 0; i < polled; ++i) {
            const auto& c = fds[1 + 2 * i];
            const auto& s = fds[2 + 2 * i];
            bool open = true;
            if (c.revents != 0)
                open = pass_on(m_pairs[i].client, m_pairs[i].server);
            if (open && s.revents != 0)
                open = pass_on(m_pairs[i].server, m_pairs[i].client);
            if (open)
                kept.push_back(m_pairs[i]);
            else
                close_pair(m_pairs[i]);
        }
        m_pairs = std::move(kept);
    }

    /// Closes every pair (what was in flight is lost).
    void close_all() noexcept {
        for (const auto& p : m_pairs)
            close_pair(p);
        m_pairs.clear();
    }

private:
    struct pair {
        int client;
        int server;
    };

    static void close_pair(const pair& p) noexcept {
        ::close(p.client);
        ::close(p.server);
    }

    void accept_one(bool refuse, std::vector<pair>& out) {
        const int client = ::accept4(m_listener, nullptr, nullptr, SOCK_CLOEXEC);
        const int server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        const auto target = loopback(m_target_port);
        if (client >= 0 && server >= 0 && !refuse &&
            ::connect(server, reinterpret_cast<const sockaddr*>(&target), sizeof target) == 0) {
            out.push_back({client, server});
            return;
        }
        if (client >= 0)
            ::close(client);
        if (server >= 0)
            ::close(server);
    }

    int m_listener;
    int m_target_port;
    std::vector<pair> m_pairs;
};

} // namespace test::relay
