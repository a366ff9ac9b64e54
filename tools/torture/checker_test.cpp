// checker_test.cpp: the torture checker on synthetic histories (no database needed).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include "checker.hpp"

#include <doctest/doctest.h>

using namespace torture;

namespace {

constexpr std::int64_t ms = 1'000'000;
constexpr std::int64_t ttl = 1000 * ms;

/// Builds one worker's history; times in ms.
struct worker_log {
    explicit worker_log(std::int64_t p) : pid(p) {}
    std::int64_t pid;
    std::vector<event> events;

    worker_log& ev(std::int64_t t_ms, kind k, std::int64_t token = 0,
                   std::vector<std::string> args = {}) {
        events.push_back({t_ms * ms, pid, k, token, std::move(args)});
        return *this;
    }
    /// A clean grant: acquire, grant, read, own observations, fence, counter, release.
    worker_log& hold(std::int64_t t_acquire, std::int64_t t_grant, std::int64_t t_release,
                     std::int64_t token, std::int64_t counter_value, std::string detail = {}) {
        ev(t_acquire, kind::acquire);
        ev(t_grant, kind::grant, token,
           detail.empty() ? std::vector<std::string>{"1", "0"}
                          : std::vector<std::string>{"1", "0", detail});
        ev(t_grant + 1, kind::read, token, {std::to_string(counter_value)});
        for (auto t = t_grant + 2; t < t_release - 2; t += 10)
            ev(t, kind::own, token);
        ev(t_release - 2, kind::own, token);
        ev(t_release - 1, kind::fence, token, {"accepted", "0"});
        ev(t_release - 1, kind::cw, token, {std::to_string(counter_value + 1)});
        ev(t_release - 1, kind::incr, token, {std::to_string(counter_value + 1)});
        ev(t_release, kind::release, token, {"none", "0"});
        return *this;
    }
    /// A grant that is not alone (a semaphore permit, an rw reader): no fenced or counter
    /// write. `detail` is the grant's third argument (the permit, or "reader").
    worker_log& shared(std::int64_t t_acquire, std::int64_t t_grant, std::int64_t t_release,
                       std::int64_t token, const std::string& detail) {
        ev(t_acquire, kind::acquire);
        ev(t_grant, kind::grant, token, {"1", "0", detail});
        for (auto t = t_grant + 2; t < t_release - 2; t += 10)
            ev(t, kind::own, token);
        ev(t_release - 2, kind::own, token);
        ev(t_release, kind::release, token, {"none", "0"});
        return *this;
    }
};

event note(std::int64_t t_ms, kind k, std::vector<std::string> args = {}) {
    return {t_ms * ms, 0, k, 0, std::move(args)};
}

check_params params(bool no_fault = false) {
    check_params p;
    p.ttl_ns = ttl;
    p.max_hold_ns = 800 * ms;
    p.liveness_bound_ns = 1000 * ms;
    p.no_fault = no_fault;
    return p;
}

/// Two workers taking turns: tokens 1..4, counter 0..4, fence log in order.
check_input clean_run() {
    check_input in;
    worker_log a{100}, b{200};
    a.hold(0, 10, 100, 1, 0);
    b.hold(5, 101, 200, 2, 1);
    a.hold(101, 201, 300, 3, 2);
    b.hold(201, 301, 400, 4, 3);
    in.workers = {a.events, b.events};
    in.harness = {note(0, kind::run_start), note(5000, kind::run_end)};
    in.fence_log = {{99 * ms, 100, 1}, {199 * ms, 200, 2}, {299 * ms, 100, 3}, {399 * ms, 200, 4}};
    in.counter_final = 4;
    return in;
}

bool has_rule(const check_result& r, const std::string& rule) {
    for (const auto& v : r.violations)
        if (v.rule == rule)
            return true;
    return false;
}

} // namespace

TEST_CASE("history lines round-trip and malformed lines are rejected") {
    const event e{123, 45, kind::fence, 7, {"accepted", "6"}};
    const auto parsed = parse(format(e));
    REQUIRE(parsed);
    CHECK(parsed->t_ns == 123);
    CHECK(parsed->pid == 45);
    CHECK(parsed->kind == kind::fence);
    CHECK(parsed->token == 7);
    CHECK(parsed->args == std::vector<std::string>{"accepted", "6"});
    CHECK_FALSE(parse("12 3 nonsense 0"));
    CHECK_FALSE(parse("12 3 grant"));
    CHECK_FALSE(parse("x 3 grant 1"));
    // Spaces inside an argument cannot break the format.
    const auto msg = parse(format({1, 2, kind::error, 0, {"a b\nc"}}));
    REQUIRE(msg);
    CHECK(msg->args == std::vector<std::string>{"a_b_c"});
    CHECK(parse_fence_line("5 6 7\n")->token == 7);
    CHECK_FALSE(parse_fence_line("5 6"));
}

