#include "tcp_relay.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <netinet/in.h>
#include <poll.h>
#include <stdexcept>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

namespace test {

namespace {

sockaddr_in loopback(int port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

/// Moves what `from` has to `to` (blocking write of one read's worth). False when `from` is
/// closed or failed, or `to` failed.
bool pass_on(int from, int to) {
    char buf[16384];
    const auto n = read(from, buf, sizeof buf);
    if (n <= 0)
        return false;
    for (ssize_t done = 0; done < n;) {
        const auto w = write(to, buf + done, static_cast<std::size_t>(n - done));
        if (w <= 0)
            return false;
        done += w;
    }
    return true;
}

} // namespace

tcp_relay::tcp_relay(int target_port) : m_target_port(target_port) {
    m_listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    auto addr = loopback(0);
    socklen_t len = sizeof addr;
    if (m_listener < 0 || bind(m_listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        listen(m_listener, 64) != 0 ||
        getsockname(m_listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
        throw std::runtime_error(std::string("tcp_relay: ") + std::strerror(errno));
    m_port = ntohs(addr.sin_port);
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
    struct pair {
        int client;
        int server;
    };
    std::vector<pair> pairs;
    while (!m_stop) {
        if (m_severed) { // a host gone: its connections die, new ones are closed at once
            for (const auto& p : pairs) {
                close(p.client);
                close(p.server);
            }
            pairs.clear();
        }
        // Frozen: nobody is polled for input, so nothing is read, relayed or accepted.
        std::vector<pollfd> fds;
        if (!m_frozen) {
            fds.push_back({m_listener, POLLIN, 0});
            for (const auto& p : pairs) {
                fds.push_back({p.client, POLLIN, 0});
                fds.push_back({p.server, POLLIN, 0});
            }
        }
        if (fds.empty()) {
            poll(nullptr, 0, 10);
            continue;
        }
        if (poll(fds.data(), fds.size(), 10) <= 0)
            continue;
        const std::size_t polled = pairs.size(); // a pair accepted below was not polled
        std::vector<pair> accepted;
        if (fds[0].revents & POLLIN) {
            const int client = accept4(m_listener, nullptr, nullptr, SOCK_CLOEXEC);
            const int server = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
            const auto target = loopback(m_target_port);
            if (client >= 0 && server >= 0 && !m_severed &&
                connect(server, reinterpret_cast<const sockaddr*>(&target), sizeof target) == 0) {
                accepted.push_back({client, server});
            } else {
                if (client >= 0)
                    close(client);
                if (server >= 0)
                    close(server);
            }
        }
        std::vector<pair> kept = accepted;
        for (std::size_t i = 0; i < polled; ++i) {
            const auto& c = fds[1 + 2 * i];
            const auto& s = fds[2 + 2 * i];
            bool open = true;
            if (c.revents != 0)
                open = pass_on(pairs[i].client, pairs[i].server);
            if (open && s.revents != 0)
                open = pass_on(pairs[i].server, pairs[i].client);
            if (open) {
                kept.push_back(pairs[i]);
            } else {
                close(pairs[i].client);
                close(pairs[i].server);
            }
        }
        pairs = std::move(kept);
    }
    for (const auto& p : pairs) {
        close(p.client);
        close(p.server);
    }
}

} // namespace test
