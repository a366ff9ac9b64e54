// worker.cpp: sqlock_torture_worker, one contender of a torture run (see README.md).
//
//   sqlock_torture_worker run --url URL --name NAME --strategy S --ttl-ms T --dir DIR --slot K
//       [--hold-min-pct 1] [--hold-max-pct 80] [--renew on|off|mix] [--seed N] [--poll-ms 5]
//       [--wait-factor 10] [--control none|skip-lock|ignore-tokens] [--self-stop-prob P]
//       [--self-stop-once FILE] [--mode lock|leader|semaphore|rw|quorum] [--permits N]
//       [--writer-share PCT] [--members URL,URL,URL]
//   sqlock_torture_worker note FILE KIND [ARG...]     append a harness note (PID 0, TOKEN 0)
//   sqlock_torture_worker relay --to PORT --port-file FILE
//       a TCP relay on 127.0.0.1 to 127.0.0.1:PORT; writes its own port to FILE; SIGUSR1
//       freezes it (a partition), SIGUSR2 thaws it
//
// "run" loops until DIR/stop exists: acquire, hold (observing owns_lock()), fenced write,
// counter write, release, recording each step in DIR/h-K.log. While it holds the lock,
// DIR/hold-K contains "PID TOKEN SESSION_ID" so the harness can aim faults at the holder.
// SIGUSR1 asks it to raise(SIGSTOP) inside its next write window (after the last owns_lock()
// check, before the fenced write), where a pause does the most damage; so do
// --self-stop-prob (each grant with that probability) and --self-stop-once FILE (the first
// process to reach a write window and create FILE).
//
// --mode leader: the same loop with a sqlock::leader_election (unique_key, always renewed)
// instead of a mutex: campaign (try_campaign_for) is the acquire, the term is the token,
// is_leader() is what "own"/"told" record, resign() is the release. After `told` it waits (up
// to a TTL) for the term's stop_token() to be requested and records `stopreq` when it is.
//
// --mode semaphore: a sqlock::semaphore with --permits N permits instead of a mutex; the grant
// records the permit number, and there is no fenced write or counter write (both assume one
// holder at a time). --mode rw: a sqlock::shared_mutex with --permits reader permits; each
// grant is exclusive (a writer) with probability --writer-share percent, else shared; the grant
// records the role, and only writers make the fenced write and the counter write.
//
// --mode quorum: a sqlock::quorum_mutex over three members, lock tables of their own on --url's
// server (prefixes tq0_, tq1_, tq2_; migrated by each worker, which is idempotent), with the
// same loop, fenced write and counter write as lock mode. With --members URL,URL,URL the members
// are those databases (separate servers, migrated by the harness), opened by URL so that a
// member that is down when the worker starts only counts as not answering.
// --control quorum-minority (negative control, quorum mode): the worker locks ONE member alone
// (member slot % 3, a plain unique_key mutex), i.e. a grant on a minority whose token is that
// member's own; the checker must catch the overlaps and token disorder that follow.
#include "history.hpp"
#include "relay_pairs.hpp" // tests/support

#include <arpa/inet.h>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <iostream>
#include <map>
#include <netinet/in.h>
#include <poll.h>
#include <random>
#include <sqlock/sqlock.hpp>
#include <string>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

std::atomic<bool> g_stop_requested{false};

extern "C" void on_usr1(int) {
    g_stop_requested.store(true);
}

struct options {
    std::string url, name, dir, control = "none", renew = "mix", mode = "lock";
    sqlock::strategy strategy = sqlock::strategy::unique_key;
    std::int64_t ttl_ms = 1500, hold_min_pct = 1, hold_max_pct = 80, poll_ms = 5;
    std::int64_t wait_factor = 10;
    std::int64_t permits = 2;       ///< semaphore permits; rw mode: reader permits
    std::int64_t writer_share = 33; ///< rw mode: percent of grants taken exclusively
    int slot = 0;
    unsigned seed = 0;
    double self_stop_prob = 0;
    std::string self_stop_once;       ///< stop in the write window if this file can be created
    std::vector<std::string> members; ///< quorum mode: the member URLs (empty: tables on --url)
};

/// A file descriptor closed on scope exit.
struct fd_guard {
    int fd;
    ~fd_guard() {
        if (fd >= 0)
            ::close(fd);
    }
};

