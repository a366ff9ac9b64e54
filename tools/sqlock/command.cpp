// What the sqlock commands share: connecting (waiting out a full or failing-over server),
// durations, and the text helpers of their output.
#include "command.hpp"

#include "cli.hpp"

#include <algorithm>
#include <cstdio>
#include <random>
#include <thread>

namespace sqlock::cli {

namespace {

/// The URL names several hosts (host1:port,host2:port): a replicated setup that can fail over.
bool lists_several_hosts(const std::string& url) {
    const auto start = url.find("://");
    if (start == std::string::npos)
        return false;
    const auto end = url.find_first_of("/?", start + 3);
    const auto authority = url.substr(start + 3, end == std::string::npos ? end : end - start - 3);
    const auto at = authority.rfind('@');
    return authority.find(',', at == std::string::npos ? 0 : at + 1) != std::string::npos;
}

/// open_waiting's error at the deadline: `lock_name` was not granted because the database
/// could not be reached (`e`, last seen), waited out since `started`, failing since
/// `refused_since`.
not_granted_in_time connect_timed_out(const sqlock::error& e, const std::string& lock_name,
                                      bool full, bool failing_over, steady::time_point started,
                                      steady::time_point refused_since, steady::time_point now) {
    const auto ms = [](steady::duration d) {
        return human_ms(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
    };
    return not_granted_in_time(
        sqlock::errc::timeout,
        "lock \"" + lock_name + "\" not granted within --wait (waited " + ms(now - started) +
            "): " +
            (full ? "the database server refused new connections for " + ms(now - refused_since) +
                        " until the deadline"
             : failing_over ? "no host of the URL accepted writes (a failover?) for " +
                                  ms(now - refused_since) + " until the deadline"
                            : std::string("the database server did not answer new "
                                          "connections in time; the connect still in flight "
                                          "at the deadline was abandoned")) +
            " (" + e.what() + ")",
        e.backend(), e.native_code(), e.sqlstate());
}

} // namespace

job_database& database_for_jobs() {
    static job_database d;
    return d;
}

std::chrono::milliseconds duration_arg(const std::string& flag, const std::string& value) {
    const auto d = parse_duration(value);
    if (!d)
        throw usage_error(flag + ": \"" + value + "\" is not a duration (try 500ms, 30s, 10m)");
    return *d;
}

sqlock::database open(const options& o) {
    if (o.url.empty())
        throw usage_error("no database: pass --url URL or set SQLOCK_URL");
    return sqlock::connect(o.url, o.connect);
}

steady::time_point deadline_of(std::optional<std::chrono::milliseconds> wait) {
    if (!wait)
        return steady::time_point::max();
    if (wait->count() == 0)
        return steady::time_point::min();
    return steady::now() + *wait;
}

sqlock::database open_waiting(const options& o, steady::time_point deadline,
                              const std::string& lock_name) {
    const auto started = steady::now();
    std::optional<steady::time_point> refused_since;
    // The last "server full" answer: the cause to report at the deadline, even when the last
    // try was a connect the deadline cut short (a full server is slow to answer too).
    std::optional<sqlock::error> full_answer;
    auto pause = std::chrono::milliseconds(50);
    std::mt19937_64 rng{std::random_device{}()};
    // A connect still in flight at the deadline is abandoned (exit 75): --wait bounds the
    // connect too, not only --connect-timeout. --wait 0 gives it at most 900 ms, so that one
    // try also returns within a second.
    auto bounded = o;
    if (deadline != steady::time_point::max())
        bounded.connect.connect_deadline = deadline == steady::time_point::min()
                                               ? started + std::chrono::milliseconds(900)
                                               : deadline;
    for (;;) {
        try {
            return open(bounded);
        } catch (const sqlock::error& e) {
            const bool full = sqlock::is_server_full(e);
            const bool failing_over = lists_several_hosts(o.url) &&
                                      ((e.code() == sqlock::errc::connection && e.retryable()) ||
                                       e.code() == sqlock::errc::topology);
            const bool unanswered = sqlock::is_connect_unanswered(e);
            if ((!full && !failing_over && !unanswered) ||
                (deadline == steady::time_point::min() && !unanswered))
                throw;
            const auto now = steady::now();
            if (!refused_since)
                refused_since = now;
            if (full)
                full_answer = e;
            if (now >= deadline)
                throw connect_timed_out(full_answer.value_or(e), lock_name, full_answer.has_value(),
                                        failing_over, started, *refused_since, now);
            std::uniform_int_distribution<std::int64_t> jitter(0, pause.count());
            const auto sleep = pause / 2 + std::chrono::milliseconds(jitter(rng));
            pause = std::min(pause * 2, std::chrono::milliseconds(2000));
            std::this_thread::sleep_until(deadline - now < sleep ? deadline : now + sleep);
        }
    }
}

std::string human_ms(std::int64_t ms) {
    // The sign goes into the format, not onto a returned string ("-" + string: GCC 12's
    // -Wrestrict reports a false overlap there at -O2).
    const char* sign = ms < 0 ? "-" : "";
    const auto a = static_cast<long long>(ms < 0 ? -ms : ms);
    char buf[48];
    if (a < 60'000)
        std::snprintf(buf, sizeof buf, "%s%.1fs", sign, static_cast<double>(a) / 1000.0);
    else if (a < 3'600'000)
        std::snprintf(buf, sizeof buf, "%s%lldm%02llds", sign, a / 60'000, a / 1000 % 60);
    else if (a < 86'400'000)
        std::snprintf(buf, sizeof buf, "%s%lldh%02lldm", sign, a / 3'600'000, a / 60'000 % 60);
    else
        std::snprintf(buf, sizeof buf, "%s%lldd%02lldh", sign, a / 86'400'000, a / 3'600'000 % 24);
    return buf;
}

std::string printable(std::string_view text) {
    std::string out;
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '\n')
            out += "\\n";
        else if (c == '\t')
            out += "\\t";
        else if (c == '\r')
            out += "\\r";
        else if (u < 0x20 || u == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", u);
            out += buf;
        } else
            out += c;
    }
    return out;
}

} // namespace sqlock::cli
