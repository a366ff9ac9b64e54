// history.cpp: formatting, parsing and appending history lines (see history.hpp).
#include "history.hpp"

#include <array>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <stdexcept>
#include <unistd.h>
#include <utility>

namespace torture {

namespace {

constexpr std::array<std::pair<kind, std::string_view>, 23> kind_names{{
    {kind::start, "start"},
    {kind::acquire, "acquire"},
    {kind::grant, "grant"},
    {kind::timeout, "timeout"},
    {kind::error, "error"},
    {kind::own, "own"},
    {kind::told, "told"},
    {kind::lost_cb, "lost_cb"},
    {kind::read, "read"},
    {kind::selfstop, "selfstop"},
    {kind::resumed, "resumed"},
    {kind::fence, "fence"},
    {kind::cw, "cw"},
    {kind::incr, "incr"},
    {kind::release, "release"},
    {kind::stopreq, "stopreq"},
    {kind::run_start, "run_start"},
    {kind::run_end, "run_end"},
    {kind::fault, "fault"},
    {kind::fault_end, "fault_end"},
    {kind::stopped, "stopped"},
    {kind::cont, "cont"},
    {kind::crashed, "crashed"},
}};

bool parse_int(std::string_view text, std::int64_t& out) {
    const auto* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, out);
    return ec == std::errc{} && ptr == end;
}

} // namespace

std::string_view to_string(kind k) noexcept {
    for (const auto& [value, name] : kind_names)
        if (value == k)
            return name;
    return "?";
}

std::optional<kind> parse_kind(std::string_view text) noexcept {
    for (const auto& [value, name] : kind_names)
        if (name == text)
            return value;
    return std::nullopt;
}

std::string format(const event& e) {
    std::string line = std::to_string(e.t_ns) + ' ' + std::to_string(e.pid) + ' ' +
                       std::string(to_string(e.kind)) + ' ' + std::to_string(e.token);
    for (const auto& arg : e.args) {
        line += ' ';
        // A field must not break the line format.
        for (char c : arg)
            line += (c == ' ' || c == '\n' || c == '\t') ? '_' : c;
    }
    line += '\n';
    return line;
}

std::optional<event> parse(std::string_view line) {
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r'))
        line.remove_suffix(1);
    std::vector<std::string_view> fields;
    std::size_t pos = 0;
    while (pos <= line.size()) {
        const auto next = line.find(' ', pos);
        const auto end = next == std::string_view::npos ? line.size() : next;
        if (end > pos)
            fields.push_back(line.substr(pos, end - pos));
        if (next == std::string_view::npos)
            break;
        pos = next + 1;
    }
    if (fields.size() < 4)
        return std::nullopt;
    event e;
    const auto k = parse_kind(fields[2]);
    if (!k || !parse_int(fields[0], e.t_ns) || !parse_int(fields[1], e.pid) ||
        !parse_int(fields[3], e.token))
        return std::nullopt;
    e.kind = *k;
    for (std::size_t i = 4; i < fields.size(); ++i)
        e.args.emplace_back(fields[i]);
    return e;
}

std::int64_t monotonic_ns() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

writer::writer(const std::string& path) {
    m_fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (m_fd < 0)
        throw std::runtime_error("cannot open history " + path + ": " + std::strerror(errno));
}

writer::~writer() {
    if (m_fd >= 0)
        ::close(m_fd);
}

void writer::write(const event& e) noexcept {
    try {
        const std::string line = format(e);
        // One write() per line: O_APPEND makes it atomic with respect to other appenders.
        const auto n = ::write(m_fd, line.data(), line.size());
        if (n != static_cast<ssize_t>(line.size()))
            std::fprintf(stderr, "torture: history write failed: %s\n", std::strerror(errno));
    } catch (...) {
        std::fprintf(stderr, "torture: history write failed (out of memory)\n");
    }
}

} // namespace torture
