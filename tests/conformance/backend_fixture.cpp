#include "backend_fixture.hpp"

#include "database/database_impl.hpp"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <cstdlib>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <signal.h>
#include <sstream>
#include <stdexcept>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace test {

namespace {

backend_under_test load_backend() {
    const char* which = std::getenv("SQLOCK_TEST_BACKEND");
    const std::string name = which ? which : "sqlite";
    backend_under_test b{};
    const char* scratch = std::getenv("SQLOCK_TEST_SCRATCH");
    b.scratch_dir = scratch ? scratch : (std::filesystem::temp_directory_path() / "sqlock-test");
    b.scratch_dir += "-" + std::to_string(getpid());
    std::filesystem::remove_all(b.scratch_dir);
    std::filesystem::create_directories(b.scratch_dir);
    auto url_from = [&](const char* var) {
        const char* url = std::getenv(var);
        if (!url || !*url)
            throw std::runtime_error(std::string("backend ") + name + " requested but " + var +
                                     " is not set: start the servers with "
                                     "`tools/testdb.sh run build/testdb -- ctest ...` "
                                     "(a missing backend is a failure, not a skip)");
        return std::string(url);
    };
    if (name == "sqlite") {
        b.kind = sqlock::backend_kind::sqlite;
        b.url = "sqlite://" + b.scratch_dir + "/locks.db";
    } else if (name == "postgresql") {
        b.kind = sqlock::backend_kind::postgresql;
        b.url = url_from("SQLOCK_TEST_POSTGRES_URL");
    } else if (name == "mysql") {
        b.kind = sqlock::backend_kind::mysql;
        b.url = url_from("SQLOCK_TEST_MYSQL_URL");
    } else {
        throw std::runtime_error("unknown SQLOCK_TEST_BACKEND " + name);
    }
    return b;
}

} // namespace

const backend_under_test& backend() {
    static const backend_under_test b = load_backend();
    return b;
}

sqlock::strategy strategy() {
    static const sqlock::strategy s = [] {
        const char* name = std::getenv("SQLOCK_TEST_STRATEGY");
        return sqlock::parse_strategy(name ? name : "unique_key");
    }();
    return s;
}

sqlock::mutex_options opts(std::chrono::milliseconds ttl) {
    sqlock::mutex_options o;
    o.strategy = strategy();
    o.ttl = ttl;
    return o;
}

sqlock::database& db() {
    static sqlock::database d = [] {
        auto database = sqlock::connect(backend().url);
        database.migrate();
        return database;
    }();
    return d;
}

sqlock::connect_options own_tables(const std::string& base) {
    sqlock::connect_options o;
    o.table_prefix = base + std::to_string(getpid()) + "_";
    return o;
}

sqlock::database fresh_database(const std::string& base) {
    auto database = sqlock::connect(backend().url, own_tables(base));
    database.migrate();
    return database;
}

