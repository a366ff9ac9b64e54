// sqlock_cli_bench — `sqlock run NAME -- true` against `flock FILE true`, and where the time
// of one `sqlock run` goes.
//
// Every round runs each command once (posix_spawn + waitpid, wall time), in an order that
// rotates from round to round, so the commands are INTERLEAVED and share the machine's noise:
//   true                          the floor: starting any process
//   flock FILE true               what a single host uses today
//   sqlock --version              starting sqlock: exec + loading libsqlock (no database,
//                                 no backend module)
//   sqlock --url URL run NAME -- true        per database (SQLite also with select_for_update)
// and the steps `sqlock run` takes, timed separately (per database):
//   connect   sqlock::connect(url): the first pooled connection (PostgreSQL: TCP + SCRAM)
//   lock+unlock  sqlock::mutex (renew on, as `sqlock run`) lock() + unlock()
//   teardown  dropping the database handle (closes connections, joins background threads)
// timed inside a fresh process each round (this program, --steps URL), like `sqlock run`.
// Round 0 is a warm-up and is not counted. The commands run without LD_LIBRARY_PATH, as an
// installed program would: give --sqlock an installed CLI (cmake --install, or the package).
// See tools/bench/README.md.
#include "bench_common.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <iostream>
#include <spawn.h>
#include <sqlock/sqlock.hpp>
#include <sys/wait.h>

extern char** environ;

namespace {

constexpr const char* usage_text =
    R"(usage: sqlock_cli_bench --sqlock PATH --url URL [--url URL ...] [--runs N]
                        [--flock-file FILE] [--json FILE] [--markdown FILE]

Times `sqlock run NAME -- true` (per database) against `flock FILE true`, `true` and
`sqlock --version`, interleaved over N rounds (default 40, plus a warm-up round), and the
steps of a `sqlock run` (connect, lock + unlock, teardown) inside a fresh process.
The commands run without LD_LIBRARY_PATH: PATH should be an installed sqlock
(`cmake --install BUILD --prefix DIR`, or the package's /usr/bin/sqlock).

Exit status: 0 ok; 1 a command failed; 2 usage.
)";

using bench::usage_error;

struct config {
    std::string sqlock_path;
    std::vector<std::string> urls;
    int runs = 40;
    std::string flock_file = "/tmp/sqlock-cli-bench.flock";
    std::string json_path;
    std::string markdown_path;
};

/// A run that did not exit 0: counted, kept out of the statistics, reported.
struct run_failure : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct item {
    std::string label;   ///< shown in the table (no URL: it carries a password)
    std::string group;   ///< "command" or "step"
    std::string backend; ///< "" for commands that use no database
    std::function<std::vector<double>()> once; ///< one run: its time(s) in ms
    std::vector<std::string> part_names;       ///< steps: the names of the parts returned
    std::vector<std::vector<double>> parts_ms;
    int failures = 0;
    std::string first_failure;
};

double ms_since(std::int64_t t0) {
    return static_cast<double>(bench::now_ns() - t0) / 1e6;
}

/// The environment the timed commands run in: ours without LD_LIBRARY_PATH, so that they load
/// their libraries as an installed program does (a search path in front of the system's costs
/// every command a failed open per library and directory, flock too).
std::vector<char*> installed_environment() {
    std::vector<char*> env;
    for (char** e = environ; *e; ++e)
        if (!std::string_view(*e).starts_with("LD_LIBRARY_PATH="))
            env.push_back(*e);
    env.push_back(nullptr);
    return env;
}

/// Runs argv to completion with environment `env` (ours when null), stdout to `stdout_file`
/// and stderr to a file; throws unless it exits 0. Returns the wall time in ms.
double spawn_and_wait(const std::vector<std::string>& argv, const std::string& stderr_file,
                      const std::string& stdout_file = "/dev/null", char* const* env = nullptr) {
    std::vector<char*> args;
    for (const auto& a : argv)
        args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, stdout_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0600);
    posix_spawn_file_actions_addopen(&actions, 2, stderr_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0600);
    pid_t pid = 0;
    const std::int64_t t0 = bench::now_ns();
    const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), env ? env : environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0)
        throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(rc));
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
    }
    const double elapsed = ms_since(t0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::ifstream f(stderr_file);
        std::stringstream ss;
        ss << f.rdbuf();
        std::string why = WIFSIGNALED(status)
                              ? "killed by signal " + std::to_string(WTERMSIG(status)) +
                                    (WTERMSIG(status) == SIGSEGV ? " (SIGSEGV)" : "")
                              : "exit status " + std::to_string(WEXITSTATUS(status));
        std::string err = ss.str();
        while (!err.empty() && (err.back() == '\n' || err.back() == ' '))
            err.pop_back();
        if (!err.empty())
            why += ": " + err.substr(0, 300);
        throw run_failure(why);
    }
    return elapsed;
}