/// Holds flock(LOCK_EX) on `path` for its lifetime; the kernel drops it if we are killed.
class file_lock {
public:
    explicit file_lock(const std::string& path)
        : m_fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
        if (m_fd < 0 || ::flock(m_fd, LOCK_EX) != 0)
            throw std::runtime_error("flock " + path + ": " + std::strerror(errno));
    }
    ~file_lock() { ::close(m_fd); }
    file_lock(const file_lock&) = delete;
    file_lock& operator=(const file_lock&) = delete;

private:
    int m_fd;
};

std::int64_t read_number(const std::string& path) {
    fd_guard f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (f.fd < 0)
        return 0;
    char buf[32] = {};
    const auto n = ::pread(f.fd, buf, sizeof buf - 1, 0);
    return n > 0 ? std::strtoll(buf, nullptr, 10) : 0;
}

/// Fixed width, so a write never leaves a longer old value's tail behind.
void write_number(const std::string& path, std::int64_t value) {
    fd_guard f{::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644)};
    char buf[32];
    const int len = std::snprintf(buf, sizeof buf, "%020lld\n", static_cast<long long>(value));
    if (f.fd < 0 || ::pwrite(f.fd, buf, static_cast<std::size_t>(len), 0) != len)
        throw std::runtime_error("write " + path + ": " + std::strerror(errno));
}

