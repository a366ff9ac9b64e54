#include "wakeup_pipe.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <stdexcept>
#include <string>
#include <unistd.h>

namespace sqlock::cli {

namespace {
int g_wakeup_pipe[2] = {-1, -1};
} // namespace

void open_wakeup_pipe() {
    if (pipe2(g_wakeup_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
        throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
}

void wake_job_supervisor(char why) noexcept {
    const int saved = errno; // callable from a signal handler
    [[maybe_unused]] const auto n = write(g_wakeup_pipe[1], &why, 1);
    errno = saved;
}

int wakeup_fd() noexcept {
    return g_wakeup_pipe[0];
}

void drain_wakeups() noexcept {
    char drain[64];
    while (read(g_wakeup_pipe[0], drain, sizeof drain) > 0) {
    }
}

} // namespace sqlock::cli
