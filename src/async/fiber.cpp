// The fiber of fiber.hpp: the stack switch (context_switch.hpp, or ucontext), an mmap'd stack with
// a guard page, and the bookkeeping that keeps AddressSanitizer, ThreadSanitizer and the C++
// runtime's exception state right across switches.
#include "async/fiber.hpp"

#include "async/context_switch.hpp"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <optional>
#include <sys/mman.h>
#include <system_error>
#include <ucontext.h>
#include <unistd.h>
#include <utility>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define SQLOCK_FIBER_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#define SQLOCK_FIBER_TSAN 1
#endif

namespace __cxxabiv1 {
struct __cxa_eh_globals;
extern "C" __cxa_eh_globals* __cxa_get_globals() noexcept;
} // namespace __cxxabiv1

namespace sqlock::detail {

namespace {

/// libstdc++'s per-thread exception state (__cxa_eh_globals on x86-64 and AArch64): the stack
/// of caught exceptions and the count of uncaught ones. A fiber that suspends inside a catch
/// block takes its part with it: without this, another fiber's catch on the same thread would
/// push onto (and later pop) the wrong stack.
struct eh_state {
    void* caught = nullptr;
    unsigned int uncaught = 0;
};

eh_state exchange_eh(const eh_state& next) noexcept {
    auto* g = reinterpret_cast<eh_state*>(__cxxabiv1::__cxa_get_globals());
    const eh_state previous = *g;
    *g = next;
    return previous;
}

thread_local fiber* t_current = nullptr;

__attribute__((noinline)) fiber* exchange_current(fiber* f) noexcept {
    fiber* const previous = t_current;
    t_current = f;
    return previous;
}

std::size_t page_size() noexcept {
    static const auto size = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    return size;
}

/// One mapping: a guard page, then the stack.
struct stack_map {
    void* base = nullptr;
    std::size_t size = 0; ///< bytes mapped, guard page included
};

/// Stacks of fibers that ended, kept for the next ones (up to `keep`, of the default size):
/// mapping a stack, and touching its fresh pages, costs more than a lock round trip's share.
class stack_cache {
public:
    static stack_cache& instance() {
        static auto* cache = new stack_cache; // never destroyed: fibers may end at exit
        return *cache;
    }
    std::optional<stack_map> take(std::size_t size) {
        std::lock_guard lock(m_mutex);
        for (auto it = m_free.begin(); it != m_free.end(); ++it)
            if (it->size == size) {
                const auto found = *it;
                m_free.erase(it);
                return found;
            }
        return std::nullopt;
    }
    /// False when the cache is full: the caller unmaps it.
    bool put(const stack_map& s) noexcept {
        std::lock_guard lock(m_mutex);
        if (m_free.size() >= keep)
            return false;
        m_free.push_back(s); // reserved: never allocates
        return true;
    }

private:
    stack_cache() { m_free.reserve(keep); }
    static constexpr std::size_t keep = 64;
    std::mutex m_mutex;
    std::vector<stack_map> m_free;
};

/// A stack of `size` usable bytes (whole pages) below which a guard page faults.
stack_map map_stack(std::size_t size) {
    const auto page = page_size();
    if (auto cached = stack_cache::instance().take(size + page))
        return *cached;
    void* map = ::mmap(nullptr, size + page, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (map == MAP_FAILED)
        throw std::system_error(errno, std::generic_category(), "fiber stack");
    if (::mprotect(map, page, PROT_NONE) != 0) {
        const int e = errno;
        ::munmap(map, size + page);
        throw std::system_error(e, std::generic_category(), "fiber guard page");
    }
    return {map, size + page};
}

void unmap_stack(const stack_map& s) noexcept {
    if (!stack_cache::instance().put(s))
        ::munmap(s.base, s.size);
}

} // namespace

struct fiber::context {
#if SQLOCK_OWN_CONTEXT_SWITCH
    void* host = nullptr; ///< the resuming side's saved stack pointer, while the fiber runs
    void* self = nullptr; ///< the fiber's, while it is suspended (or its first frame)
#else
    ucontext_t host{};
    ucontext_t self{};
#endif
    void* map = nullptr;      ///< guard page + stack
    std::size_t map_size = 0; ///< bytes mapped
    char* stack = nullptr;    ///< lowest usable byte
    std::size_t stack_size = 0;
    eh_state host_eh;  ///< the resuming thread's, while the fiber runs
    eh_state fiber_eh; ///< the fiber's, while it is suspended
    fiber* outer = nullptr;
#if SQLOCK_FIBER_ASAN
    void* host_fake_stack = nullptr;
    void* fiber_fake_stack = nullptr;
    const void* host_bottom = nullptr;
    std::size_t host_size = 0;
#endif
#if SQLOCK_FIBER_TSAN
    void* tsan_fiber = nullptr;
    void* tsan_host = nullptr;
#endif
};

fiber::fiber(std::function<void()> body, std::size_t stack_size)
    : m_body(std::move(body)), m_ctx(std::make_unique<context>()) {
    const auto page = page_size();
    const auto size = (stack_size + page - 1) / page * page;
    const auto map = map_stack(size);
    m_ctx->map = map.base;
    m_ctx->map_size = map.size;
    m_ctx->stack = static_cast<char*>(map.base) + page;
    m_ctx->stack_size = size;
#if SQLOCK_FIBER_ASAN
    // A reused stack keeps the poisoned redzones of its last fiber's final frames (they never
    // returned): clean for the new one.
    __asan_unpoison_memory_region(m_ctx->stack, m_ctx->stack_size);
#endif
#if SQLOCK_FIBER_TSAN
    m_ctx->tsan_fiber = __tsan_create_fiber(0);
#endif
}

fiber::~fiber() {
#if SQLOCK_FIBER_TSAN
    __tsan_destroy_fiber(m_ctx->tsan_fiber);
#endif
    unmap_stack({m_ctx->map, m_ctx->map_size});
}

fiber* fiber::current() noexcept {
    return t_current;
}

void fiber::entry(unsigned int high, unsigned int low) noexcept {
    const auto address = (static_cast<std::uintptr_t>(high) << 32) | low;
    start(reinterpret_cast<fiber*>(address));
}

void fiber::start(void* fiber_address) noexcept {
    auto* self = static_cast<fiber*>(fiber_address);
#if SQLOCK_FIBER_ASAN
    __sanitizer_finish_switch_fiber(nullptr, &self->m_ctx->host_bottom, &self->m_ctx->host_size);
#endif
    self->run_body();
    self->m_finished = true;
    self->switch_out_of_fiber(true); // never returns
}

void fiber::run_body() noexcept {
    try {
        m_body();
    } catch (...) {
        m_escaped = std::current_exception();
    }
    m_body = nullptr; // what it captured goes while the fiber's stack is still there
}

bool fiber::resume() {
    if (m_finished)
        return true;
    if (!m_started) {
        m_started = true;
#if SQLOCK_OWN_CONTEXT_SWITCH
        m_ctx->self = prepare_context(m_ctx->stack, m_ctx->stack_size, &fiber::start, this);
#else
        ::getcontext(&m_ctx->self);
        m_ctx->self.uc_stack.ss_sp = m_ctx->stack;
        m_ctx->self.uc_stack.ss_size = m_ctx->stack_size;
        m_ctx->self.uc_link = nullptr; // entry() never returns
        const auto address = reinterpret_cast<std::uintptr_t>(this);
        ::makecontext(&m_ctx->self, reinterpret_cast<void (*)()>(&fiber::entry), 2,
                      static_cast<unsigned int>(address >> 32),
                      static_cast<unsigned int>(address & 0xffffffffU));
#endif
    }
    switch_out_of_host();
    if (m_finished && m_escaped)
        std::rethrow_exception(std::exchange(m_escaped, nullptr));
    return m_finished;
}

void fiber::suspend() {
    switch_out_of_fiber(false);
}

void fiber::switch_out_of_host() {
    auto& c = *m_ctx;
    c.host_eh = exchange_eh(c.fiber_eh);
    c.outer = exchange_current(this);
#if SQLOCK_FIBER_TSAN
    c.tsan_host = __tsan_get_current_fiber();
    __tsan_switch_to_fiber(c.tsan_fiber, 0);
#endif
#if SQLOCK_FIBER_ASAN
    __sanitizer_start_switch_fiber(&c.host_fake_stack, c.stack, c.stack_size);
#endif
#if SQLOCK_OWN_CONTEXT_SWITCH
    sqlock_switch_context(&c.host, c.self);
#else
    ::swapcontext(&c.host, &c.self);
#endif
#if SQLOCK_FIBER_ASAN
    __sanitizer_finish_switch_fiber(c.host_fake_stack, nullptr, nullptr);
#endif
}

void fiber::switch_out_of_fiber(bool final) {
    auto& c = *m_ctx;
    c.fiber_eh = exchange_eh(c.host_eh);
    exchange_current(c.outer);
#if SQLOCK_FIBER_TSAN
    __tsan_switch_to_fiber(c.tsan_host, 0);
#endif
#if SQLOCK_FIBER_ASAN
    // The fiber's fake stack goes with its last switch (null: nothing to keep).
    __sanitizer_start_switch_fiber(final ? nullptr : &c.fiber_fake_stack, c.host_bottom,
                                   c.host_size);
#else
    (void) final;
#endif
#if SQLOCK_OWN_CONTEXT_SWITCH
    sqlock_switch_context(&c.self, c.host);
#else
    ::swapcontext(&c.self, &c.host);
#endif
#if SQLOCK_FIBER_ASAN
    __sanitizer_finish_switch_fiber(c.fiber_fake_stack, &c.host_bottom, &c.host_size);
#endif
}

} // namespace sqlock::detail
