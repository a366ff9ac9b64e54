// The pipe that wakes the job's supervisor (job_group.cpp) in sqlock: the lock's callbacks
// (lock_watch.cpp, on sqlock's background thread) and SIGCHLD write to it.
#pragma once

namespace sqlock::cli {

/// Makes the pipe; call once, before the job starts. Throws std::runtime_error when it
/// cannot.
void open_wakeup_pipe();

/// Wakes the supervisor with `why` (one byte). Async-signal-safe.
void wake_job_supervisor(char why = 'l') noexcept;

/// The end the supervisor polls (-1 before open_wakeup_pipe()).
int wakeup_fd() noexcept;

/// Reads away what woke the supervisor.
void drain_wakeups() noexcept;

} // namespace sqlock::cli
