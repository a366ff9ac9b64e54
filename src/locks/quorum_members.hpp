// Internal: the member list of a quorum lock, checked once for quorum_mutex and the quorum
// admin calls (quorum_status, quorum_force_release).
#pragma once

#include "sqlock/database.hpp"

#include <string>
#include <vector>

namespace sqlock::detail {

/// Throws errc::invalid_argument for fewer than 3 members or one member listed twice (the same
/// URL and table prefix: it would count twice towards a majority).
void validate_quorum_members(const std::vector<database>& members);

/// The members by URL, each opened with `connect` but not connected yet (a member that is down
/// counts as not answering). Throws errc::invalid_argument for a malformed URL.
std::vector<database> unconnected_members(const std::vector<std::string>& urls,
                                          const connect_options& connect);

} // namespace sqlock::detail
