// Internal: the machine-level switch between two stacks that a fiber (fiber.hpp) makes at each
// suspend and resume, written out for x86-64. glibc's swapcontext() saves and restores the
// signal mask with a system call at every switch (a fiber makes about six per lock and unlock:
// ~10 % of an uncontended PostgreSQL select_for_update round); a fiber's signal mask never
// differs from its thread's, so this switch keeps only what the ABI asks to keep: the
// callee-saved registers and the floating-point control words. Other architectures use
// ucontext (fiber.cpp).
#pragma once

#include <cstddef>

#if defined(__x86_64__)
#define SQLOCK_OWN_CONTEXT_SWITCH 1

namespace sqlock::detail {

/// Saves the caller's callee-saved registers and control words on its stack, stores its stack
/// pointer in `*from`, and continues the context whose stack pointer is `to` (stored by an
/// earlier switch, or made by prepare_context()). Returns when a later switch continues the
/// context saved in `*from`.
extern "C" void sqlock_switch_context(void** from, void* to) noexcept;

/// The stack pointer of a new context on the stack [stack, stack + size): switched to, it calls
/// `start(arg)` with the ABI's stack alignment, the calling thread's floating-point control
/// words and no frame beneath (start must never return). Never throws.
void* prepare_context(char* stack, std::size_t size, void (*start)(void*) noexcept,
                      void* arg) noexcept;

} // namespace sqlock::detail

#endif