TEST_CASE("a clean history passes every check") {
    const auto r = check(clean_run(), params(true));
    CHECK(r.violations.empty());
    CHECK(r.grants == 4);
    CHECK(r.releases == 4);
    CHECK(r.false_losses == 0);
    CHECK(r.counter_checked);
    CHECK(r.liveness_windows_checked == 1);
    CHECK(r.passed());
}

TEST_CASE("rule 1: owns_lock() true after a later grant is a silent overlap") {
    auto in = clean_run();
    // Worker A (token 1) still sees its lock after B was granted token 2 at 101 ms.
    in.workers[0].push_back({150 * ms, 100, kind::own, 1, {}});
    const auto r = check(in, params());
    CHECK(has_rule(r, "overlap"));
}

TEST_CASE("rule 1: an observation before the later grant was recorded is not flagged") {
    auto in = clean_run();
    // Clock read at 100.5 ms, B's grant recorded at 101 ms: B may have been granted after.
    in.workers[0].push_back({100 * ms + ms / 2, 100, kind::own, 1, {}});
    CHECK_FALSE(has_rule(check(in, params()), "overlap"));
}

TEST_CASE("rule 1c (leader mode): an elector told it lost must see its stop_token requested") {
    auto in = clean_run();
    // A (term 1) sees is_leader() == false during its term, then resigns at 100 ms.
    in.workers[0].insert(in.workers[0].begin() + 4, {50 * ms, 100, kind::told, 1, {}});
    auto p = params();
    p.leader = true;
    CHECK(has_rule(check(in, p), "leader-stop")); // no stopreq recorded
    p.leader = false;
    CHECK_FALSE(has_rule(check(in, p), "leader-stop")); // a mutex has no such rule
    in.workers[0].insert(in.workers[0].begin() + 5, {51 * ms, 100, kind::stopreq, 1, {}});
    p.leader = true;
    const auto r = check(in, p);
    CHECK_FALSE(has_rule(r, "leader-stop"));
    CHECK(r.violations.empty());
}

TEST_CASE("rule 1: a holder that was told may overlap") {
    auto in = clean_run();
    // A learns of its loss (told) and stops observing: no own after B's grant, no violation,
    // but the loss disables the counter check and counts as a loss.
    in.workers[0].push_back({150 * ms, 100, kind::told, 1, {}});
    const auto r = check(in, params());
    CHECK(r.violations.empty());
    CHECK(r.losses == 1);
    CHECK_FALSE(r.counter_checked);
}

TEST_CASE("rule 1: lost updates of the counter are caught") {
    auto in = clean_run();
    in.counter_final = 3;
    CHECK(has_rule(check(in, params()), "counter"));

    // Two untold grants wrote the same value.
    auto dup = clean_run();
    for (auto& e : dup.workers[1])
        if (e.token == 2 && (e.kind == kind::incr || e.kind == kind::cw))
            e.args = {"1"};
    CHECK(has_rule(check(dup, params()), "counter"));
}

TEST_CASE("rule 1: the counter is not checked when a writer died mid-write") {
    auto in = clean_run();
    worker_log c{300};
    c.ev(400, kind::acquire).ev(410, kind::grant, 5).ev(411, kind::read, 5, {"4"});
    c.ev(420, kind::fence, 5, {"accepted", "4"}).ev(421, kind::cw, 5, {"5"});
    in.workers.push_back(c.events); // killed here: counter may or may not say 5
    in.counter_final = 5;
    const auto r = check(in, params());
    CHECK_FALSE(r.counter_checked);
    CHECK(r.violations.empty());
}

TEST_CASE("rule 2: a token granted twice is a violation") {
    auto in = clean_run();
    worker_log c{300};
    c.hold(400, 410, 500, 4, 4);
    in.workers.push_back(c.events);
    in.counter_final = 5;
    CHECK(has_rule(check(in, params()), "token-dup"));
}

