// sqlock::shared_mutex on every backend and strategy: readers together, a writer alone, writers
// not starved by readers, tokens, loss, and `sqlock run --shared / --exclusive`.
#include "backend_fixture.hpp"

#include <atomic>
#include <csignal>
#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <shared_mutex>
#include <sqlock/shared_mutex.hpp>
#include <sstream>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using sqlock::shared_mutex;
using test::db;
using test::opts;
using test::unique_name;

TEST_SUITE("shared_mutex") {

    TEST_CASE("readers hold it together; a writer waits for them and holds it alone") {
        const auto name = unique_name("rw-basic");
        shared_mutex r1(db(), name, opts(), 4);
        shared_mutex r2(db(), name, opts(), 4);
        shared_mutex w(db(), name, opts(), 4);
        CHECK(r1.try_lock_shared());
        CHECK(r2.try_lock_shared());
        CHECK(r1.owns_shared());
        CHECK_FALSE(r1.owns_lock());
        const auto reader_tokens = std::max(r1.token(), r2.token());
        CHECK_FALSE(w.try_lock());
        CHECK_FALSE(w.try_lock_for(200ms));
        r1.unlock_shared();
        CHECK_FALSE(w.try_lock()); // r2 is still inside
        r2.unlock_shared();
        REQUIRE(w.try_lock_for(10s));
        CHECK(w.owns_lock());
        CHECK(w.token() > reader_tokens);
        CHECK_FALSE(r1.try_lock_shared());
        CHECK_FALSE(r2.try_lock_shared_for(200ms));
        const auto writer_token = w.token();
        w.unlock();
        CHECK_FALSE(w.owns_lock());
        REQUIRE(r1.try_lock_shared_for(10s));
        CHECK(r1.token() > writer_token);
        r1.unlock_shared();
        CHECK(r1.last_error().empty());
        CHECK(w.last_error().empty());
    }

    TEST_CASE("a writer's token is above every earlier grant's, in either mode") {
        const auto name = unique_name("rw-tokens");
        shared_mutex a(db(), name, opts(), 3);
        shared_mutex b(db(), name, opts(), 3);
        std::int64_t last = 0;
        for (int i = 0; i < 4; ++i) {
            a.lock_shared();
            b.lock_shared();
            last = std::max({last, a.token(), b.token()});
            a.unlock_shared();
            b.unlock_shared();
            auto& writer = i % 2 ? a : b;
            writer.lock();
            CHECK(writer.token() > last);
            last = writer.token();
            writer.unlock();
        }
    }

    TEST_CASE("std::shared_lock, std::unique_lock and std::scoped_lock work") {
        const auto name = unique_name("rw-std");
        shared_mutex rw(db(), name, opts(), 2);
        shared_mutex other(db(), name, opts(), 2);
        {
            std::shared_lock reader(rw);
            CHECK(reader.owns_lock());
            CHECK(rw.owns_shared());
            std::shared_lock second(other, 5s);
            CHECK(second.owns_lock());
        }
        {
            std::unique_lock writer(rw);
            CHECK(rw.owns_lock());
            CHECK_FALSE(other.try_lock_shared());
        }
        {
            sqlock::mutex m(db(), unique_name("rw-std-m"), opts());
            std::scoped_lock both(rw, m);
            CHECK(rw.owns_lock());
        }
        CHECK(other.try_lock());
        other.unlock();
    }

    TEST_CASE("re-entry in the same mode counts; switching modes on one thread is refused") {
        const auto name = unique_name("rw-reenter");
        shared_mutex rw(db(), name, opts(), 2);
        rw.lock_shared();
        CHECK(rw.try_lock_shared());
        CHECK(test::error_of([&] { rw.lock(); }).code() == sqlock::errc::invalid_argument);
        rw.unlock_shared();
        CHECK(rw.owns_shared());
        rw.unlock_shared();
        CHECK_FALSE(rw.owns_shared());
        rw.lock();
        CHECK(rw.try_lock());
        CHECK(test::error_of([&] { rw.lock_shared(); }).code() == sqlock::errc::invalid_argument);
        rw.unlock();
        CHECK(rw.owns_lock());
        rw.unlock();
        CHECK_FALSE(rw.owns_lock());
        shared_mutex other(db(), name, opts(), 2);
        CHECK(other.try_lock());
        other.unlock();
    }

    TEST_CASE("no reader ever overlaps a writer, no two writers overlap") {
        const auto name = unique_name("rw-mix");
        std::atomic<int> readers{0};
        std::atomic<int> writers{0};
        std::atomic<int> violations{0};
        std::atomic<int> most_readers{0};
        std::atomic<int> writes{0};
        std::vector<std::thread> threads;
        for (int t = 0; t < 6; ++t) {
            threads.emplace_back([&, t] {
                shared_mutex rw(db(), name, opts(), 4);
                for (int i = 0; i < 5; ++i) {
                    if (t < 2) { // writers
                        REQUIRE(rw.try_lock_for(60s));
                        if (++writers != 1 || readers != 0)
                            ++violations;
                        std::this_thread::sleep_for(2ms); // the write
                        --writers;
                        ++writes;
                        rw.unlock();
                    } else {
                        REQUIRE(rw.try_lock_shared_for(60s));
                        const int now = ++readers;
                        if (writers != 0)
                            ++violations;
                        for (int m = most_readers.load();
                             now > m && !most_readers.compare_exchange_weak(m, now);) {
                        }
                        // Until two readers have met, a reader stays (up to 3 s) for another
                        // one: on a loaded host 5 ms reads rarely overlap by chance, and
                        // readers that were never together would prove no sharing.
                        if (most_readers < 2)
                            test::eventually([&] { return most_readers >= 2; }, 3s);
                        std::this_thread::sleep_for(5ms); // the read
                        --readers;
                        rw.unlock_shared();
                    }
                }
            });
        }
        for (auto& t : threads)
            t.join();
        CHECK(violations == 0);
        CHECK(writes == 10);
        CHECK(most_readers >= 2);
    }

    TEST_CASE("a stream of readers in another process does not starve a writer") {
        // Two reader loops there keep a reader inside nearly all the time. The writer keeps
        // every permit it has taken while it waits for the rest, and readers that come after
        // it wait at its gate, so it gets in once the readers inside have left.
        const auto name = unique_name("rw-starve");
        const auto dir = test::backend().scratch_dir + "/" + name;
        const std::string cli = test::cli_path();
        const std::string strategy(sqlock::to_string(test::strategy()));
        const std::string script =
            "end=$(($(date +%s) + 20)); while [ $(date +%s) -lt $end ] && [ ! -e '" + dir +
            "/stop' ]; do \"$0\" run '" + name + "' --shared --max-readers 4 --strategy " +
            strategy + " -- sh -c 'touch \"" + dir + "/in\"; sleep 0.3'; done";
        std::filesystem::create_directories(dir);
        std::vector<pid_t> readers;
        for (int r = 0; r < 2; ++r)
            readers.push_back(test::spawn({"/bin/sh", "-c", script, cli},
                                          {"SQLOCK_URL=" + test::backend().url},
                                          dir + "/readers.out", dir + "/readers.err"));
        REQUIRE(test::eventually([&] { return std::filesystem::exists(dir + "/in"); }, 30s));
        const auto asked = std::chrono::steady_clock::now();
        shared_mutex writer(db(), name, opts(), 4);
        const bool granted = writer.try_lock_for(10s);
        const auto waited = std::chrono::steady_clock::now() - asked;
        if (granted)
            writer.unlock();
        { std::ofstream stop(dir + "/stop"); }
        for (const auto pid : readers)
            test::wait_exit(pid);
        CHECK(granted);
        CHECK(waited < 5s);
    }

    TEST_CASE("`sqlock run --shared / --exclusive`: readers together, writers alone") {
        const auto name = unique_name("rw-cli");
        const auto log = test::backend().scratch_dir + "/" + name + ".log";
        // Until two readers have met (both marked in), a reader stays up to 10 s for another
        // one: on a loaded host the CLI's start-up outlasts a 0.3 s hold, and readers that were
        // never together would prove no sharing.
        const auto dir = test::backend().scratch_dir + "/" + name;
        std::filesystem::create_directories(dir);
        const std::string meet = "touch '" + dir + "/in.'$$; i=0; while [ ! -e '" + dir +
                                 "/met' ] && [ $i -lt 100 ]; do " + "if [ $(ls '" + dir +
                                 "' | grep -c '^in\\.') -ge 2 ]; then touch '" + dir +
                                 "/met'; else sleep 0.1; i=$((i + 1)); fi; done; ";
        const auto command = [&](const std::string& mark) {
            return "echo \"" + mark + "+ $SQLOCK_TOKEN\" >> '" + log + "'; " +
                   (mark == "r" ? meet : std::string()) + "sleep 0.3; rm -f '" + dir +
                   "/in.'$$; echo \"" + mark + "-\" >> '" + log + "'";
        };
        std::vector<pid_t> pids;
        for (int p = 0; p < 8; ++p) {
            const bool writer = p % 4 == 3;
            pids.push_back(
                test::spawn({test::cli_path(), "run", name, writer ? "--exclusive" : "--shared",
                             "--strategy", std::string(sqlock::to_string(test::strategy())),
                             "--wait", "60s", "--", "sh", "-c", command(writer ? "w" : "r")},
                            {"SQLOCK_URL=" + test::backend().url}));
        }
        for (const auto pid : pids)
            CHECK(test::wait_exit(pid) == 0);
        std::istringstream in(test::read_file(log));
        std::string mark;
        int readers = 0, writers = 0, most_readers = 0, starts = 0, bad = 0;
        std::int64_t token = 0, last_writer_token = 0;
        std::string line;
        while (std::getline(in, line)) {
            std::istringstream fields(line);
            fields >> mark;
            if (mark == "r+") {
                ++starts;
                most_readers = std::max(most_readers, ++readers);
                bad += writers != 0;
            } else if (mark == "w+") {
                ++starts;
                fields >> token;
                bad += ++writers != 1 || readers != 0;
                CHECK(token > last_writer_token);
                last_writer_token = token;
            } else if (mark == "r-") {
                --readers;
            } else {
                --writers;
            }
        }
        CHECK(starts == 8);
        CHECK(bad == 0);
        CHECK(most_readers >= 2);
    }

    TEST_CASE("bad arguments are refused before anything is sent") {
        const auto code = [](const std::string& name, std::int64_t readers) {
            return test::error_of([&] { shared_mutex rw(db(), name, opts(), readers); }).code();
        };
        CHECK(code("", 2) == sqlock::errc::invalid_argument);
        CHECK(code("x", 0) == sqlock::errc::invalid_argument);
        CHECK(code("x", sqlock::max_permits + 1) == sqlock::errc::invalid_argument);
        CHECK(code(std::string(sqlock::max_semaphore_name_length + 1, 'a'), 2) ==
              sqlock::errc::invalid_argument);
        CHECK(code("unit\x1fsep", 2) == sqlock::errc::invalid_argument);
        shared_mutex rw(db(), "x", opts(), 2);
        rw.unlock(); // not held: recorded, not thrown
        CHECK_FALSE(rw.last_error().empty());
        rw.unlock_shared();
        CHECK_FALSE(rw.last_error().empty());
    }

    TEST_CASE("a writer without renewal keeps its place while it waits longer than its TTL") {
        // Nothing renews its gate while a reader keeps it waiting: it re-enters what it has
        // taken every TTL/3, so a second writer never takes the gate over (and the two never
        // take it from each other in turn), and the first is not told of a loss: it had no
        // grant to lose.
        // (2 s leases: with 1 s, the first writer's re-entry came more than a TTL late under
        // ASan on a loaded host, and the second rightly took the stale gate.)
        const auto name = unique_name("rw-two-writers");
        auto reader_options = opts(2s);
        reader_options.renew = true;
        std::atomic<int> told{0};
        auto writer_options = opts(2s);
        writer_options.renew = false;
        writer_options.on_lost = [&](const sqlock::lock_lost_event&) {
            ++told;
        };
        shared_mutex reader(db(), name, reader_options, 2);
        shared_mutex first(db(), name, writer_options, 2);
        shared_mutex second(db(), name, writer_options, 2);
        reader.lock_shared();
        std::atomic<std::int64_t> first_token{0}, second_token{0};
        std::atomic<bool> first_whole{false};
        std::thread a([&] {
            if (first.try_lock_for(20s)) {
                first_token = first.token();
                first_whole = first.owns_lock() && !first.stop_token().stop_requested();
                first.unlock();
            }
        });
        REQUIRE(test::eventually(
            [&] {
                const auto gate = test::row_of(name + "\x1fwriter");
                return gate && gate->held();
            },
            30s));
        std::thread b([&] {
            if (second.try_lock_for(20s)) {
                second_token = second.token();
                second.unlock();
            }
        });
        std::this_thread::sleep_for(5s); // the read goes on for 2.5 TTLs, renewed
        reader.unlock_shared();
        a.join();
        b.join();
        CHECK(first_token.load() > 0);
        CHECK(first_whole);
        CHECK(second_token.load() > first_token.load());
        CHECK(told == 0);
    }

    TEST_CASE("a writer killed holding the lock is replaced within two TTLs") {
        // Its gate and its permits are leases that nobody renews any more. The next writer
        // waits out the gate (one TTL), then the permits together (one more), not one TTL
        // after another (select_for_update's permits die with the killed session at once).
        const auto name = unique_name("rw-killed-writer");
        const auto marker = test::backend().scratch_dir + "/" + name + ".in";
        const pid_t holder = test::spawn({test::cli_path(), "run", name, "--exclusive",
                                          "--max-readers", "3", "--ttl", "2s", "--strategy",
                                          std::string(sqlock::to_string(test::strategy())), "--",
                                          "sh", "-c", "touch '" + marker + "'; sleep 60"},
                                         {"SQLOCK_URL=" + test::backend().url});
        REQUIRE(test::eventually([&] { return std::filesystem::exists(marker); }, 30s));
        ::kill(-holder, SIGKILL);
        test::wait_exit(holder);
        const auto killed = std::chrono::steady_clock::now();
        shared_mutex writer(db(), name, opts(2s), 3);
        const bool granted = writer.try_lock_for(30s);
        const auto waited = std::chrono::steady_clock::now() - killed;
        REQUIRE(granted);
        CHECK(writer.owns_lock());
        writer.unlock();
        CHECK(waited < 6s); // 2 TTLs + 2 s; one TTL per lease in turn would be 8 s
    }
} // TEST_SUITE shared_mutex

