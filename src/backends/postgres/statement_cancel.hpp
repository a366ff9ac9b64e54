// Internal: a cancel request for the statement a connection runs, sent from a fiber without
// blocking its thread. A cancelled asynchronous acquire waiting in the server (a row lock, the
// name's queue lock) would otherwise wait out its step (up to 1 s) before it could give up.
// libpq 15's PQcancel() blocks (it connects to the server and waits for it to take the
// request), so it runs on a short-lived thread of its own, which says through an eventfd when
// it is done.
#pragma once

#include "base/io_wait.hpp"

#include <libpq-fe.h>
#include <memory>

namespace sqlock::detail {

class statement_cancel {
public:
    /// Starts a cancel request for the statement `conn` runs (call once). False when it could
    /// not be started (no memory, no descriptor, no thread): the statement then ends at its own
    /// bound. Never throws.
    bool start(PGconn* conn) noexcept;

    /// Waits on the calling fiber (not interruptibly) until the request was handed to the
    /// server, at most to `deadline`. True when it was (or none was started). False when it is
    /// still on its way: a late request may cancel whatever the connection runs next, so the
    /// caller must not run another statement on it. Never throws.
    bool finish(io_wait::time_point deadline) noexcept;

private:
    struct shared_state;
    std::shared_ptr<shared_state> m_state; ///< also held by the thread until it is done
};

} // namespace sqlock::detail
