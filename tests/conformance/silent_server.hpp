// A server that takes TCP connections and never answers them, for the tests of connect bounds
// and of cancels that reach a connect in flight.
#pragma once

#include "backend_fixture.hpp"

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <string>
#include <sys/socket.h>
#include <unistd.h>

namespace test {

/// A TCP socket listening on 127.0.0.1 (port chosen by the kernel) that never accepts and
/// never replies: a server that takes connections and does not answer them.
class silent_server {
public:
    silent_server() {
        m_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        REQUIRE(m_fd >= 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = 0;
        REQUIRE(bind(m_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
        REQUIRE(listen(m_fd, 64) == 0);
        socklen_t len = sizeof addr;
        REQUIRE(getsockname(m_fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
        m_port = ntohs(addr.sin_port);
    }
    ~silent_server() { close(m_fd); }
    silent_server(const silent_server&) = delete;
    silent_server& operator=(const silent_server&) = delete;

    /// True once a client's connection waits to be accepted (its TCP handshake is done, so it
    /// is sending its first bytes or waiting for the server's).
    bool has_caller() const {
        pollfd p{m_fd, POLLIN, 0};
        return ::poll(&p, 1, 0) > 0;
    }

    /// A URL of the backend under test's scheme that leads here.
    std::string url() const {
        const char* scheme =
            test::backend().kind == sqlock::backend_kind::mysql ? "mysql" : "postgresql";
        return std::string(scheme) + "://lockuser:secret@127.0.0.1:" + std::to_string(m_port) +
               "/lockdb";
    }

private:
    int m_fd = -1;
    int m_port = 0;
};

} // namespace test
