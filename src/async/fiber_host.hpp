// Internal: runs a synchronous lock call on a fiber driven by an Asio executor, so that its
// waits cost no thread (issue 37, PostgreSQL). The call's waits go through the wait hook
// (base/io_wait.hpp): a socket wait becomes an asio::posix::stream_descriptor's async_wait
// (the descriptor is libpq's: released, never closed), a deadline or pause a steady_timer, and
// a stop request wakes an interruptible wait at once. The fiber's steps run on a strand of the
// executor, one at a time, on whichever of its threads runs the strand; the thread-locals the
// lock code keeps across a wait travel with the fiber.
#pragma once

#include <asio/any_io_executor.hpp>
#include <functional>
#include <stop_token>

namespace sqlock::detail {

/// Starts `body` on a fiber of its own, on a strand of `executor`: at once on the calling
/// thread when it runs in `executor`'s context and is not itself on a fiber, else posted. The
/// body runs until its first wait before this returns (in the first case). `stop`: what ends
/// the body's interruptible waits early. `body` must not throw; it must not block its thread
/// (std::mutex held only briefly and never across a wait; no condition variables: the lock
/// code asks base/io_wait.hpp's on_fiber()). Throws std::system_error when no fiber stack can
/// be mapped, or what posting throws.
void run_on_fiber(const asio::any_io_executor& executor, std::stop_token stop,
                  std::function<void()> body);

} // namespace sqlock::detail
