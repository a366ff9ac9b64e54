// Internal: what a lock name may be.
#pragma once

#include <string_view>

namespace sqlock::detail {

/// Throws errc::invalid_argument for a name that is empty, longer than max_name_length bytes,
/// not valid UTF-8, or holds a NUL byte or the unit separator (0x1f, reserved for the locks a
/// semaphore or shared_mutex is made of).
void validate_lock_name(std::string_view name);

} // namespace sqlock::detail
