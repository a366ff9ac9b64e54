// history.hpp: the torture suite's event history, one text line per event.
//
// Line format (space separated, no field contains a space):
//   T_NS PID KIND TOKEN [ARG...]
// T_NS is CLOCK_MONOTONIC in nanoseconds (the same clock in every process of one host, and it
// keeps running while a process is stopped). Every timestamp is read AFTER the event it records
// has happened, except where the kind says "before" (acquire, own, told, selfstop, cont).
// Workers append to their own file, harness notes to another; each line is one write() on an
// O_APPEND descriptor, so lines never interleave and a killed writer leaves whole lines only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace torture {

/// Every kind of event; the comment says what TOKEN and ARGs hold.
enum class kind {
    start,    ///< worker process started; ARGS: slot control
    acquire,  ///< clock read BEFORE calling lock(); TOKEN 0
    grant,    ///< lock() returned; ARGS: renew(0|1) session_id
    timeout,  ///< try_lock_for gave up; TOKEN 0
    error,    ///< an exception; TOKEN of the grant or 0; ARGS: message (spaces replaced)
    own,      ///< owns_lock() returned true; clock read BEFORE the call
    told,     ///< owns_lock() returned false during the hold; clock read BEFORE the call
    lost_cb,  ///< on_lost ran; ARGS: reason
    read,     ///< counter read at the start of the hold; ARGS: value
    selfstop, ///< about to raise(SIGSTOP) inside the write window; clock read BEFORE
    resumed,  ///< raise(SIGSTOP) returned
    fence,    ///< fenced write done; ARGS: accepted|refused highest_before
    cw,       ///< about to write the counter; ARGS: value being written
    incr,     ///< counter written; ARGS: value written
    release,  ///< unlock() returned; ARGS: last_loss(none|lost|unknown) error(0|1)
    stopreq,  ///< leader mode: after `told`, the term's stop_token() was seen requested
    // harness notes (PID 0)
    run_start, ///< workers are about to be started
    run_end,   ///< the harness stopped injecting faults and asked workers to finish
    fault,     ///< a fault begins; ARGS: nemesis target
    fault_end, ///< the fault is over (server back, worker respawned, process continued); ARGS:
               ///< nemesis
    stopped,   ///< process ARG is certainly stopped now (clock read after seeing it stopped)
    cont,      ///< about to SIGCONT process ARG (clock read BEFORE the signal)
    crashed,   ///< server ARG is certainly down (clock read after seeing its process gone)
};

/// The text of a kind, as written in a history line.
std::string_view to_string(kind k) noexcept;
/// Parses a kind name; nullopt for an unknown one.
std::optional<kind> parse_kind(std::string_view text) noexcept;

/// One parsed history line.
struct event {
    std::int64_t t_ns = 0;
    std::int64_t pid = 0;
    torture::kind kind = kind::start;
    std::int64_t token = 0;
    std::vector<std::string> args;
};

/// Formats an event as one line, newline included.
std::string format(const event& e);
/// Parses one line (with or without its newline); nullopt when malformed.
std::optional<event> parse(std::string_view line);

/// CLOCK_MONOTONIC now, in nanoseconds.
std::int64_t monotonic_ns() noexcept;

/// Appends whole lines to a history file with one write() each (O_APPEND), safe to use from
/// several threads and after fork.
class writer {
public:
    /// Opens (creating) `path` for appending; throws std::runtime_error on failure.
    explicit writer(const std::string& path);
    ~writer();
    writer(const writer&) = delete;
    writer& operator=(const writer&) = delete;
    /// Writes the event; never throws (a failed write is reported on stderr).
    void write(const event& e) noexcept;

private:
    int m_fd = -1;
};

} // namespace torture