void append_line(const std::string& path, const std::string& line) {
    fd_guard f{::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)};
    if (f.fd < 0 || ::write(f.fd, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
        throw std::runtime_error("append " + path + ": " + std::strerror(errno));
}

/// The fenced resource: remembers the highest token it accepted and refuses lower ones,
/// atomically with the write (flock). With ignore_tokens (a negative control) it accepts
/// everything. Returns {accepted, highest before}.
std::pair<bool, std::int64_t> fenced_write(const std::string& dir, std::int64_t token,
                                           bool ignore_tokens) {
    file_lock lock(dir + "/fence.lock");
    const std::int64_t highest = read_number(dir + "/fence.max");
    if (!ignore_tokens && token <= highest)
        return {false, highest};
    // The maximum first, then the log: a kill between the two can only leave out a log line,
    // never let a smaller token be accepted after a logged larger one.
    write_number(dir + "/fence.max", std::max(highest, token));
    append_line(dir + "/fence.log", std::to_string(torture::monotonic_ns()) + " " +
                                        std::to_string(::getpid()) + " " + std::to_string(token) +
                                        "\n");
    return {true, highest};
}

/// skip-lock control: an increasing fake token, so the checks have grants to compare.
std::int64_t next_ticket(const std::string& dir) {
    file_lock lock(dir + "/ticket.lock");
    const std::int64_t t = read_number(dir + "/ticket") + 1;
    write_number(dir + "/ticket", t);
    return t;
}

/// True for the one process that creates `path` first (false for all when path is empty).
bool claim_once(const std::string& path) {
    if (path.empty())
        return false;
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return false;
    ::close(fd);
    return true;
}

/// What a worker contends with in lock, semaphore and rw mode: one interface over
/// sqlock::mutex, sqlock::semaphore and sqlock::shared_mutex. `writer` only matters in rw mode.
class contender {
public:
    virtual ~contender() = default;
    virtual bool try_lock_for(std::chrono::milliseconds wait, bool writer) = 0;
    virtual std::int64_t token() const = 0;
    /// Third grant argument: the permit (semaphore), the role (rw); empty for a mutex.
    virtual std::string grant_detail(bool writer) const = 0;
    virtual std::int64_t session() const = 0;
    virtual bool owns(bool writer) const = 0;
    virtual void unlock(bool writer) = 0;
    virtual sqlock::loss_reason last_loss() const = 0;
    virtual std::string last_error() const = 0;
};

class mutex_contender final : public contender {
public:
    mutex_contender(sqlock::database db, const std::string& name, sqlock::mutex_options mo)
        : m(std::move(db), name, std::move(mo)) {}
    bool try_lock_for(std::chrono::milliseconds wait, bool) override {
        return m.try_lock_for(wait);
    }
    std::int64_t token() const override { return m.token(); }
    std::string grant_detail(bool) const override { return {}; }
    std::int64_t session() const override { return m.server_session_id(); }
    bool owns(bool) const override { return m.owns_lock(); }
    void unlock(bool) override { m.unlock(); }
    sqlock::loss_reason last_loss() const override { return m.last_loss(); }
    std::string last_error() const override { return m.last_error(); }

private:
    sqlock::mutex m;
};

class semaphore_contender final : public contender {
public:
    semaphore_contender(sqlock::database db, const std::string& name, std::int64_t permits,
                        sqlock::mutex_options mo)
        : s(std::move(db), name, permits, std::move(mo)) {}
    bool try_lock_for(std::chrono::milliseconds wait, bool) override {
        return s.try_acquire_for(wait);
    }
    std::int64_t token() const override { return s.token(); }
    std::string grant_detail(bool) const override { return std::to_string(s.permit()); }
    std::int64_t session() const override { return 0; }
    bool owns(bool) const override { return s.owns_lock(); }
    void unlock(bool) override { s.release(); }
    sqlock::loss_reason last_loss() const override { return s.last_loss(); }
    std::string last_error() const override { return s.last_error(); }

private:
    sqlock::semaphore s;
};

class rw_contender final : public contender {
public:
    rw_contender(sqlock::database db, const std::string& name, std::int64_t max_readers,
                 sqlock::mutex_options mo)
        : m(std::move(db), name, std::move(mo), max_readers) {}
    bool try_lock_for(std::chrono::milliseconds wait, bool writer) override {
        return writer ? m.try_lock_for(wait) : m.try_lock_shared_for(wait);
    }
    std::int64_t token() const override { return m.token(); }
    std::string grant_detail(bool writer) const override { return writer ? "writer" : "reader"; }
    std::int64_t session() const override { return 0; }
    bool owns(bool writer) const override { return writer ? m.owns_lock() : m.owns_shared(); }
    void unlock(bool writer) override {
        if (writer)
            m.unlock();
        else
            m.unlock_shared();
    }
    sqlock::loss_reason last_loss() const override { return m.last_loss(); }
    std::string last_error() const override { return m.last_error(); }

private:
    sqlock::shared_mutex m;
};

class quorum_contender final : public contender {
public:
    quorum_contender(std::vector<sqlock::database> members, const std::string& name,
                     sqlock::quorum_options qo)
        : q(std::move(members), name, std::move(qo)) {}
    quorum_contender(const std::vector<std::string>& member_urls, const std::string& name,
                     sqlock::quorum_options qo)
        : q(member_urls, name, std::move(qo)) {}
    bool try_lock_for(std::chrono::milliseconds wait, bool) override {
        return q.try_lock_for(wait);
    }
    std::int64_t token() const override { return q.token(); }
    std::string grant_detail(bool) const override { return {}; }
    std::int64_t session() const override { return 0; }
    bool owns(bool) const override { return q.owns_lock(); }
    void unlock(bool) override { q.unlock(); }
    sqlock::loss_reason last_loss() const override { return q.last_loss(); }
    std::string last_error() const override { return {}; }

private:
    sqlock::quorum_mutex q;
};

/// The three members of a quorum-mode worker on `url`'s server, migrated.
std::vector<sqlock::database> quorum_members(const std::string& url) {
    std::vector<sqlock::database> members;
    for (int i = 0; i < 3; ++i) {
        sqlock::connect_options co;
        co.table_prefix = "tq" + std::to_string(i) + "_";
        members.push_back(sqlock::connect(url, co));
        members.back().migrate();
    }
    return members;
}

/// The quorum-minority control's one member: member slot % 3 (a database of --members, or
/// the slot's member table on --url's server).
sqlock::database minority_member(const options& o) {
    const std::size_t m = static_cast<std::size_t>(o.slot) % 3;
    if (!o.members.empty())
        return sqlock::connect(o.members.at(m));
    sqlock::connect_options co;
    co.table_prefix = "tq" + std::to_string(m) + "_";
    auto db = sqlock::connect(o.url, co);
    db.migrate();
    return db;
}

std::vector<std::string> split_commas(const std::string& list) {
    std::vector<std::string> out;
    std::size_t from = 0;
    for (;;) {
        const auto comma = list.find(',', from);
        out.push_back(list.substr(from, comma - from));
        if (comma == std::string::npos)
            return out;
        from = comma + 1;
    }
}

bool stop_file_exists(const options& o) {
    return ::access((o.dir + "/stop").c_str(), F_OK) == 0;
}

int run(const options& o) {
    const std::string slot = (o.slot < 10 ? "0" : "") + std::to_string(o.slot);
    torture::writer history(o.dir + "/h-" + slot + ".log");
    const std::string marker = o.dir + "/hold-" + slot;
    const std::int64_t pid = ::getpid();
    auto rec = [&](torture::kind k, std::int64_t token, std::vector<std::string> args = {},
                   std::int64_t t = 0) {
        history.write({t ? t : torture::monotonic_ns(), pid, k, token, std::move(args)});
    };
    rec(torture::kind::start, 0, {std::to_string(o.slot), o.control});

    std::mt19937_64 rng(o.seed ^ (static_cast<std::uint64_t>(pid) << 20));
    auto uniform = [&](std::int64_t lo, std::int64_t hi) {
        return std::uniform_int_distribution<std::int64_t>(lo, std::max(lo, hi))(rng);
    };
    const bool skip_lock = o.control == "skip-lock";
    const bool ignore_tokens = o.control == "ignore-tokens";
    const bool minority = o.control == "quorum-minority";
    // Members given by URL: the quorum_mutex opens them itself (below), each on its own thread,
    // so a member that is down now does not keep this worker from starting.
    const bool member_urls = o.mode == "quorum" && !o.members.empty() && !minority;

    // Connect with retries: a respawned worker may start while the server restarts.
    std::optional<sqlock::database> db;
    std::vector<sqlock::database> members; // quorum mode, members on --url's server
    while (!skip_lock && !member_urls && !db) {
        try {
            if (minority)
                db = minority_member(o);
            else if (o.mode == "quorum")
                members = quorum_members(o.url);
            if (!db)
                db = sqlock::connect(o.url);
        } catch (const sqlock::error& e) {
            rec(torture::kind::error, 0, {std::string("connect:") + e.what()});
            if (stop_file_exists(o))
                return 0;
            std::this_thread::sleep_for(std::chrono::milliseconds(100)); // retry backoff
        }
    }
    auto make = [&](bool renew) -> std::unique_ptr<contender> {
        if (skip_lock)
            return nullptr;
        sqlock::mutex_options mo;
        mo.strategy = o.strategy;
        mo.ttl = std::chrono::milliseconds(o.ttl_ms);
        mo.renew = renew;
        mo.on_lost = [&history, pid](const sqlock::lock_lost_event& e) {
            history.write({torture::monotonic_ns(),
                           pid,
                           torture::kind::lost_cb,
                           e.token,
                           {std::string(sqlock::to_string(e.reason))}});
        };
        if (o.mode == "quorum" && !minority) {
            sqlock::quorum_options qo;
            qo.ttl = mo.ttl;
            qo.renew = renew;
            qo.on_lost = mo.on_lost;
            qo.member_timeout = std::min(std::chrono::milliseconds(2000), mo.ttl / 4);
            if (member_urls)
                return std::make_unique<quorum_contender>(o.members, o.name, qo);
            return std::make_unique<quorum_contender>(members, o.name, qo);
        }
        if (o.mode == "semaphore")
            return std::make_unique<semaphore_contender>(*db, o.name, o.permits, mo);
        if (o.mode == "rw")
            return std::make_unique<rw_contender>(*db, o.name, o.permits, mo);
        return std::make_unique<mutex_contender>(*db, o.name, mo);
    };
    const bool leader_mode = o.mode == "leader";
    const auto renewing = leader_mode ? nullptr : make(true);
    const auto plain = leader_mode ? nullptr : make(false);
    std::unique_ptr<sqlock::leader_election> elector;
    if (leader_mode && !skip_lock) {
        sqlock::leader_options lo;
        lo.ttl = std::chrono::milliseconds(o.ttl_ms);
        lo.on_lost = [&history, pid](const sqlock::lock_lost_event& e) {
            history.write({torture::monotonic_ns(),
                           pid,
                           torture::kind::lost_cb,
                           e.token,
                           {std::string(sqlock::to_string(e.reason))}});
        };
        elector = std::make_unique<sqlock::leader_election>(*db, o.name, lo);
    }
    const auto wait = std::chrono::milliseconds(o.ttl_ms * o.wait_factor);

    while (!stop_file_exists(o)) {
        const bool renew =
            leader_mode || o.renew == "on" || (o.renew == "mix" && uniform(0, 1) == 1);
        contender* m = renew ? renewing.get() : plain.get();
        // rw mode: this grant is exclusive (a writer) or shared (a reader).
        const bool writer = o.mode != "rw" || uniform(0, 99) < o.writer_share;
        // Semaphore holders and rw readers are not alone: no fenced write, no counter write.
        const bool writes = o.mode != "semaphore" && writer;
        std::int64_t hold_ms = uniform(o.ttl_ms * o.hold_min_pct, o.ttl_ms * o.hold_max_pct) / 100;
        if (!renew && !skip_lock) // without renewal a hold past the lease would be lost
            hold_ms = std::min(hold_ms, o.ttl_ms * 8 / 10);

        rec(torture::kind::acquire, 0);
        std::int64_t token = 0;
        std::string detail; // the permit or the role, recorded with the grant
        try {
            if (skip_lock) {
                token = next_ticket(o.dir);
            } else if (elector) {
                const auto term = elector->try_campaign_for(wait);
                if (!term) {
                    rec(torture::kind::timeout, 0);
                    continue;
                }
                token = *term;
            } else {
                if (!m->try_lock_for(wait, writer)) {
                    rec(torture::kind::timeout, 0);
                    continue;
                }
                token = m->token();
                detail = m->grant_detail(writer);
            }
        } catch (const std::exception& e) {
            rec(torture::kind::error, 0, {std::string("lock:") + e.what()});
            std::this_thread::sleep_for(std::chrono::milliseconds(20)); // retry backoff
            continue;
        }
        const std::int64_t session = skip_lock || elector ? 0 : m->session();
        std::vector<std::string> grant_args{renew ? "1" : "0", std::to_string(session)};
        if (!detail.empty())
            grant_args.push_back(detail);
        rec(torture::kind::grant, token, std::move(grant_args));
        auto owns = [&] {
            return skip_lock || (elector ? elector->is_leader() : m->owns(writer));
        };
        const auto term_stop = elector ? elector->stop_token() : std::stop_token{};
        try {
            const std::string hold_line = std::to_string(pid) + " " + std::to_string(token) + " " +
                                          std::to_string(session) + "\n";
            ::unlink(marker.c_str());
            append_line(marker, hold_line);
            const std::int64_t value = read_number(o.dir + "/counter");
            rec(torture::kind::read, token, {std::to_string(value)});

            // Hold, watching the lease. The clock is read BEFORE owns_lock(): a true answer
            // then vouches for that instant.
            bool lost = false;
            const auto hold_end =
                std::chrono::steady_clock::now() + std::chrono::milliseconds(hold_ms);
            for (;;) {
                const auto t = torture::monotonic_ns();
                if (!owns()) {
                    rec(torture::kind::told, token, {}, t);
                    lost = true;
                    if (elector) { // the term's stop must follow (at the latest a TTL later)
                        const auto give_up =
                            std::chrono::steady_clock::now() + std::chrono::milliseconds(o.ttl_ms);
                        while (!term_stop.stop_requested() &&
                               std::chrono::steady_clock::now() < give_up)
                            std::this_thread::sleep_for(std::chrono::milliseconds(1));
                        if (term_stop.stop_requested())
                            rec(torture::kind::stopreq, token);
                    }
                    break;
                }
                rec(torture::kind::own, token, {}, t);
                if (std::chrono::steady_clock::now() >= hold_end)
                    break; // this observation was the final check
                std::this_thread::sleep_for(std::chrono::milliseconds(o.poll_ms));
            }
            if (!lost && !writes) {
                // Not alone (semaphore, rw reader): the window only, for self-stops.
                if (g_stop_requested.exchange(false) ||
                    std::uniform_real_distribution<double>(0, 1)(rng) < o.self_stop_prob) {
                    rec(torture::kind::selfstop, token);
                    std::raise(SIGSTOP);
                    rec(torture::kind::resumed, token);
                }
            } else if (!lost) {
                // The write window: no owns_lock() check from here on; fencing protects it.
                std::this_thread::sleep_for(std::chrono::microseconds(uniform(0, 2000)));
                if (g_stop_requested.exchange(false) ||
                    std::uniform_real_distribution<double>(0, 1)(rng) < o.self_stop_prob ||
                    claim_once(o.self_stop_once)) {
                    rec(torture::kind::selfstop, token);
                    std::raise(SIGSTOP);
                    rec(torture::kind::resumed, token);
                }
                const auto [accepted, highest] = fenced_write(o.dir, token, ignore_tokens);
                rec(torture::kind::fence, token,
                    {accepted ? "accepted" : "refused", std::to_string(highest)});
                if (accepted) {
                    rec(torture::kind::cw, token, {std::to_string(value + 1)});
                    write_number(o.dir + "/counter", value + 1);
                    rec(torture::kind::incr, token, {std::to_string(value + 1)});
                }
            }
        } catch (const std::exception& e) {
            rec(torture::kind::error, token, {std::string("hold:") + e.what()});
        }
        ::unlink(marker.c_str());
        std::string last_loss = "none", failed = "0";
        if (elector) {
            const std::string error_before = elector->last_error();
            const bool was_lost = term_stop.stop_requested(); // before resign() requests it
            elector->resign();
            // Lost during the term (told), or found lost by resign() itself.
            last_loss = was_lost ? "lost" : std::string(sqlock::to_string(elector->last_loss()));
            failed = elector->last_error() != error_before ? "1" : "0";
        } else if (!skip_lock) {
            // last_error() keeps the last failure until the next one: only a change is news.
            const std::string error_before = m->last_error();
            m->unlock(writer);
            last_loss = std::string(sqlock::to_string(m->last_loss()));
            failed = m->last_error() != error_before ? "1" : "0";
        }
        rec(torture::kind::release, token, {last_loss, failed});
        if (failed == "1")
            rec(torture::kind::error, token,
                {"unlock:" + (elector ? elector->last_error() : m->last_error())});
    }
    return 0;
}

// ---------------------------------------------------------------------------- relay
// One client slot's way to one quorum member (run.sh --backend members): a partition of that
// client from that member is this relay frozen. Frozen, it reads, relays and accepts nothing,
// and closes nothing (no FIN, no RST): requests and replies wait in the kernel's buffers and
// new connections get no answer, as behind a firewall that drops packets; thawed, what waited
// goes through (TCP's retransmission after a partition heals). A member server that is down
// makes the relay close the client's connection (as the server's own close would).

std::atomic<bool> g_frozen{false};
extern "C" void on_freeze(int) {
    g_frozen.store(true);
}
extern "C" void on_thaw(int) {
    g_frozen.store(false);
}

int relay(int target_port, const std::string& port_file) {
    // The harness may die without its cleanup (kill -9): the relay must not outlive it.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::signal(SIGPIPE, SIG_IGN); // a client gone mid-write is a closed pair, not our death
    // SIGUSR1/SIGUSR2 are blocked except inside ppoll(), which they interrupt: a signal that
    // comes between a look at g_frozen and the wait cannot be missed.
    struct sigaction sa {};
    sa.sa_handler = on_freeze;
    ::sigaction(SIGUSR1, &sa, nullptr);
    sa.sa_handler = on_thaw;
    ::sigaction(SIGUSR2, &sa, nullptr);
    sigset_t blocked, waiting;
    sigemptyset(&blocked);
    sigaddset(&blocked, SIGUSR1);
    sigaddset(&blocked, SIGUSR2);
    ::sigprocmask(SIG_BLOCK, &blocked, &waiting);
    sigdelset(&waiting, SIGUSR1);
    sigdelset(&waiting, SIGUSR2);

    int port = 0;
    const int listener = test::relay::listen_on_loopback(port, "relay");
    // Written whole, then renamed: the harness reads the port once the file exists.
    append_line(port_file + ".tmp", std::to_string(port) + "\n");
    if (::rename((port_file + ".tmp").c_str(), port_file.c_str()) != 0)
        throw std::runtime_error("relay: rename " + port_file + ": " + std::strerror(errno));

    test::relay::pairs pairs(listener, target_port);
    for (;;) {
        // Frozen: nothing is polled, so nothing is read, relayed or accepted until a signal.
        std::vector<pollfd> fds;
        if (!g_frozen.load())
            fds = pairs.poll_set();
        if (::ppoll(fds.data(), fds.size(), nullptr, &waiting) <= 0)
            continue; // a signal: look at g_frozen again
        // A member that is down refuses the connection: so is the client's, closed.
        pairs.serve(fds, false);
    }
}

int note(int argc, char** argv) {
    const auto k = torture::parse_kind(argv[3]);
    if (!k) {
        std::cerr << "sqlock_torture_worker note: unknown kind " << argv[3] << "\n";
        return 2;
    }
    torture::event e{torture::monotonic_ns(), 0, *k, 0, {}};
    for (int i = 4; i < argc; ++i)
        e.args.emplace_back(argv[i]);
    torture::writer(argv[2]).write(e);
    return 0;
}

int usage() {
    std::cerr << "usage: sqlock_torture_worker run --url URL --name NAME --strategy S "
                 "--ttl-ms T --dir DIR --slot K [options]\n"
                 "       sqlock_torture_worker note FILE KIND [ARG...]\n"
                 "       sqlock_torture_worker relay --to PORT --port-file FILE\n";
    return 2;
}

} // namespace