std::string failures_text(const item& it) {
    if (it.failures == 0)
        return "0";
    return "**" + std::to_string(it.failures) + " of " +
           std::to_string(it.failures + static_cast<int>(it.parts_ms.at(0).size())) + "**";
}

std::string markdown(const std::vector<item>& items, const config& cfg) {
    std::ostringstream o;
    o << "### The CLI: `sqlock run NAME -- true` against `flock FILE true`\n\n"
      << cfg.runs
      << " interleaved rounds (each command once per round, order rotating; a warm-up round "
         "not counted), wall time of posix_spawn + waitpid.\n\n"
      << "| command | median ms | p99 ms | mean ms | min ms | × flock (median) | failed runs |\n"
      << "|---|---:|---:|---:|---:|---:|---|\n";
    double flock_median = 0;
    for (const auto& it : items)
        if (it.label.find("flock FILE") != std::string::npos)
            flock_median = bench::summarise(it.parts_ms.at(0)).median;
    for (const auto& it : items) {
        if (it.group != "command")
            continue;
        const auto s = bench::summarise(it.parts_ms.at(0));
        o << "| " << it.label << " | " << bench::fixed(s.median, 2) << " | "
          << bench::fixed(s.p99, 2) << " | " << bench::fixed(s.mean, 2) << " | "
          << bench::fixed(s.min, 2) << " | "
          << (flock_median > 0 ? bench::ratio_text(s.median / flock_median) : "–") << " | "
          << failures_text(it) << " |\n";
    }
    // Where one `sqlock run` goes: process start (sqlock --version) + the in-process steps +
    // the rest (fork/exec/wait of the command, argument parsing, exit).
    double version_median = 0;
    for (const auto& it : items)
        if (it.label.find("--version") != std::string::npos)
            version_median = bench::summarise(it.parts_ms.at(0)).median;
    o << "\nWhere the time of one `sqlock run … -- true` goes (medians, ms). Process start = "
         "`sqlock --version` (exec, loading its shared libraries, static initialisation); "
         "connect, lock + unlock (a `sqlock::mutex` with renewal on, as `sqlock run` makes) "
         "and teardown (dropping the database handle) are timed inside a fresh process each "
         "round, interleaved with the commands above; rest = run − start − steps: fork/exec/"
         "wait of `true`, and exit. Teardown includes joining sqlock's background threads "
         "(PostgreSQL: the release listener, which may be connecting or in its 200 ms "
         "poll).\n\n"
      << "| database | `sqlock run` | process start (`sqlock --version`) | connect | lock + "
         "unlock | teardown | rest | start + connect share |\n"
      << "|---|---:|---:|---:|---:|---:|---:|---:|\n";
    for (const auto& step : items) {
        if (step.group != "step")
            continue;
        const item* run = nullptr;
        for (const auto& it : items)
            if (it.group == "command" && it.backend == step.backend &&
                it.label.find("select_for_update") == std::string::npos)
                run = &it;
        if (!run)
            continue;
        const double total = bench::summarise(run->parts_ms.at(0)).median;
        const double connect = bench::summarise(step.parts_ms.at(0)).median;
        const double lock = bench::summarise(step.parts_ms.at(1)).median;
        const double teardown = bench::summarise(step.parts_ms.at(2)).median;
        const double rest = total - version_median - connect - lock - teardown;
        o << "| " << step.backend << " | " << bench::fixed(total, 2) << " | "
          << bench::fixed(version_median, 2) << " | " << bench::fixed(connect, 2) << " | "
          << bench::fixed(lock, 2) << " | " << bench::fixed(teardown, 2) << " | "
          << bench::fixed(rest, 2) << " | "
          << bench::fixed(100.0 * (version_median + connect) / total, 0) << "% |\n";
    }
    for (const auto& it : items)
        if (it.failures > 0)
            o << "\nFailed runs of " << it.label << ": " << failures_text(it)
              << ", first: " << it.first_failure << "\n";
    return o.str();
}

