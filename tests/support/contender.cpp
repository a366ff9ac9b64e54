// Test helper process: takes lock NAME ITERATIONS times and proves nobody else was inside.
//   sqlock_contender URL NAME TTL_MS ITERATIONS LOG STRATEGY
// While holding the lock it creates LOG.inside with O_EXCL (failing if another holder is in
// its critical section), appends "token pid" to LOG, and removes the marker before unlocking.
// Exit codes: 0 ok, 3 overlap seen, 4 unlock reported a failure, 2 usage, 1 other error.
//
//   sqlock_contender hold URL NAME TTL_MS STRATEGY DIR
// Takes the lock once, creates DIR/locked, then every 10 ms, while owns_lock() is true, appends
// a steady-clock timestamp (ns) to DIR/acted -- "work done under the lock". When owns_lock()
// turns false it creates DIR/lost, calls unlock() (which must not throw) and exits 0.
// Gives up after 60 s with exit code 5.
//
//   sqlock_contender queue URL NAME STRATEGY TTL_MS ITERATIONS HOLD_PERCENT
// ITERATIONS times: try_lock_for(10 x TTL), hold for HOLD_PERCENT of the TTL without renewal,
// and check that the grant was never reported lost: owns_lock() at the end of the hold,
// no on_lost call, last_loss() == none after unlock(). Prints one line per grant:
// "TOKEN WAITED_MS". Exit codes: 0 ok, 6 not granted within 10 x TTL, 7 a false loss.
//
//   sqlock_contender sem-hog URL NAME PERMITS STRATEGY DIR
// A semaphore hog: takes a permit, creates DIR/holding, then until DIR/stop exists works 20 ms
// per grant and asks again the moment it releases. Exit codes: 0 ok, 8 a re-acquire timed out.
//
//   sqlock_contender hog URL NAME STRATEGY HOLD_MS DIR
// A releaser that asks again at once: lock(), hold HOLD_MS, unlock(), lock() again ... until
// DIR/stop exists. Creates DIR/started after the first grant; prints the number of grants.
// Exit codes: 0 ok, 4 unlock reported a failure.
//
//   sqlock_contender line URL NAME STRATEGY DIR
// lock() (a place in line), creates DIR/locked, waits for DIR/release to exist, unlock(),
// exit 0 (4 when unlock() reported a failure). SQLOCK_CONTENDER_RETRY_MS as for hold.
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <iostream>
#include <random>
#include <sqlock/sqlock.hpp>
#include <string>
#include <thread>
#include <unistd.h>

namespace {

void touch(const std::string& path, const std::string& content = {}) {
    const int fd = open(path.c_str(), O_CREAT | O_APPEND | O_WRONLY, 0644);
    if (fd >= 0) {
        if (!content.empty() && write(fd, content.data(), content.size()) < 0)
            std::cerr << "write failed\n";
        close(fd);
    }
}

int hold(char** argv) {
    auto db = sqlock::connect(argv[2]);
    sqlock::mutex_options o;
    // Tests that must rule polling out make it very slow.
    if (const char* retry = std::getenv("SQLOCK_CONTENDER_RETRY_MS")) {
        o.retry_min = o.retry_max = std::chrono::milliseconds(std::stoll(retry));
    }
    o.ttl = std::chrono::milliseconds(std::stoll(argv[4]));
    o.strategy = sqlock::parse_strategy(argv[5]);
    sqlock::mutex m(db, argv[3], o);
    const std::string dir = argv[6];
    m.lock();
    touch(dir + "/locked",
          std::to_string(m.token()) + " " + std::to_string(m.server_session_id()) + "\n");
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < give_up) {
        // Read the clock first: owns_lock() == true then vouches for that instant.
        const auto now = std::chrono::steady_clock::now().time_since_epoch();
        if (!m.owns_lock()) {
            touch(dir + "/lost");
            m.unlock();
            return 0;
        }
        touch(dir + "/acted",
              std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(now).count()) +
                  "\n");
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return 5;
}

} // namespace

