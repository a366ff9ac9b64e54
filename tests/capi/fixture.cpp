#include "fixture.hpp"

#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace capi_test {

namespace {

std::string url_from(const std::string& backend, const char* var) {
    const char* url = std::getenv(var);
    if (!url || !*url)
        throw std::runtime_error("backend " + backend + " requested but " + var +
                                 " is not set: start the servers with tools/testdb.sh "
                                 "(a missing backend is a failure, not a skip)");
    return url;
}

target load() {
    target t;
    const char* backend = std::getenv("SQLOCK_TEST_BACKEND");
    t.backend = backend ? backend : "sqlite";
    const char* scratch = std::getenv("SQLOCK_TEST_SCRATCH");
    t.scratch =
        std::string(scratch ? scratch : "/tmp/sqlock-capi-test") + "-" + std::to_string(getpid());
    std::filesystem::remove_all(t.scratch);
    std::filesystem::create_directories(t.scratch);
    if (t.backend == "sqlite")
        t.url = "sqlite://" + t.scratch + "/locks.db";
    else if (t.backend == "postgresql")
        t.url = url_from(t.backend, "SQLOCK_TEST_POSTGRES_URL");
    else if (t.backend == "mysql")
        t.url = url_from(t.backend, "SQLOCK_TEST_MYSQL_URL");
    else
        throw std::runtime_error("unknown SQLOCK_TEST_BACKEND " + t.backend);
    const char* strategy = std::getenv("SQLOCK_TEST_STRATEGY");
    t.strategy_name = strategy ? strategy : "unique_key";
    if (t.strategy_name == "unique_key")
        t.strategy = SQLOCK_UNIQUE_KEY;
    else if (t.strategy_name == "select_for_update")
        t.strategy = SQLOCK_SELECT_FOR_UPDATE;
    else if (t.strategy_name == "optimistic_version")
        t.strategy = SQLOCK_OPTIMISTIC_VERSION;
    else
        throw std::runtime_error("unknown SQLOCK_TEST_STRATEGY " + t.strategy_name);
    return t;
}

} // namespace

const target& under_test() {
    static const target t = load();
    return t;
}

bool lease_strategy() {
    return under_test().strategy != SQLOCK_SELECT_FOR_UPDATE;
}

sqlock_db* db() {
    static sqlock_db* shared = [] {
        sqlock_db* d = nullptr;
        sqlock_error* err = nullptr;
        if (sqlock_db_open(&d, under_test().url.c_str(), nullptr, &err) != SQLOCK_OK ||
            sqlock_db_migrate(d, &err) != SQLOCK_OK) {
            const std::string message = sqlock_error_message(err);
            sqlock_error_free(err);
            throw std::runtime_error("cannot open the test database: " + message);
        }
        return d; // kept for the life of the process
    }();
    return shared;
}

sqlock_lock_options opts(std::int64_t ttl_ms) {
    sqlock_lock_options o;
    sqlock_lock_options_init(&o);
    o.strategy = under_test().strategy;
    o.ttl_ms = ttl_ms;
    return o;
}

std::string unique_name(const std::string& base) {
    static std::mt19937_64 rng{std::random_device{}()};
    static std::mutex m;
    std::lock_guard lock(m);
    return "capi-" + base + "-" + std::to_string(rng() % 1'000'000'000);
}

mutex_handle::mutex_handle(const std::string& name, const sqlock_lock_options& o) {
    error_slot err;
    REQUIRE_MESSAGE(sqlock_mutex_open(&m, db(), name.c_str(), &o, err.out()) == SQLOCK_OK,
                    err.message());
}

void signal_probe::on_lost(const sqlock_lost_event* event, void* user) {
    auto& p = *static_cast<signal_probe*>(user);
    std::lock_guard lock(p.m);
    ++p.lost_calls;
    p.lost = *event;
    p.lost_name = event->name;
    p.lost_message = event->message;
    p.lost_at = std::chrono::steady_clock::now();
    p.cv.notify_all();
}

void signal_probe::on_at_risk(const sqlock_at_risk_event* event, void* user) {
    auto& p = *static_cast<signal_probe*>(user);
    std::lock_guard lock(p.m);
    ++p.at_risk_calls;
    if (p.lost_calls == 0 && p.risks.empty() && event->at_risk)
        p.lost_after_risk = true;
    p.risks.push_back(*event);
    p.cv.notify_all();
}

void signal_probe::attach(sqlock_lock_options& o) {
    o.on_lost = &signal_probe::on_lost;
    o.on_at_risk = &signal_probe::on_at_risk;
    o.callback_user = this;
}

bool signal_probe::wait_lost(std::chrono::milliseconds timeout) {
    std::unique_lock lock(m);
    return cv.wait_for(lock, timeout, [&] { return lost_calls > 0; });
}

pid_t spawn(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
            const std::string& stdout_file, const std::string& stderr_file) {
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e)
        env.emplace_back(*e);
    env.insert(env.end(), extra_env.begin(), extra_env.end());
    const pid_t pid = fork();
    if (pid != 0)
        return pid;
    setpgid(0, 0);
    const auto redirect = [](const std::string& path, int fd) {
        if (path.empty())
            return;
        const int out = open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
        if (out >= 0)
            dup2(out, fd);
    };
    redirect(stdout_file, 1);
    redirect(stderr_file, 2);
    std::vector<char*> args, envp;
    for (const auto& a : argv)
        args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    for (const auto& e : env)
        envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    execve(args[0], args.data(), envp.data());
    _exit(127);
}

int wait_exit(pid_t pid) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
    }
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return 128 + WTERMSIG(status);
}

std::string read_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

} // namespace capi_test