std::string json(const std::vector<item>& items, const config& cfg) {
    std::ostringstream o;
    o << "{\"runs\": " << cfg.runs << ", \"results\": [";
    bool first = true;
    for (const auto& it : items) {
        for (std::size_t p = 0; p < it.parts_ms.size(); ++p) {
            const auto s = bench::summarise(it.parts_ms[p]);
            o << (first ? "\n  " : ",\n  ") << "{\"label\": " << bench::json_string(it.label)
              << ", \"group\": " << bench::json_string(it.group)
              << ", \"backend\": " << (it.backend.empty() ? "null" : bench::json_string(it.backend))
              << ", \"part\": "
              << (it.part_names.empty() ? "null" : bench::json_string(it.part_names[p]))
              << ", \"n\": " << s.n << ", \"median_ms\": " << bench::json_number(s.median)
              << ", \"p99_ms\": " << bench::json_number(s.p99)
              << ", \"mean_ms\": " << bench::json_number(s.mean)
              << ", \"min_ms\": " << bench::json_number(s.min)
              << ", \"failed_runs\": " << it.failures << ", \"first_failure\": "
              << (it.first_failure.empty() ? "null" : bench::json_string(it.first_failure)) << "}";
            first = false;
        }
    }
    o << "]}\n";
    return o.str();
}