TEST_CASE("rule 2: a later lock() call must get a larger token") {
    auto in = clean_run();
    worker_log c{300};
    // c's lock() call begins at 402 ms, after token 4 was granted (301 ms), yet gets a smaller
    // token that was never granted before (-1: token 0 is reserved for "no grant").
    c.hold(402, 410, 500, -1, 4);
    in.workers.push_back(c.events);
    in.counter_final = 5;
    CHECK(has_rule(check(in, params()), "token-order"));
}

TEST_CASE("rule 2: a slow grant recorded late with a smaller token is not flagged") {
    // B's lock() began before A's grant was recorded, so B may have been granted first and
    // merely recorded its grant late (it was stopped right after lock() returned).
    check_input in;
    worker_log a{100}, b{200};
    a.hold(0, 10, 100, 2, 0);
    b.ev(5, kind::acquire).ev(300, kind::grant, 1, {"0", "0"});
    b.ev(301, kind::told, 1).ev(302, kind::release, 1, {"lost", "0"});
    in.workers = {a.events, b.events};
    in.fence_log = {{99 * ms, 100, 2}};
    const auto r = check(in, params());
    CHECK_FALSE(has_rule(r, "token-order"));
}

TEST_CASE("rule 3: the fenced resource must never accept a smaller token") {
    auto in = clean_run();
    in.fence_log.push_back({450 * ms, 100, 3});
    CHECK(has_rule(check(in, params()), "fence"));
}

TEST_CASE("rule 3: a refused fenced write without any loss signal is a silent loss") {
    auto in = clean_run();
    for (auto& e : in.workers[0])
        if (e.token == 3 && e.kind == kind::fence)
            e.args = {"refused", "4"};
    CHECK(has_rule(check(in, params()), "fence-silent"));
    // With last_loss() == lost it was told, which is fine.
    for (auto& e : in.workers[0])
        if (e.token == 3 && e.kind == kind::release)
            e.args = {"lost", "0"};
    CHECK_FALSE(has_rule(check(in, params()), "fence-silent"));
}

TEST_CASE("rule 4: after a stop longer than the TTL, owns_lock() must be false") {
    check_input in;
    worker_log a{100};
    a.ev(0, kind::acquire).ev(10, kind::grant, 1).ev(20, kind::own, 1);
    in.harness = {note(0, kind::run_start), note(30, kind::stopped, {"100"}),
                  note(1530, kind::cont, {"100"})};
    SUBCASE("owns_lock() true after SIGCONT is flagged") {
        a.ev(1531, kind::own, 1);
        in.workers = {a.events};
        const auto r = check(in, params());
        CHECK(r.pauses_checked == 1);
        CHECK(has_rule(r, "pause"));
    }
    SUBCASE("told after SIGCONT passes") {
        a.ev(1531, kind::told, 1).ev(1540, kind::release, 1, {"lost", "0"});
        in.workers = {a.events};
        const auto r = check(in, params());
        CHECK(r.pauses_checked == 1);
        CHECK(r.violations.empty());
    }
    SUBCASE("a stop shorter than the TTL is not checked") {
        in.harness[2].t_ns = 900 * ms;
        a.ev(901, kind::own, 1);
        in.workers = {a.events};
        const auto r = check(in, params());
        CHECK(r.pauses_checked == 0);
        CHECK_FALSE(has_rule(r, "pause"));
    }
}

TEST_CASE("rule 5: grants must resume after the last fault") {
    auto in = clean_run();
    in.harness = {note(0, kind::run_start), note(400, kind::fault, {"kill", "1"}),
                  note(450, kind::fault_end, {"kill", "1"}), note(10000, kind::run_end)};
    const auto r = check(in, params());
    CHECK(r.faults.at("kill") == 1);
    CHECK(has_rule(r, "liveness")); // nothing granted after 450 ms

    worker_log c{300};
    c.hold(500, 2000, 2100, 5, 4);
    in.workers.push_back(c.events);
    in.counter_final = 5;
    CHECK_FALSE(has_rule(check(in, params()), "liveness"));

    // A window cut short by the end of the run cannot be judged.
    auto short_run = clean_run();
    short_run.harness = {note(0, kind::run_start), note(400, kind::fault, {"kill", "1"}),
                         note(450, kind::fault_end, {"kill", "1"}), note(1000, kind::run_end)};
    CHECK_FALSE(has_rule(check(short_run, params()), "liveness"));
}

