// Internal: what a term of a leader election is to the locks beneath it, shared by
// leader_election, async_leader_election and the C API's asynchronous campaigns.
#pragma once

#include "sqlock/leader.hpp"
#include "sqlock/mutex.hpp"

namespace sqlock::detail {

/// The options of the mutex whose grant is a term of an election with options `o`: unique_key
/// (the term is the token), renewed, `o`'s TTL, backoff and signals. Throws only
/// std::bad_alloc.
mutex_options term_options(const leader_options& o);

} // namespace sqlock::detail