int queue(char** argv) {
    auto db = sqlock::connect(argv[2]);
    std::atomic<bool> lost_called{false};
    sqlock::mutex_options o;
    o.strategy = sqlock::parse_strategy(argv[4]);
    o.ttl = std::chrono::milliseconds(std::stoll(argv[5]));
    o.on_lost = [&](const sqlock::lock_lost_event&) {
        lost_called = true;
    };
    sqlock::mutex m(db, argv[3], o);
    const int iterations = std::stoi(argv[6]);
    const auto hold = o.ttl * std::stoll(argv[7]) / 100;
    for (int i = 0; i < iterations; ++i) {
        const auto asked = std::chrono::steady_clock::now();
        if (!m.try_lock_for(o.ttl * 10)) {
            std::cerr << "contender queue: not granted within 10 x TTL\n";
            return 6;
        }
        const auto waited = std::chrono::steady_clock::now() - asked;
        std::cout << m.token() << " "
                  << std::chrono::duration_cast<std::chrono::milliseconds>(waited).count()
                  << std::endl;
        std::this_thread::sleep_for(hold); // the work done under the lock
        const bool owned = m.owns_lock();
        m.unlock();
        if (!owned || lost_called || m.last_loss() != sqlock::loss_reason::none) {
            std::cerr << "contender queue: false loss after waiting "
                      << std::chrono::duration_cast<std::chrono::milliseconds>(waited).count()
                      << " ms (owns_lock " << owned << ", on_lost " << lost_called.load()
                      << ", last_loss " << sqlock::to_string(m.last_loss()) << ")\n";
            return 7;
        }
    }
    return 0;
}

/// race URL NAME STRATEGY START: waits for file START to exist, then makes exactly one
/// try_lock(); prints "won TOKEN" or "lost". Says it is ready (START.ready.PID) once it has
/// run a first statement. The winner holds for 3 s so that every racer's one attempt overlaps
/// its hold. Any error exits 1.
int race(char** argv) {
    auto db = sqlock::connect(argv[2]);
    sqlock::mutex_options o;
    o.strategy = sqlock::parse_strategy(argv[4]);
    sqlock::mutex m(db, argv[3], o);
    const std::string start = argv[5];
    (void)db.list(); // connected (a first statement run), then ready
    touch(start + ".ready." + std::to_string(getpid()));
    while (access(start.c_str(), F_OK) != 0)
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    if (m.try_lock()) {
        std::cout << "won " << m.token() << std::endl;
        std::this_thread::sleep_for(std::chrono::seconds(3));
        m.unlock();
        return m.last_error().empty() ? 0 : 4;
    }
    std::cout << "lost" << std::endl;
    return 0;
}

int sem_hog(char** argv) {
    auto db = sqlock::connect(argv[2]);
    sqlock::semaphore_options o;
    o.strategy = sqlock::parse_strategy(argv[5]);
    sqlock::semaphore s(db, argv[3], std::stoll(argv[4]), o);
    const std::string dir = argv[6];
    s.acquire();
    if (const int fd = open((dir + "/holding").c_str(), O_CREAT | O_WRONLY, 0644); fd >= 0)
        close(fd);
    while (access((dir + "/stop").c_str(), F_OK) != 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20)); // the hog's work
        s.release();
        if (!s.try_acquire_for(std::chrono::seconds(30)))
            return 8;
    }
    s.release();
    return 0;
}

/// hog URL NAME STRATEGY HOLD_MS DIR (see the top of the file).
int hog(char** argv) {
    auto db = sqlock::connect(argv[2]);
    sqlock::mutex_options o;
    o.strategy = sqlock::parse_strategy(argv[4]);
    sqlock::mutex m(db, argv[3], o);
    const auto hold_for = std::chrono::milliseconds(std::stoll(argv[5]));
    const std::string dir = argv[6];
    long grants = 0;
    while (access((dir + "/stop").c_str(), F_OK) != 0) {
        m.lock();
        if (++grants == 1)
            touch(dir + "/started");
        std::this_thread::sleep_for(hold_for);
        m.unlock();
        if (!m.last_error().empty()) {
            std::cerr << "contender hog: " << m.last_error() << "\n";
            return 4;
        }
    }
    std::cout << grants << std::endl;
    return 0;
}