TEST_CASE("no-fault mode: every loss signal is a false loss") {
    auto in = clean_run();
    in.workers[1].push_back({150 * ms, 200, kind::lost_cb, 2, {"lost"}});
    auto r = check(in, params(true));
    CHECK(r.false_losses == 1);
    CHECK_FALSE(r.passed());
    // The same history in a fault run is fine.
    r = check(in, params(false));
    CHECK(r.false_losses == 0);
    CHECK(r.losses == 1);
    CHECK(r.passed());
}

TEST_CASE("an on_lost callback recorded before its grant line still counts") {
    // on_lost runs on sqlock's thread: for a grant born lost it can beat the grant record.
    auto in = clean_run();
    auto& b = in.workers[1];
    b.insert(b.begin() + 1, event{100 * ms, 200, kind::lost_cb, 2, {"lost"}});
    const auto r = check(in, params(true));
    CHECK(r.false_losses == 1);
    CHECK(r.errors == 0);
}

TEST_CASE("rule 6: grants resume within the bound after a failover; the time is measured") {
    auto in = clean_run(); // grants at 10, 101, 201, 301 ms
    in.harness = {note(0, kind::run_start), note(150, kind::fault, {"failover", "node1"}),
                  note(500, kind::fault_end, {"failover", "node1"}), note(5000, kind::run_end)};
    auto p = params();
    p.resume_bound_ns = 100 * ms;
    auto r = check(in, p);
    REQUIRE(r.resume_ns.size() == 1);
    CHECK(r.resume_ns[0] == 51 * ms); // 150 -> the grant at 201
    CHECK_FALSE(has_rule(r, "resume"));
    p.resume_bound_ns = 40 * ms;
    CHECK(has_rule(check(in, p), "resume"));
    // Measured only, without a bound.
    p.resume_bound_ns = 0;
    r = check(in, p);
    CHECK_FALSE(has_rule(r, "resume"));
    CHECK(r.failover_held == 1); // token 2 (granted at 101, released at 200)
    // Measured from the old primary's death when the harness saw it.
    in.harness.insert(in.harness.begin() + 2, note(205, kind::crashed, {"node1"}));
    r = check(in, p);
    REQUIRE(r.resume_ns.size() == 1);
    CHECK(r.resume_ns[0] == 96 * ms); // 205 -> the grant at 301
}

TEST_CASE("rule 6: a session lock held across a failover must be heard lost") {
    check_input in;
    worker_log a{100}, b{200};
    // a is granted before the failover (150-500 ms) and still works after it.
    a.ev(0, kind::acquire).ev(10, kind::grant, 1, {"0", "7"});
    a.ev(100, kind::own, 1).ev(600, kind::own, 1); // true after the old primary died
    a.ev(601, kind::fence, 1, {"accepted", "0"}).ev(610, kind::release, 1, {"none", "0"});
    b.hold(20, 700, 800, 2, 0);
    in.workers = {a.events, b.events};
    in.counter_final = 1;
    in.harness = {note(0, kind::run_start), note(150, kind::fault, {"failover", "node1"}),
                  note(500, kind::fault_end, {"failover", "node1"}), note(5000, kind::run_end)};
    auto p = params();
    p.lock_dies_with_server = true;
    auto r = check(in, p);
    CHECK(has_rule(r, "failover-own"));
    CHECK(r.failover_held == 1);
    // Once the old primary is certainly down, owns_lock() == true is already wrong.
    auto early = in;
    early.workers[0][3].t_ns = 300 * ms; // an own at 300 ms: before the failover was over
    CHECK_FALSE(has_rule(check(early, p), "failover-own"));
    early.harness.insert(early.harness.begin() + 2, note(250, kind::crashed, {"node1"}));
    CHECK(has_rule(check(early, p), "failover-own"));
    CHECK(r.failover_told == 0);
    // A lease (not a session lock) may survive the failover: nothing to flag.
    p.lock_dies_with_server = false;
    CHECK(check(in, p).passed());

    // Without the late observation, a fenced write after the failover and a silent release.
    p.lock_dies_with_server = true;
    in.workers[0].erase(in.workers[0].begin() + 3); // the own at 600 ms
    CHECK(has_rule(check(in, p), "failover-silent"));
    // Told during the hold: accepted, and counted.
    in.workers[0].push_back({520 * ms, 100, kind::told, 1, {}});
    r = check(in, p);
    CHECK(r.passed());
    CHECK(r.failover_told == 1);
}

