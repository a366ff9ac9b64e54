// What each row of `sqlock status` counts as. A semaphore or shared mutex is several rows
// (permits or reader slots, a queue row, a writer gate), and a held row is not always a
// holder: a held queue row means someone waits; a writer collecting the reader slots of a
// shared mutex holds those slots while it still waits for the readers that have the others.
#pragma once

#include <sqlock/database.hpp>
#include <vector>

namespace sqlock::cli {

enum class row_count {
    holder,       ///< a holder of its own: a mutex, a permit, a reader, a writer with every slot
    waiter,       ///< someone waits: a held queue row, a writer gate whose writer still waits
    writers_slot, ///< a reader slot the writer of its shared mutex has collected
    free,         ///< nobody holds it (free, or a lease that expired)
    unknown,      ///< the server hides whether it is held (holder_hidden)
};

/// Each row of `locks` (as database::list() returns them) classified, in the same order.
std::vector<row_count> classify_rows(const std::vector<sqlock::lock_info>& locks);

/// Whether the row is a semaphore's or shared mutex's queue row ("... queue").
bool is_queue_row(const sqlock::lock_info& l);
/// Whether the row is a shared mutex's writer gate.
bool is_gate_row(const sqlock::lock_info& l);

} // namespace sqlock::cli
