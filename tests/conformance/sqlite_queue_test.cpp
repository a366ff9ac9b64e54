// SQLite: calls that may wait queue in a side file beside the lock files
// (src/backends/local_queue.hpp). Real processes (tests/support/contender.cpp) take places in
// line; the test reads the queue's ticket counter to know who joined when, and stops or kills them.
// Suite fair_sqlite: SQLite only, every strategy (the queue sits in the shared lock loop).
#include "backend_fixture.hpp"
#include "database/database_impl.hpp"

#include <atomic>
#include <chrono>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <signal.h>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <utility>
#include <vector>

using namespace std::chrono_literals;
using sqlock::mutex;
using test::db;
using test::opts;
using test::unique_name;

namespace {

std::string strategy_arg() {
    return std::string(sqlock::to_string(test::strategy()));
}

/// The queue file of `name` in the test database.
std::string queue_file(const std::string& name) {
    return sqlock::detail::impl_of(db()).lock_file_for(name) + ".queue";
}

/// The queue's ticket counter (0 before the file exists). Every ticket taken while another
/// is in line bumps it, and so does the first one ever (a caller alone in line reuses the
/// last number, local_queue.cpp): the tests below join each contender behind another.
std::int64_t tickets_taken(const std::string& name) {
    std::int64_t counter = 0;
    const int fd = ::open(queue_file(name).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd != -1) {
        if (::pread(fd, &counter, sizeof counter, 0) != static_cast<ssize_t>(sizeof counter))
            counter = 0;
        ::close(fd);
    }
    return counter;
}

void touch(const std::string& path) {
    std::ofstream{path};
}

bool exists(const std::string& path) {
    return std::filesystem::exists(path);
}

/// A child process that is killed and reaped if the test ends before waiting for it (a failed
/// REQUIRE), so that no contender outlives its test.
struct child {
    pid_t pid = -1;

    explicit child(pid_t p) : pid(p) {}
    child(child&& other) noexcept : pid(std::exchange(other.pid, -1)) {}
    child& operator=(child&&) = delete;
    ~child() {
        if (pid > 0) {
            kill(-pid, SIGKILL);
            test::wait_exit(pid);
        }
    }
    /// Waits for it to exit; its exit status (128 + N when killed by signal N).
    int exit_status() { return test::wait_exit(std::exchange(pid, -1)); }
    /// Stops it (SIGSTOP) and waits until it is stopped.
    bool stop() const {
        int status = 0;
        return kill(pid, SIGSTOP) == 0 && waitpid(pid, &status, WUNTRACED) == pid &&
               WIFSTOPPED(status);
    }
};

/// A contender process in line for `name`: `sqlock_contender line` with its own directory.
struct in_line {
    std::string dir;
    child process;

    in_line(const std::string& name, const std::string& who,
            const std::vector<std::string>& env = {})
        : dir(test::backend().scratch_dir + "/" + name + "." + who),
          process((std::filesystem::create_directories(dir),
                   test::spawn({test::contender_path(), "line", test::backend().url, name,
                                strategy_arg(), dir},
                               env, {}, dir + "/stderr"))) {}
    bool locked() const { return exists(dir + "/locked"); }
    /// Lets it unlock; its exit status once it has.
    int release() {
        touch(dir + "/release");
        return process.exit_status();
    }
};

/// Spawns `who` in line for `name` and waits until it has taken its ticket.
in_line join_line(const std::string& name, const std::string& who,
                  const std::vector<std::string>& env = {}) {
    const auto before = tickets_taken(name);
    in_line p(name, who, env);
    REQUIRE_MESSAGE(test::eventually([&] { return tickets_taken(name) > before; }, 10s),
                    who << " never joined the queue");
    return p;
}

/// How many blocked OFD lock requests (waits in the kernel, "->" lines of /proc/locks) there
/// are on the queue file of `name` starting at byte `start`.
int kernel_waits(const std::string& name, long start) {
    struct stat st {};
    if (::stat(queue_file(name).c_str(), &st) != 0)
        return 0;
    const std::string file = ":" + std::to_string(st.st_ino);
    std::ifstream locks("/proc/locks");
    int waits = 0;
    for (std::string line; std::getline(locks, line);) {
        // "3: -> OFDLCK ADVISORY  READ -1 fe:00:11321581 8 8"
        std::istringstream in(line);
        std::string id, arrow, kind, advisory, type, pid, where;
        long from = -1;
        in >> id >> arrow >> kind >> advisory >> type >> pid >> where >> from;
        if (arrow == "->" && kind == "OFDLCK" && where.size() > file.size() &&
            where.compare(where.size() - file.size(), file.size(), file) == 0 && from == start)
            ++waits;
    }
    return waits;
}

/// The number of threads of this process.
int thread_count() {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
        if (line.rfind("Threads:", 0) == 0)
            return std::stoi(line.substr(8));
    return -1;
}

} // namespace

