// Internal: a stackful fiber (on an mmap'd stack with a guard page; switched by
// context_switch.hpp on x86-64, by ucontext's swapcontext elsewhere). An asynchronous PostgreSQL
// acquire runs the synchronous lock protocol on one, so that its waits suspend the fiber instead of
// blocking a thread (fiber_host.hpp). Annotated for AddressSanitizer and ThreadSanitizer, and it
// carries the C++ runtime's exception state (caught exceptions, std::uncaught_exceptions()) with
// the fiber, so a fiber may suspend inside a catch block while others run on its thread, and resume
// on another thread.
#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <memory>

namespace sqlock::detail {

class fiber {
public:
    /// A fiber that will run `body` (not yet started). Its stack: `stack_size` bytes, rounded
    /// up to whole pages, plus a guard page below (an overflow faults rather than corrupts).
    /// Throws std::system_error when the stack cannot be mapped.
    explicit fiber(std::function<void()> body, std::size_t stack_size = default_stack_size);
    /// Frees the stack. The fiber must have finished, or never started.
    ~fiber();
    fiber(const fiber&) = delete;
    fiber& operator=(const fiber&) = delete;

    /// Runs the fiber on the calling thread until it suspends or its body ends; true once it
    /// ended. An exception that escaped the body is rethrown here (once). Not from inside this
    /// fiber, and never by two threads at once; after it ended, returns true at once.
    bool resume();
    /// From inside the fiber: back to the resume() that runs it. It continues where resume()
    /// is called next, on whichever thread calls it.
    void suspend();
    /// True once the body ended. Never throws.
    bool finished() const noexcept { return m_finished; }
    /// The fiber the calling thread runs now, or null. Never throws.
    static fiber* current() noexcept;

    static constexpr std::size_t default_stack_size = 256 * 1024;

private:
    struct context; // the saved contexts and the sanitizers' bookkeeping, kept out of this header
    /// The fiber's first frame: runs the body, then leaves for good. `self` is the fiber.
    static void start(void* self) noexcept;
    /// start() as makecontext() calls it (the pointer in two halves), where ucontext is used.
    static void entry(unsigned int high, unsigned int low) noexcept;
    void run_body() noexcept;
    /// Switches from the running side (`from` true: this fiber) to the other. Carries the
    /// exception state and tells the sanitizers.
    void switch_out_of_host();
    void switch_out_of_fiber(bool final);

    std::function<void()> m_body;
    std::unique_ptr<context> m_ctx;
    std::exception_ptr m_escaped;
    bool m_started = false;
    bool m_finished = false;
};

} // namespace sqlock::detail
