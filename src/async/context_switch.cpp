// The x86-64 stack switch of context_switch.hpp. A saved context, from its stack pointer up:
// the x87 control word (8 bytes), MXCSR (8 bytes), r15, r14, r13, r12, rbx, rbp, the return
// address. A new context is that frame made by hand, returning into a trampoline that calls
// start(arg) with arg in rbx and start in r12.
#include "async/context_switch.hpp"

#if SQLOCK_OWN_CONTEXT_SWITCH

#include <cstdint>

// clang-format off
asm(R"(
    .text
    .globl sqlock_switch_context
    .hidden sqlock_switch_context
    .type sqlock_switch_context, @function
    .p2align 4
sqlock_switch_context:
    .cfi_startproc
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $16, %rsp
    fnstcw (%rsp)
    stmxcsr 8(%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    fldcw (%rsp)
    ldmxcsr 8(%rsp)
    addq $16, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .cfi_endproc
    .size sqlock_switch_context, .-sqlock_switch_context

    .globl sqlock_context_trampoline
    .hidden sqlock_context_trampoline
    .type sqlock_context_trampoline, @function
    .p2align 4
sqlock_context_trampoline:
    .cfi_startproc
    .cfi_undefined rip
    movq %rbx, %rdi
    callq *%r12
    ud2
    .cfi_endproc
    .size sqlock_context_trampoline, .-sqlock_context_trampoline
)");
// clang-format on

extern "C" void sqlock_context_trampoline();

namespace sqlock::detail {

void* prepare_context(char* stack, std::size_t size, void (*start)(void*) noexcept,
                      void* arg) noexcept {
    // The top, 16-aligned; the frame below it such that the trampoline starts with rsp at
    // top - 16 (16-aligned, as before a call).
    const auto top = (reinterpret_cast<std::uintptr_t>(stack) + size) & ~std::uintptr_t{15};
    auto* frame = reinterpret_cast<std::uint64_t*>(top - 88);
    std::uint16_t x87 = 0;
    std::uint32_t mxcsr = 0;
    asm volatile("fnstcw %0" : "=m"(x87));
    asm volatile("stmxcsr %0" : "=m"(mxcsr));
    frame[0] = x87;
    frame[1] = mxcsr;
    frame[2] = 0;                                      // r15
    frame[3] = 0;                                      // r14
    frame[4] = 0;                                      // r13
    frame[5] = reinterpret_cast<std::uint64_t>(start); // r12
    frame[6] = reinterpret_cast<std::uint64_t>(arg);   // rbx
    frame[7] = 0;                                      // rbp: no frame beneath
    frame[8] = reinterpret_cast<std::uint64_t>(&sqlock_context_trampoline);
    return frame;
}

} // namespace sqlock::detail

#endif