config parse_args(int argc, char** argv) {
    config cfg;
    bench::for_each_option(argc, argv, usage_text, [&](const std::string& a, const std::string& v) {
        if (a == "--sqlock") {
            cfg.sqlock_path = v;
        } else if (a == "--url") {
            bench::backend_of(v); // a usage_error unless sqlock takes the URL
            cfg.urls.push_back(v);
        } else if (a == "--runs") {
            cfg.runs = std::stoi(v);
        } else if (a == "--flock-file") {
            cfg.flock_file = v;
        } else if (a == "--json") {
            cfg.json_path = v;
        } else if (a == "--markdown") {
            cfg.markdown_path = v;
        } else {
            throw usage_error("unknown option " + a);
        }
    });
    if (cfg.sqlock_path.empty() || cfg.urls.empty())
        throw usage_error("--sqlock and at least one --url are required");
    if (cfg.runs < 1 || cfg.runs > 10'000)
        throw usage_error("--runs must be 1..10000");
    return cfg;
}

int run(const config& cfg) {
    char dir_template[] = "/tmp/sqlock-cli-bench-XXXXXX";
    const char* dir = ::mkdtemp(dir_template);
    if (!dir)
        throw std::runtime_error(std::string("mkdtemp: ") + std::strerror(errno));
    const std::string err_file = std::string(dir) + "/stderr";

    std::vector<item> items;
    const auto command_env = std::make_shared<std::vector<char*>>(installed_environment());
    const auto command = [&](std::string label, std::string backend,
                             std::vector<std::string> argv) {
        items.push_back({std::move(label),
                         "command",
                         std::move(backend),
                         [argv, err_file, command_env] {
                             return std::vector<double>{
                                 spawn_and_wait(argv, err_file, "/dev/null", command_env->data())};
                         },
                         {},
                         {},
                         0,
                         {}});
    };
    command("`true`", "", {"true"});
    command("`flock FILE true`", "", {"flock", cfg.flock_file, "true"});
    command("`sqlock --version`", "", {cfg.sqlock_path, "--version"});
    for (const auto& url : cfg.urls) {
        const std::string b = bench::backend_label(bench::backend_of(url));
        {
            sqlock::database db = sqlock::connect(url);
            db.migrate();
        }
        command("`sqlock run NAME -- true` (" + b + ", unique_key)", b,
                {cfg.sqlock_path, "--url", url, "run", "sqlock-bench:cli", "--", "true"});
        if (bench::backend_of(url) == bench::backend::sqlite)
            command("`sqlock run NAME --strategy select_for_update -- true` (" + b + ")", b,
                    {cfg.sqlock_path, "--url", url, "run", "sqlock-bench:cli-fu", "--strategy",
                     "select_for_update", "--", "true"});
        // The steps run in a fresh process each time (this program with --steps), like
        // `sqlock run`: nothing left over from an earlier round can interfere.
        const std::string out_file = std::string(dir) + "/steps.out";
        items.push_back({"steps of `sqlock run`, timed inside a fresh process (" + b + ")",
                         "step",
                         b,
                         [url, err_file, out_file] {
                             spawn_and_wait({"/proc/self/exe", "--steps", url}, err_file, out_file);
                             std::ifstream f(out_file);
                             std::vector<double> parts(3, 0.0);
                             for (double& v : parts)
                                 if (!(f >> v))
                                     throw std::runtime_error("--steps printed no timings");
                             return parts;
                         },
                         {"connect", "lock+unlock", "teardown"},
                         {},
                         0,
                         {}});
    }
    for (auto& it : items)
        it.parts_ms.resize(it.group == "step" ? 3 : 1);

    const std::size_t n = items.size();
    const std::int64_t t_start = bench::now_ns();
    for (int round = 0; round <= cfg.runs; ++round) {
        for (std::size_t k = 0; k < n; ++k) {
            item& it = items[(k + static_cast<std::size_t>(round)) % n];
            std::vector<double> times;
            try {
                times = it.once();
            } catch (const run_failure& e) {
                if (round == 0)
                    continue;
                if (it.failures++ == 0)
                    it.first_failure = e.what();
                std::cerr << "cli_bench: " << it.label << ": " << e.what() << "\n";
                continue;
            }
            if (round == 0)
                continue;
            for (std::size_t p = 0; p < times.size(); ++p)
                it.parts_ms[p].push_back(times[p]);
        }
    }
    std::cerr << "cli_bench: measured in " << bench::fixed(ms_since(t_start) / 1000.0, 1) << " s\n";
    ::unlink(err_file.c_str());
    ::unlink((std::string(dir) + "/steps.out").c_str());
    ::rmdir(dir);

    const std::string md = markdown(items, cfg);
    std::cout << md;
    if (!cfg.markdown_path.empty())
        bench::write_file(cfg.markdown_path, md);
    if (!cfg.json_path.empty())
        bench::write_file(cfg.json_path, json(items, cfg));
    return 0;
}

} // namespace

/// --steps URL (internal): what `sqlock run` does in-process, timed; prints "connect lock teardown"
/// (ms).
int steps(const std::string& url) {
    std::int64_t t = bench::now_ns();
    std::vector<double> parts;
    std::optional<sqlock::database> db = sqlock::connect(url);
    parts.push_back(ms_since(t));
    t = bench::now_ns();
    {
        sqlock::mutex m(*db, "sqlock-bench:cli-steps", {.renew = true});
        m.lock();
        m.unlock();
        if (!m.last_error().empty())
            throw std::runtime_error(m.last_error());
    }
    parts.push_back(ms_since(t));
    t = bench::now_ns();
    db.reset();
    parts.push_back(ms_since(t));
    std::cout << bench::fixed(parts[0], 4) << " " << bench::fixed(parts[1], 4) << " "
              << bench::fixed(parts[2], 4) << std::endl;
    // Leave without exit handlers: what is timed is done, and the exit of `sqlock run` itself
    // is in the "rest" column (some sqlock versions crashed there: see README).
    std::_Exit(0);
}

int main(int argc, char** argv) {
    if (argc == 3 && std::string_view(argv[1]) == "--steps") {
        try {
            return steps(argv[2]);
        } catch (const std::exception& e) {
            std::cerr << "cli_bench --steps: " << e.what() << "\n";
            return 1;
        }
    }
    return bench::bench_main<config>("sqlock_cli_bench", usage_text, argc, argv, parse_args, run);
}