std::string unique_name(const std::string& base) {
    static std::mt19937_64 rng{std::random_device{}()};
    static std::mutex m;
    std::lock_guard lock(m);
    return base + "-" + std::to_string(rng() % 1'000'000'000);
}

void check_costs_like_a_mutex(const std::function<void()>& take, const std::function<void()>& give,
                              int rounds) {
    const auto& impl = sqlock::detail::impl_of(db());
    const auto sent_by = [&](const std::function<void()>& f) {
        const auto before = impl.statements_sent();
        f();
        return impl.statements_sent() - before;
    };
    // The fewest statements over the rounds: the protocol's cost is sent every round, while a
    // statement another thread sent meanwhile, or a retry after another process took SQLite's
    // one write lock, shows in one round only (seen once under ASan on a loaded host).
    const auto fewest = [&](const std::function<void()>& first, const std::function<void()>& then,
                            std::uint64_t& first_sent, std::uint64_t& then_sent) {
        first_sent = then_sent = std::numeric_limits<std::uint64_t>::max();
        for (int i = 0; i < rounds; ++i) {
            first_sent = std::min<std::uint64_t>(first_sent, sent_by(first));
            then_sent = std::min<std::uint64_t>(then_sent, sent_by(then));
        }
    };
    sqlock::mutex m(db(), unique_name("cost-of-a-mutex"), opts());
    m.lock(); // the first use of a name creates its row, on some backends in a statement of its own
    m.unlock();
    std::uint64_t lock = 0, unlock = 0, take_sent = 0, give_sent = 0;
    fewest([&] { m.lock(); }, [&] { m.unlock(); }, lock, unlock);
    fewest(take, give, take_sent, give_sent);
    CHECK(lock >= 1);
    CHECK(take_sent == lock);
    CHECK(give_sent == unlock);
}

std::optional<sqlock::lock_info> row_of(const std::string& name) {
    for (auto& info : db().list())
        if (info.name == name)
            return info;
    return std::nullopt;
}

void exec_sql(sqlock::database& database, const std::string& sql) {
    auto s = sqlock::detail::impl_of(database).checkout();
    s->execute_script(sql);
}

void kill_session(sqlock::database& database, std::int64_t session_id) {
    REQUIRE(session_id > 0);
    if (database.backend() == sqlock::backend_kind::postgresql)
        exec_sql(database, "SELECT pg_terminate_backend(" + std::to_string(session_id) + ")");
    else
        exec_sql(database, "KILL " + std::to_string(session_id));
}

int server_port() {
    const auto& url = backend().url;
    const auto at = url.rfind('@');
    const auto colon = url.find(':', at);
    const auto slash = url.find('/', colon);
    REQUIRE(colon != std::string::npos);
    return std::stoi(url.substr(colon + 1, slash - colon - 1));
}

std::set<std::string> socket_inodes(pid_t pid) {
    std::set<std::string> out;
    std::error_code ec;
    const auto dir = "/proc/" + std::to_string(pid) + "/fd";
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
        const auto target = std::filesystem::read_symlink(entry.path(), ec).string();
        if (!ec && target.starts_with("socket:[")) // socket:[INODE]
            out.insert(target.substr(8, target.size() - 9));
    }
    return out;
}

std::vector<int> server_client_ports(pid_t pid) {
    const auto inodes = socket_inodes(pid);
    const int port = server_port();
    // By socket inode: the kernel reads these tables out in chunks, and while other tests open
    // and close connections a chunk boundary can list the same socket twice.
    std::map<std::string, int> port_of;
    for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
        std::ifstream in(table);
        std::string line;
        std::getline(in, line); // header
        while (std::getline(in, line)) {
            // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
            std::istringstream fields(line);
            std::string sl, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
            fields >> sl >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
                timeout >> inode;
            const auto remote_port = std::stoi(remote.substr(remote.rfind(':') + 1), nullptr, 16);
            if (remote_port == port && state == "01" && inodes.contains(inode)) // ESTABLISHED
                port_of[inode] = std::stoi(local.substr(local.rfind(':') + 1), nullptr, 16);
        }
    }
    std::vector<int> out;
    for (const auto& [inode, local_port] : port_of)
        out.push_back(local_port);
    return out;
}

std::vector<std::int64_t> server_sessions_of(pid_t pid) {
    std::vector<std::int64_t> ids;
    auto s = sqlock::detail::impl_of(db()).checkout();
    for (const int port : server_client_ports(pid)) {
        const auto p = std::to_string(port);
        const auto r = s->query(
            backend().kind == sqlock::backend_kind::postgresql
                ? "SELECT pid FROM pg_stat_activity WHERE client_port = " + p
                : "SELECT id FROM information_schema.processlist WHERE host LIKE '%:" + p + "'");
        for (const auto& row : r.rows)
            ids.push_back(sqlock::detail::column_int(row.at(0)));
    }
    return ids;
}

void backdate(sqlock::database& database, const std::string& name, std::chrono::seconds by) {
    // Test-only SQL, so names are trusted literals here; the library itself binds everything.
    REQUIRE(name.find('\'') == std::string::npos);
    const auto table = database.table_prefix() + "locks";
    const auto secs = std::to_string(by.count());
    std::string sql;
    switch (database.backend()) {
    case sqlock::backend_kind::postgresql:
        sql = "UPDATE \"" + table + "\" SET expires_at = statement_timestamp() - interval '" +
              secs + " seconds' WHERE name = '" + name + "'";
        break;
    case sqlock::backend_kind::mysql:
        sql = "UPDATE `" + table + "` SET expires_at = UTC_TIMESTAMP(6) - INTERVAL " + secs +
              " SECOND WHERE name = '" + name + "'";
        break;
    case sqlock::backend_kind::sqlite:
        sql =
            "UPDATE \"" + table +
            "\" SET expires_at = CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) - " +
            secs + "000 WHERE name = '" + name + "'";
        break;
    }
    exec_sql(database, sql);
}