TEST_SUITE("shared_mutex_lease") { // unique_key, optimistic_version

    TEST_CASE("an uncontended shared lock and unlock send what a mutex's lock and unlock send") {
        // The reader permit's own acquire statement looks at the writer gate: no extra round
        // trip before it (issue 14: one round trip per uncontended shared lock with unique_key).
        shared_mutex rw(db(), unique_name("rw-budget"), opts(), 2);
        rw.lock(); // creates every row: the gate, both reader permits
        rw.unlock();
        test::check_costs_like_a_mutex([&] { rw.lock_shared(); }, [&] { rw.unlock_shared(); });
    }

    TEST_CASE("a writer whose reader permit is force-released is told once, and stops") {
        const auto name = unique_name("rw-lost");
        std::atomic<int> told{0};
        auto o = opts(3s); // renewed every second: the keeper finds the loss within about one
        o.renew = true;
        o.on_lost = [&](const sqlock::lock_lost_event&) {
            ++told;
        };
        shared_mutex w(db(), name, o, 3);
        w.lock();
        const auto stop = w.stop_token();
        CHECK_FALSE(stop.stop_requested());
        REQUIRE(db().force_release(name + "\x1freader 1", "test").released);
        REQUIRE(db().force_release(name + "\x1freader 2", "test").released);
        CHECK(test::eventually([&] { return stop.stop_requested(); }, 30s));
        CHECK_FALSE(w.owns_lock());
        CHECK(w.lost_reason() == sqlock::loss_reason::lost);
        w.unlock();
        CHECK(w.last_loss() == sqlock::loss_reason::lost);
        CHECK(told == 1);
    }

    TEST_CASE("a writer that waited longer than its TTL for a reader starts with a whole lease") {
        // Without renewal nothing extends the gate and the permits a writer took early while it
        // waits for a reader to leave: they must be confirmed before the grant is handed out.
        const auto name = unique_name("rw-long-wait");
        auto reader_options = opts(1s);
        reader_options.renew = true;
        auto writer_options = opts(1s);
        writer_options.renew = false;
        shared_mutex reader(db(), name, reader_options, 2);
        shared_mutex writer(db(), name, writer_options, 2);
        std::atomic<bool> reading{false};
        std::thread r([&] {
            reader.lock_shared();
            reading = true;
            std::this_thread::sleep_for(2500ms); // a read longer than two TTLs, renewed
            reader.unlock_shared();
        });
        REQUIRE(test::eventually([&] { return reading.load(); }, 30s));
        const bool granted = writer.try_lock_for(20s);
        r.join();
        REQUIRE(granted);
        CHECK(writer.owns_lock());
        CHECK_FALSE(writer.stop_token().stop_requested());
        CHECK(writer.lost_reason() == sqlock::loss_reason::none);
        writer.unlock();
        CHECK(writer.last_loss() == sqlock::loss_reason::none);
    }

    TEST_CASE("status shows readers and the writer under the lock's name") {
        const auto name = unique_name("rw-status");
        shared_mutex rw(db(), name, opts(), 2);
        rw.lock();
        const auto writer = test::row_of(name + "\x1fwriter");
        REQUIRE(writer);
        CHECK(writer->primitive_name() == name);
        CHECK(writer->role() == "writer");
        const auto reader = test::row_of(name + "\x1freader 1");
        REQUIRE(reader);
        CHECK(reader->role() == "reader 1");
        CHECK(reader->held());
        rw.unlock();
    }

    TEST_CASE("list() shows a primitive's locks together: gate, permits by number, queue") {
        const auto name = unique_name("rw-order");
        shared_mutex rw(db(), name, opts(), 12);
        rw.lock(); // the gate and all 12 reader permits
        std::vector<std::string> roles;
        for (const auto& l : db().list())
            if (l.primitive_name() == name)
                roles.emplace_back(l.role());
        std::vector<std::string> expected{"writer"};
        for (int k = 0; k < 12; ++k)
            expected.push_back("reader " + std::to_string(k)); // "reader 2" before "reader 10"
        CHECK(roles == expected);
        rw.unlock();
    }

} // TEST_SUITE shared_mutex_lease