TEST_SUITE("fair_sqlite") {

    TEST_CASE("a process re-locking at once cannot starve a waiter in another process") {
        // Without the queue, the releaser's next INSERT (or BEGIN IMMEDIATE) comes microseconds
        // after its release, long before a polling waiter wakes: the waiter is never granted.
        const auto name = unique_name("fair-churn");
        const auto dir = test::backend().scratch_dir + "/" + name;
        std::filesystem::create_directories(dir);
        child releaser(test::spawn(
            {test::contender_path(), "hog", test::backend().url, name, strategy_arg(), "0", dir},
            {}, dir + "/grants", dir + "/stderr"));
        REQUIRE(test::eventually([&] { return exists(dir + "/started"); }, 10s));
        mutex waiter(db(), name, opts());
        std::chrono::steady_clock::duration longest{};
        bool all_granted = true;
        for (int round = 0; round < 50 && all_granted; ++round) {
            const auto asked = std::chrono::steady_clock::now();
            all_granted = waiter.try_lock_for(5s);
            longest = std::max(longest, std::chrono::steady_clock::now() - asked);
            if (all_granted)
                waiter.unlock();
        }
        touch(dir + "/stop");
        CHECK(releaser.exit_status() == 0);
        CHECK_MESSAGE(all_granted, test::read_file(dir + "/stderr"));
        CHECK(longest < 1s);
    }

    TEST_CASE("the first in line is woken by the release, not by its polling") {
        // Its backoff pause is 5 s: only the kernel ending its wait on the holder byte can
        // make it ask the database again within a fraction of that.
        const auto name = unique_name("fair-wake");
        mutex holder(db(), name, opts());
        holder.lock();
        auto next = join_line(name, "next", {"SQLOCK_CONTENDER_RETRY_MS=5000"});
        // Until its helper thread blocks on the holder byte (byte 8): released any earlier, its
        // first attempt would be granted without a wake-up.
        REQUIRE(test::eventually([&] { return kernel_waits(name, 8) > 0; }, 10s));
        const auto released = std::chrono::steady_clock::now();
        holder.unlock();
        REQUIRE(test::eventually([&] { return next.locked(); }, 15s));
        CHECK(std::chrono::steady_clock::now() - released < 1s);
        CHECK(next.release() == 0);
    }

    TEST_CASE("a killed waiter's turn is skipped at once") {
        const auto name = unique_name("fair-kill");
        mutex holder(db(), name, opts());
        holder.lock();
        auto doomed = join_line(name, "doomed");
        auto next = join_line(name, "next");
        kill(doomed.process.pid, SIGKILL);
        CHECK(doomed.process.exit_status() == 128 + SIGKILL);
        // The kernel dropped the dead waiter's place: "next" is first in line, so it waits in
        // the kernel for the holder (on the holder byte, 8), as only the first in line does
        // (behind a live waiter it would wait for the place ahead, and bypass it only by a
        // direct attempt once a second). The dead waiter's own wait there ended with it.
        REQUIRE(test::eventually([&] { return kernel_waits(name, 8) > 0; }, 10s));
        const auto released = std::chrono::steady_clock::now();
        holder.unlock();
        REQUIRE(test::eventually([&] { return next.locked(); }, 10s));
        // Woken by the release (the same bound as for the first in line above), not by a
        // bypass attempt.
        CHECK(std::chrono::steady_clock::now() - released < 1s);
        CHECK(next.release() == 0);
    }

    TEST_CASE("a stopped waiter ahead delays the next by at most one bypass step") {
        const auto name = unique_name("fair-stop");
        mutex holder(db(), name, opts());
        holder.lock();
        auto first = join_line(name, "first");
        auto stopped = join_line(name, "stopped");
        auto next = join_line(name, "next");
        REQUIRE(stopped.process.stop());
        holder.unlock();
        REQUIRE(test::eventually([&] { return first.locked(); }, 10s));
        CHECK(first.release() == 0);
        const auto released = std::chrono::steady_clock::now();
        // "stopped" is next in line but cannot ask: "next" waits at most the bypass step
        // (1 s), then asks the database itself, and is granted.
        const bool granted = test::eventually([&] { return next.locked(); }, 10s);
        const auto took = std::chrono::steady_clock::now() - released;
        kill(stopped.process.pid, SIGCONT);
        REQUIRE(granted);
        CHECK(took < 1500ms);
        CHECK(next.release() == 0);
        // Resumed, the stopped waiter still gets its turn.
        REQUIRE(test::eventually([&] { return stopped.locked(); }, 10s));
        CHECK(stopped.release() == 0);
    }

    TEST_CASE("timed waits behind a stopped waiter leave no thread each behind") {
        // Each timed wait blocks in the kernel on a helper thread; one that gives up leaves it
        // blocked until the range frees. Helpers are shared per queue file and range start.
        const auto name = unique_name("fair-threads");
        mutex holder(db(), name, opts());
        holder.lock();
        auto first = join_line(name, "first");
        auto stopped = join_line(name, "stopped"); // second: waiting in the kernel, not polling
        REQUIRE(stopped.process.stop());
        mutex waiter(db(), name, opts());
        CHECK_FALSE(waiter.try_lock_for(20ms)); // starts this process's helper thread
        const int before = thread_count();
        int granted = 0;
        for (int i = 0; i < 30; ++i)
            granted += waiter.try_lock_for(20ms) ? 1 : 0;
        const int after = thread_count();
        // Resumed only once "first" has had its turn: its step long over, a resumed waiter
        // makes its bypass attempt at once, which can take the lock just released before the
        // head (woken by the kernel) asks (ASan, twice in ~10 runs).
        holder.unlock();
        REQUIRE(test::eventually([&] { return first.locked(); }, 10s));
        CHECK(first.release() == 0);
        kill(stopped.process.pid, SIGCONT);
        REQUIRE(test::eventually([&] { return stopped.locked(); }, 10s));
        CHECK(stopped.release() == 0);
        CHECK(granted == 0);
        CHECK(after - before <= 2);
    }

    TEST_CASE("a process stopped while taking a ticket does not stall the others") {
        // The test holds the ticket counter's lock, as a process stopped between reading and
        // writing the counter would: a joiner gives up queueing and waits by polling.
        const auto name = unique_name("fair-counter");
        std::filesystem::create_directories(std::filesystem::path(queue_file(name)).parent_path());
        const int fd = ::open(queue_file(name).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        REQUIRE(fd != -1);
        struct flock fl {};
        fl.l_type = F_WRLCK;
        fl.l_whence = SEEK_SET;
        fl.l_start = 0;
        fl.l_len = 8;
        REQUIRE(::fcntl(fd, F_OFD_SETLK, &fl) == 0);
        std::atomic<bool> done{false};
        std::atomic<bool> granted{false};
        std::chrono::steady_clock::duration took{};
        std::thread caller([&] {
            mutex m(db(), name, opts());
            const auto asked = std::chrono::steady_clock::now();
            granted = m.try_lock_for(10s);
            took = std::chrono::steady_clock::now() - asked;
            if (granted)
                m.unlock();
            done = true;
        });
        const bool returned = test::eventually([&] { return done.load(); }, 3s);
        ::close(fd); // drops the counter lock: a caller stuck on it goes on
        caller.join();
        CHECK(returned);
        CHECK(granted);
        CHECK(took < 1s);
    }
}
