// Leader election (README "Leader election"), compiled and run as a test so it cannot rot:
// the code between the README markers is the README's example, word for word (a test
// compares them).
//   example_leader [URL]   (default: sqlite:example-leader.db)
#include <iostream>
#include <sqlock/sqlock.hpp>
#include <thread>

using namespace std::chrono_literals;

namespace {

int rounds = 0;
/// The leader's work: here, a few rounds, then it stops leading by itself.
bool do_leader_work(std::int64_t term) {
    std::cout << "leading, term " << term << ", round " << ++rounds << "\n";
    return rounds < 3;
}

} // namespace

int main(int argc, char** argv) {
    try {
        sqlock::database db = sqlock::connect(argc > 1 ? argv[1] : "sqlite:example-leader.db");
        db.migrate();
        // README-BEGIN leader
        sqlock::leader_election e(db, "scheduler", {.ttl = 10s}); // renews on its own
        std::int64_t term = e.campaign();                         // blocks until this process leads
        std::stop_token stop = e.stop_token();                    // requested if leadership is lost
        while (!stop.stop_requested() && do_leader_work(term))    // fence writes with term
            std::this_thread::sleep_for(100ms);
        if (auto who = e.leader()) // any process may ask, without campaigning
            std::cout << "leader: " << who->host << ":" << who->pid << " term " << who->term
                      << ", lease ends in " << who->remaining.count() << " ms\n";
        e.resign(); // or let the destructor resign
        // README-END leader
        std::cout << (e.leader() ? "still a leader" : "no leader now") << "\n";
    } catch (const sqlock::error& e) {
        std::cerr << "sqlock error (" << sqlock::to_string(e.code()) << "): " << e.what() << "\n";
        return 1;
    }
}