namespace {

check_params sem_params(std::int64_t permits) {
    auto p = params();
    p.permits = permits;
    return p;
}

check_params rw_params() {
    auto p = params();
    p.rw = true;
    return p;
}

/// Two permits, three workers: at most two holders at once; each permit's tokens increase,
/// tokens of different permits are unrelated (a later grant may have a smaller one).
check_input clean_semaphore_run() {
    check_input in;
    worker_log a{100}, b{200}, c{300};
    a.shared(0, 10, 100, 5, "0");    // permit 0, token 5
    b.shared(0, 20, 150, 1, "1");    // permit 1, token 1 (smaller than a's: another permit)
    c.shared(30, 101, 200, 6, "0");  // permit 0 after a left
    a.shared(101, 151, 250, 3, "1"); // permit 1 after b left: below a's token 5 of permit 0
    b.shared(151, 201, 300, 7, "0");
    in.workers = {a.events, b.events, c.events};
    in.harness = {note(0, kind::run_start), note(5000, kind::run_end)};
    return in;
}

} // namespace

TEST_CASE("semaphore: a clean history with N holders at once passes") {
    const auto r = check(clean_semaphore_run(), sem_params(2));
    for (const auto& v : r.violations)
        INFO(v.rule << ": " << v.message);
    CHECK(r.passed());
    CHECK(r.max_concurrent == 2);
    CHECK_FALSE(r.counter_checked); // no counter writes in semaphore mode
    // The same history read as a mutex's is full of violations (tokens across permits).
    CHECK_FALSE(check(clean_semaphore_run(), params()).passed());
}

TEST_CASE("semaphore: more than N grants certainly held at once is a violation") {
    auto in = clean_semaphore_run();
    worker_log d{400};
    d.shared(0, 50, 90, 1, "2"); // a third holder while a (10-98) and b (20-148) hold
    in.workers.push_back(d.events);
    auto r = check(in, sem_params(2));
    CHECK(has_rule(r, "sem-count"));
    CHECK(r.max_concurrent == 3);
    CHECK(check(in, sem_params(3)).passed());
    // Intervals that only touch are not certainly concurrent: granted at a's last own (98),
    // last seen held (99) before c was granted (101).
    in.workers.back().clear();
    worker_log e{400};
    e.shared(0, 98, 101, 1, "2");
    in.workers.back() = e.events;
    CHECK_FALSE(has_rule(check(in, sem_params(2)), "sem-count"));
}

TEST_CASE("semaphore: tokens of one permit must increase; overlap is checked per permit") {
    auto in = clean_semaphore_run();
    worker_log d{400};
    d.shared(260, 270, 280, 6, "0"); // permit 0 after token 7 was granted (at 201): smaller
    in.workers.push_back(d.events);
    auto r = check(in, sem_params(2));
    CHECK(has_rule(r, "token-order"));
    CHECK(has_rule(r, "token-dup")); // token 6 of permit 0 was c's
    CHECK_FALSE(has_rule(r, "sem-count"));

    // Two holders of permit 0: a (10-98) still sees it held after token 9 of permit 0 was
    // granted to d; b holds permit 1 and c starts at 101: never three at once.
    in = clean_semaphore_run();
    worker_log e{400};
    e.shared(40, 60, 80, 9, "0");
    in.workers.push_back(e.events);
    r = check(in, sem_params(2));
    CHECK(has_rule(r, "overlap"));
    CHECK(has_rule(r, "sem-count")); // a, b and e at once
    CHECK_FALSE(has_rule(check(in, sem_params(3)), "sem-count"));
    CHECK(has_rule(check(in, sem_params(3)), "overlap"));
}

namespace {

/// Two readers together, then a writer (fenced and counter write), then a reader.
check_input clean_rw_run() {
    check_input in;
    worker_log a{100}, b{200}, c{300};
    a.shared(0, 10, 100, 1, "reader");
    b.shared(0, 20, 110, 2, "reader");
    c.hold(50, 120, 200, 5, 0, "writer"); // asked while both read: token above both
    a.shared(150, 210, 300, 4, "reader"); // a reader's token is its permit's: may be lower
    in.workers = {a.events, b.events, c.events};
    in.harness = {note(0, kind::run_start), note(5000, kind::run_end)};
    in.fence_log = {{199 * ms, 300, 5}};
    in.counter_final = 1;
    return in;
}

} // namespace

