// The command of `sqlock run` as a job: a process group of its own, started and watched by a
// guard process, so that no process of the job outlives what keeps the lock.
#pragma once

#include "lock_watch.hpp"

#include <chrono>
#include <string>
#include <vector>

namespace sqlock::cli {

/// How the job is stopped when its lock is at risk (see run_job_group).
struct job_limits {
    std::chrono::milliseconds grace{};       ///< from SIGTERM to SIGKILL
    std::chrono::milliseconds kill_margin{}; ///< SIGKILL this long before a lease's local end
};

/// Runs `exec` (argv; argv[0] is searched in PATH) with environment `env` as a job, and returns
/// once every process of the job has exited. The contract:
/// - the job is a process group of its own, forked by a guard process: a fork of sqlock that
///   holds a copy of every descriptor sqlock has (its database connections, its lock files);
/// - when sqlock has the terminal, the job's group is the terminal's foreground group while it
///   runs (one Ctrl-C is one SIGINT for the job); a job stopped from the terminal stops
///   sqlock too, and `fg` continues both;
/// - SIGINT, SIGTERM and SIGHUP sent to sqlock are sent on to the job's group;
/// - `watch` says how the lock fares (each change followed by wake_job_supervisor()): while a
///   lease is at risk, the group gets SIGTERM at its local end - kill_margin - grace and
///   SIGKILL at its local end - kill_margin, unless a renewal gets through before the SIGTERM;
///   once SIGTERM was sent, SIGKILL follows `grace` later in any case; when the lock is lost,
///   SIGKILL at once (another holder may run already);
/// - the job has ended when its command has exited and no other process of its group is left;
/// - when sqlock dies (SIGKILL, the OOM killer), the guard SIGKILLs the job's group and exits
///   only once no process of it is left, so the lock's connection and files outlive the job;
///   when the guard dies, sqlock does the same and reports a failure;
/// - not covered: a process that leaves the group (setsid, setpgid), and sqlock and its guard
///   killed together (fencing with SQLOCK_TOKEN covers those).
/// Returns the command's waitpid() status (exit 127 when it is not found, 126 when it cannot
/// run), or -1 when supervising failed (`failure` says why; the job was stopped).
int run_job_group(const std::vector<std::string>& exec, const std::vector<std::string>& env,
                  const job_limits& limits, lock_watch& watch, std::string& failure);

} // namespace sqlock::cli
