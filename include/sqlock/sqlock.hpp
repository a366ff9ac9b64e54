// sqlock — distributed locks in the SQL database you already have.
// Umbrella header: include this one.
#pragma once

#include "sqlock/database.hpp" // IWYU pragma: export
#include "sqlock/error.hpp"    // IWYU pragma: export
#include "sqlock/job.hpp"      // IWYU pragma: export
#include "sqlock/mutex.hpp"    // IWYU pragma: export
#include "sqlock/reaper.hpp"   // IWYU pragma: export
#include "sqlock/version.hpp"  // IWYU pragma: export
