// Internal: who is asking. An owner id names one thread of one mutex object in one process:
//   <host>:<pid>:<128-bit random nonce, hex>/<mutex handle>.<thread>
// The nonce makes ids unique across hosts and pid reuse; pid alone or host alone never is.
// Thread 0: the handle owns its grants, whichever thread uses it (sqlock/async.hpp's locks).
#pragma once

#include <cstdint>
#include <string>

namespace sqlock::detail {

struct process_identity {
    std::string host;
    std::int64_t pid = 0;
    std::string id; ///< host:pid:nonce
};

/// This process's identity. Recomputed after fork(), so a child never shares its parent's id.
const process_identity& this_process();

/// A small number unique to the calling thread within this process (1, 2, ...).
std::uint64_t this_thread_number();

/// A process-unique number for a new mutex handle.
std::uint64_t next_handle_number();

/// Owner id for (handle, calling thread).
std::string owner_id(std::uint64_t handle);

/// Owner id of a handle whose grants belong to the handle, whichever thread uses it
/// (asynchronous locks): thread number 0, which no thread has.
std::string handle_owner_id(std::uint64_t handle);

} // namespace sqlock::detail
