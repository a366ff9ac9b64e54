// sqlock — distributed locks in the SQL database you already have.
/// @file
/// Umbrella header: include this one.
#pragma once

#include "sqlock/database.hpp"     // IWYU pragma: export
#include "sqlock/error.hpp"        // IWYU pragma: export
#include "sqlock/job.hpp"          // IWYU pragma: export
#include "sqlock/leader.hpp"       // IWYU pragma: export
#include "sqlock/mutex.hpp"        // IWYU pragma: export
#include "sqlock/quorum_mutex.hpp" // IWYU pragma: export
#include "sqlock/reaper.hpp"       // IWYU pragma: export
#include "sqlock/semaphore.hpp"    // IWYU pragma: export
#include "sqlock/shared_mutex.hpp" // IWYU pragma: export
#include "sqlock/version.hpp"      // IWYU pragma: export

/// @namespace sqlock
/// Everything sqlock declares: sqlock::connect() and sqlock::database (database.hpp),
/// sqlock::mutex (mutex.hpp), sqlock::semaphore (semaphore.hpp), sqlock::shared_mutex
/// (shared_mutex.hpp), sqlock::leader_election (leader.hpp), sqlock::job and its run ledger
/// (job.hpp), sqlock::reaper (reaper.hpp), sqlock::quorum_mutex over several databases
/// (quorum_mutex.hpp) and sqlock::error (error.hpp).