/// line URL NAME STRATEGY DIR (see the top of the file).
int line(char** argv) {
    auto db = sqlock::connect(argv[2]);
    sqlock::mutex_options o;
    o.strategy = sqlock::parse_strategy(argv[4]);
    if (const char* retry = std::getenv("SQLOCK_CONTENDER_RETRY_MS"))
        o.retry_min = o.retry_max = std::chrono::milliseconds(std::stoll(retry));
    sqlock::mutex m(db, argv[3], o);
    const std::string dir = argv[5];
    m.lock();
    touch(dir + "/locked", std::to_string(m.token()) + "\n");
    while (access((dir + "/release").c_str(), F_OK) != 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(1)); // the test's signal
    m.unlock();
    return m.last_error().empty() ? 0 : 4;
}

int main(int argc, char** argv) {
    if (argc == 6 && std::string(argv[1]) == "line") {
        try {
            return line(argv);
        } catch (const std::exception& e) {
            std::cerr << "contender line: " << e.what() << "\n";
            return 1;
        }
    }
    if (argc == 7 && std::string(argv[1]) == "sem-hog") {
        try {
            return sem_hog(argv);
        } catch (const std::exception& e) {
            std::cerr << "contender sem-hog: " << e.what() << "\n";
            return 1;
        }
    }
    if (argc == 7 && std::string(argv[1]) == "hog") {
        try {
            return hog(argv);
        } catch (const std::exception& e) {
            std::cerr << "contender hog: " << e.what() << "\n";
            return 1;
        }
    }
    if (argc == 6 && std::string(argv[1]) == "race") {
        try {
            return race(argv);
        } catch (const std::exception& e) {
            std::cerr << "contender race: " << e.what() << "\n";
            return 1;
        }
    }
    if (argc == 8 && std::string(argv[1]) == "queue") {
        try {
            return queue(argv);
        } catch (const std::exception& e) {
            std::cerr << "contender queue: " << e.what() << "\n";
            return 1;
        }
    }
    if (argc == 7 && std::string(argv[1]) == "hold") {
        try {
            return hold(argv);
        } catch (const std::exception& e) {
            std::cerr << "contender hold: " << e.what() << "\n";
            return 1;
        }
    }
    if (argc != 7) {
        std::cerr << "usage: sqlock_contender URL NAME TTL_MS ITERATIONS LOG STRATEGY\n";
        return 2;
    }
    try {
        auto db = sqlock::connect(argv[1]);
        sqlock::mutex_options o;
        o.ttl = std::chrono::milliseconds(std::stoll(argv[3]));
        o.strategy = sqlock::parse_strategy(argv[6]);
        sqlock::mutex m(db, argv[2], o);
        const int iterations = std::stoi(argv[4]);
        const std::string log = argv[5];
        const std::string marker = log + ".inside";
        std::mt19937 rng{std::random_device{}()};
        for (int i = 0; i < iterations; ++i) {
            m.lock();
            const int fd = open(marker.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
            if (fd < 0) {
                std::cerr << "OVERLAP: " << marker << " exists (errno " << errno << ")\n";
                return 3;
            }
            close(fd);
            const std::string line =
                std::to_string(m.token()) + " " + std::to_string(getpid()) + "\n";
            const int out = open(log.c_str(), O_CREAT | O_APPEND | O_WRONLY, 0644);
            if (out < 0 ||
                write(out, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
                return 1;
            close(out);
            std::this_thread::sleep_for(std::chrono::microseconds(200 + rng() % 800));
            unlink(marker.c_str());
            m.unlock();
            if (!m.last_error().empty()) {
                std::cerr << "unlock failed: " << m.last_error() << "\n";
                return 4;
            }
        }
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "contender: " << e.what() << "\n";
        return 1;
    }
}