TEST_CASE("rw: readers may share; a clean history passes") {
    const auto r = check(clean_rw_run(), rw_params());
    for (const auto& v : r.violations)
        INFO(v.rule << ": " << v.message);
    CHECK(r.passed());
    CHECK(r.max_concurrent == 2);
    CHECK(r.writers == 1);
    CHECK(r.counter_checked);
    // The same history read as a mutex's: the readers overlap.
    CHECK(has_rule(check(clean_rw_run(), params()), "overlap"));
}

TEST_CASE("rw: a reader certainly held while a writer was is a violation") {
    auto in = clean_rw_run();
    worker_log d{400};
    d.shared(130, 140, 170, 3, "reader"); // inside the writer's hold (120-198), smaller token
    in.workers.push_back(d.events);
    auto r = check(in, rw_params());
    CHECK(has_rule(r, "rw-overlap"));
    CHECK_FALSE(has_rule(r, "overlap")); // a smaller token proves nothing by itself
    // A reader with a larger token granted before the writer's observation: overlap too.
    in.workers.back().clear();
    worker_log e{400};
    e.shared(130, 140, 170, 8, "reader");
    in.workers.back() = e.events;
    r = check(in, rw_params());
    CHECK(has_rule(r, "rw-overlap"));
    CHECK(has_rule(r, "overlap"));
}

TEST_CASE("rw: two writers certainly held at once is a violation") {
    auto in = clean_rw_run();
    worker_log d{400};
    d.hold(115, 125, 160, 6, 1, "writer");
    in.workers.push_back(d.events);
    in.fence_log = {{159 * ms, 400, 6}, {199 * ms, 300, 5}};
    const auto r = check(in, rw_params());
    CHECK(has_rule(r, "rw-overlap"));
    CHECK(has_rule(r, "overlap")); // the writer with token 5 saw it held after token 6
    CHECK(has_rule(r, "fence"));
}

TEST_CASE("rw: a writer's token is above every grant recorded before it asked") {
    auto in = clean_rw_run();
    worker_log d{400};
    d.hold(305, 310, 400, 3, 1, "writer"); // asked after reader token 4 was granted (210)
    in.workers.push_back(d.events);
    in.counter_final = 2;
    auto r = check(in, rw_params());
    CHECK(has_rule(r, "token-order"));
    CHECK_FALSE(has_rule(r, "rw-overlap"));
    // Equal is not above either.
    in.workers.back().clear();
    worker_log e{400};
    e.hold(305, 310, 400, 4, 1, "writer");
    in.workers.back() = e.events;
    CHECK(has_rule(check(in, rw_params()), "token-order"));
    // A writer's token repeated is token-dup.
    in.workers.back().clear();
    worker_log f{400};
    f.hold(305, 310, 400, 5, 1, "writer");
    in.workers.back() = f.events;
    CHECK(has_rule(check(in, rw_params()), "token-dup"));
}

TEST_CASE("rw: a reader after a writer left is fine even with a smaller token") {
    check_input in;
    worker_log w{100}, r1{200};
    w.hold(0, 10, 60, 9, 0, "writer");
    r1.shared(5, 100, 200, 3, "reader"); // the mutex overlap rule would flag its observations
    in.workers = {w.events, r1.events};
    in.harness = {note(0, kind::run_start), note(5000, kind::run_end)};
    in.fence_log = {{59 * ms, 100, 9}};
    in.counter_final = 1;
    CHECK(check(in, rw_params()).passed());
    CHECK_FALSE(check(in, params()).passed());
}

TEST_CASE("rw: only writers' losses stop the counter check; lost updates among writers") {
    auto in = clean_rw_run();
    in.workers[1].push_back({50 * ms, 200, kind::told, 2, {}}); // reader b was told
    CHECK(check(in, rw_params()).counter_checked);
    worker_log d{400};
    d.hold(300, 310, 400, 7, 0, "writer"); // read 0 again: a lost update
    in.workers.push_back(d.events);
    in.fence_log.push_back({399 * ms, 400, 7});
    const auto r = check(in, rw_params());
    CHECK(has_rule(r, "counter"));
}