pid_t spawn(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
            const std::string& stdout_file, const std::string& stderr_file) {
    std::vector<char*> args;
    for (const auto& a : argv)
        args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    std::vector<std::string> env_storage;
    for (char** e = environ; *e; ++e)
        env_storage.emplace_back(*e);
    for (const auto& e : extra_env)
        env_storage.push_back(e);
    std::vector<char*> env;
    for (auto& e : env_storage)
        env.push_back(e.data());
    env.push_back(nullptr);

    // Returns only once the child has exec'd (or failed to): until then it is a copy of this
    // process, with this process's server connections, which a test counting the child's
    // connections would count (connection_budget, under load: a slow exec). The pipe's write
    // end closes at the exec (O_CLOEXEC), so the read below ends there.
    int exec_pipe[2];
    REQUIRE(pipe2(exec_pipe, O_CLOEXEC) == 0);
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        close(exec_pipe[0]);
        setpgid(0, 0);
        if (!stdout_file.empty()) {
            const int fd = open(stdout_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd >= 0)
                dup2(fd, 1);
        }
        if (!stderr_file.empty()) {
            const int fd = open(stderr_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd >= 0)
                dup2(fd, 2);
        }
        execve(args[0], args.data(), env.data());
        const char failed = 1;
        [[maybe_unused]] const auto n = write(exec_pipe[1], &failed, 1);
        _exit(127);
    }
    setpgid(pid, pid);
    close(exec_pipe[1]);
    char byte = 0;
    while (read(exec_pipe[0], &byte, 1) < 0 && errno == EINTR) {
    }
    close(exec_pipe[0]);
    return pid;
}

int wait_exit(pid_t pid) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            return -1;
    }
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return -1;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

nlohmann::ordered_json parse_json(const std::string& text) {
    using event = nlohmann::ordered_json::parse_event_t;
    std::vector<std::set<std::string>> keys; // of the objects being read, innermost last
    return nlohmann::ordered_json::parse(text, [&](int, event e, nlohmann::ordered_json& parsed) {
        if (e == event::object_start)
            keys.emplace_back();
        else if (e == event::object_end)
            keys.pop_back();
        else if (e == event::key && !keys.back().insert(parsed.get<std::string>()).second)
            throw std::runtime_error("JSON: duplicate key " + parsed.dump());
        return true;
    });
}

std::vector<std::string> keys_of(const nlohmann::ordered_json& object) {
    REQUIRE(object.is_object());
    std::vector<std::string> keys;
    for (auto it = object.begin(); it != object.end(); ++it)
        keys.push_back(it.key());
    return keys;
}

paused_server::paused_server() {
    const char* var = backend().kind == sqlock::backend_kind::postgresql
                          ? "SQLOCK_TEST_POSTGRES_PID"
                          : "SQLOCK_TEST_MYSQL_PID";
    const char* pid = std::getenv(var);
    REQUIRE_MESSAGE(pid != nullptr, var << " is not set: run under tools/testdb.sh");
    m_pids.push_back(static_cast<pid_t>(std::stol(pid)));
    REQUIRE(kill(m_pids.front(), SIGSTOP) == 0);
    for (const auto child : children_of(m_pids.front()))
        if (kill(child, SIGSTOP) == 0)
            m_pids.push_back(child);
}

std::vector<pid_t> children_of(pid_t parent, const std::string& command) {
    std::vector<pid_t> children;
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
        const auto child = std::atoi(entry.path().filename().c_str());
        if (child <= 0)
            continue;
        std::ifstream stat(entry.path() / "stat");
        std::string line;
        std::getline(stat, line);
        const auto close = line.rfind(')');
        if (close == std::string::npos ||
            (!command.empty() && line.find("(" + command + ")") == std::string::npos))
            continue;
        std::istringstream rest(line.substr(close + 2));
        char state = 0;
        long ppid = 0;
        rest >> state >> ppid;
        if (ppid == parent)
            children.push_back(child);
    }
    return children;
}

paused_server::~paused_server() {
    for (const auto p : m_pids)
        kill(p, SIGCONT);
}

int dead_port() {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    socklen_t len = sizeof addr;
    getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    const int port = ntohs(addr.sin_port);
    close(fd);
    return port;
}

} // namespace test