int main(int argc, char** argv) {
    if (argc >= 4 && std::string(argv[1]) == "note")
        return note(argc, argv);
    if (argc == 6 && std::string(argv[1]) == "relay" && std::string(argv[2]) == "--to" &&
        std::string(argv[4]) == "--port-file") {
        try {
            return relay(std::stoi(argv[3]), argv[5]);
        } catch (const std::exception& e) {
            std::cerr << "sqlock_torture_worker: " << e.what() << "\n";
            return 1;
        }
    }
    if (argc < 2 || std::string(argv[1]) != "run" || argc % 2 != 0)
        return usage();
    options o;
    try {
        std::map<std::string, std::string> kv;
        for (int i = 2; i + 1 < argc; i += 2)
            kv[argv[i]] = argv[i + 1];
        auto take = [&](const char* key, auto& out) {
            const auto it = kv.find(key);
            if (it == kv.end())
                return;
            if constexpr (std::is_same_v<std::decay_t<decltype(out)>, std::string>)
                out = it->second;
            else if constexpr (std::is_same_v<std::decay_t<decltype(out)>, double>)
                out = std::stod(it->second);
            else
                out = static_cast<std::decay_t<decltype(out)>>(std::stoll(it->second));
            kv.erase(it);
        };
        std::string strategy = "unique_key";
        take("--url", o.url);
        take("--name", o.name);
        take("--dir", o.dir);
        take("--control", o.control);
        take("--renew", o.renew);
        take("--strategy", strategy);
        take("--ttl-ms", o.ttl_ms);
        take("--hold-min-pct", o.hold_min_pct);
        take("--hold-max-pct", o.hold_max_pct);
        take("--poll-ms", o.poll_ms);
        take("--wait-factor", o.wait_factor);
        take("--slot", o.slot);
        take("--seed", o.seed);
        take("--self-stop-prob", o.self_stop_prob);
        take("--self-stop-once", o.self_stop_once);
        take("--mode", o.mode);
        take("--permits", o.permits);
        take("--writer-share", o.writer_share);
        std::string members;
        take("--members", members);
        if (!members.empty())
            o.members = split_commas(members);
        if (!kv.empty()) {
            std::cerr << "sqlock_torture_worker: unknown option " << kv.begin()->first << "\n";
            return 2;
        }
        o.strategy = sqlock::parse_strategy(strategy);
        if (o.mode != "lock" && o.mode != "leader" && o.mode != "semaphore" && o.mode != "rw" &&
            o.mode != "quorum") {
            std::cerr
                << "sqlock_torture_worker: --mode must be lock, leader, semaphore, rw or quorum\n";
            return 2;
        }
        if (!o.members.empty() && (o.mode != "quorum" || o.members.size() != 3)) {
            std::cerr << "sqlock_torture_worker: --members wants three URLs, in quorum mode\n";
            return 2;
        }
        if (o.control == "quorum-minority" && o.mode != "quorum") {
            std::cerr << "sqlock_torture_worker: --control quorum-minority is quorum mode's\n";
            return 2;
        }
        if ((o.url.empty() && o.members.empty() && o.control != "skip-lock") || o.name.empty() ||
            o.dir.empty())
            return usage();
    } catch (const std::exception& e) {
        std::cerr << "sqlock_torture_worker: bad option: " << e.what() << "\n";
        return 2;
    }
    std::signal(SIGUSR1, on_usr1);
    try {
        return run(o);
    } catch (const std::exception& e) {
        std::cerr << "sqlock_torture_worker: " << e.what() << "\n";
        return 1;
    }
}
