#include "base/owner.hpp"

#include "sqlock/error.hpp"

#include <array>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <sys/random.h>
#include <unistd.h>

namespace sqlock::detail {

namespace {

process_identity make_identity() {
    process_identity p;
    std::array<char, 256> host{};
    if (gethostname(host.data(), host.size() - 1) == 0)
        p.host = host.data();
    if (p.host.empty())
        p.host = "unknown-host";
    if (p.host.size() > 64)
        p.host.resize(64);
    p.pid = static_cast<std::int64_t>(getpid());

    std::array<unsigned char, 16> nonce{};
    std::size_t filled = 0;
    while (filled < nonce.size()) {
        const auto n = getrandom(nonce.data() + filled, nonce.size() - filled, 0);
        if (n < 0)
            throw error(errc::backend, "getrandom() failed: cannot create an owner id");
        filled += static_cast<std::size_t>(n);
    }
    std::string hex;
    for (const unsigned char b : nonce) {
        static constexpr char digits[] = "0123456789abcdef";
        hex += digits[b >> 4];
        hex += digits[b & 15];
    }
    p.id = p.host + ":" + std::to_string(p.pid) + ":" + hex;
    return p;
}

std::mutex g_identity_mutex;
process_identity g_identity;

} // namespace

const process_identity& this_process() {
    std::lock_guard lock(g_identity_mutex);
    // After fork() the pid differs: the child gets a fresh identity (and nonce).
    if (g_identity.id.empty() || g_identity.pid != static_cast<std::int64_t>(getpid()))
        g_identity = make_identity();
    return g_identity;
}

std::uint64_t this_thread_number() {
    static std::atomic<std::uint64_t> counter{0};
    thread_local const std::uint64_t number = ++counter;
    return number;
}

std::uint64_t next_handle_number() {
    static std::atomic<std::uint64_t> counter{0};
    return ++counter;
}

std::string owner_id(std::uint64_t handle) {
    return this_process().id + "/" + std::to_string(handle) + "." +
           std::to_string(this_thread_number());
}

std::string handle_owner_id(std::uint64_t handle) {
    return this_process().id + "/" + std::to_string(handle) + ".0";
}

} // namespace sqlock::detail
