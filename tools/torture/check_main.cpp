// check_main.cpp: sqlock_torture_check, runs the checker on a run directory.
//
//   sqlock_torture_check DIR TTL_MS MAX_HOLD_MS LIVENESS_BOUND_MS MODE
//                        [--resume-bound MS] [--lock-dies-with-server] [--leader]
//                        [--semaphore PERMITS] [--rw]
//
// MODE is "none" (no-fault: any loss signal is a false loss) or "fault". The options apply to
// failover faults (checker.hpp, check_params). Reads DIR/h-*.log
// (workers), DIR/harness.log, DIR/fence.log and DIR/counter; writes every violation to
// DIR/report.txt and prints one line of key=value fields. Exit 0 pass, 1 fail, 2 usage or
// unreadable input.
#include "checker.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

namespace fs = std::filesystem;

namespace {

/// Reads a history file; counts lines that do not parse (a torn last line cannot happen with
/// O_APPEND single writes, so any bad line is reported).
std::vector<torture::event> read_history(const fs::path& path, std::int64_t& bad_lines) {
    std::vector<torture::event> events;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty())
            continue;
        if (auto e = torture::parse(line))
            events.push_back(std::move(*e));
        else
            ++bad_lines;
    }
    return events;
}

} // namespace

int main(int argc, char** argv) {
    const auto usage = [] {
        std::cerr << "usage: sqlock_torture_check DIR TTL_MS MAX_HOLD_MS LIVENESS_BOUND_MS "
                     "none|fault [--resume-bound MS] [--lock-dies-with-server] [--leader] "
                     "[--semaphore PERMITS] [--rw]\n";
        return 2;
    };
    if (argc < 6)
        return usage();
    try {
        const fs::path dir = argv[1];
        torture::check_params params;
        params.ttl_ns = std::stoll(argv[2]) * 1'000'000;
        params.max_hold_ns = std::stoll(argv[3]) * 1'000'000;
        params.liveness_bound_ns = std::stoll(argv[4]) * 1'000'000;
        params.no_fault = std::string(argv[5]) == "none";
        for (int i = 6; i < argc; ++i) {
            const std::string opt = argv[i];
            if (opt == "--resume-bound" && i + 1 < argc)
                params.resume_bound_ns = std::stoll(argv[++i]) * 1'000'000;
            else if (opt == "--lock-dies-with-server")
                params.lock_dies_with_server = true;
            else if (opt == "--leader")
                params.leader = true;
            else if (opt == "--semaphore" && i + 1 < argc)
                params.permits = std::stoll(argv[++i]);
            else if (opt == "--rw")
                params.rw = true;
            else
                return usage();
        }

        torture::check_input input;
        std::int64_t bad_lines = 0;
        std::vector<fs::path> files;
        for (const auto& entry : fs::directory_iterator(dir)) {
            const auto name = entry.path().filename().string();
            if (name.starts_with("h-") && name.ends_with(".log"))
                files.push_back(entry.path());
        }
        std::sort(files.begin(), files.end());
        for (const auto& f : files)
            input.workers.push_back(read_history(f, bad_lines));
        input.harness = read_history(dir / "harness.log", bad_lines);
        {
            std::ifstream in(dir / "fence.log");
            std::string line;
            while (std::getline(in, line)) {
                if (auto f = torture::parse_fence_line(line))
                    input.fence_log.push_back(*f);
                else if (!line.empty())
                    ++bad_lines;
            }
        }
        {
            std::ifstream in(dir / "counter");
            std::int64_t value = 0;
            if (in >> value)
                input.counter_final = value;
        }

        const auto r = torture::check(input, params);
        std::ofstream report(dir / "report.txt");
        for (const auto& v : r.violations)
            report << v.rule << ": " << v.message << "\n";
        if (params.no_fault && r.false_losses > 0)
            report << "false losses: " << r.false_losses
                   << " grants got a loss signal with no fault injected\n";

        std::string faults;
        for (const auto& [nemesis, count] : r.faults)
            faults += (faults.empty() ? "" : ",") + nemesis + ":" + std::to_string(count);
        std::map<std::string, int> per_rule;
        for (const auto& v : r.violations)
            ++per_rule[v.rule];
        std::string rules;
        for (const auto& [rule, count] : per_rule)
            rules += (rules.empty() ? "(" : ",") + rule + ":" + std::to_string(count);
        if (!rules.empty())
            rules += ")";
        std::cout << "grants=" << r.grants << " faults=" << (faults.empty() ? "-" : faults)
                  << " losses=" << r.losses << " false_losses="
                  << (params.no_fault ? std::to_string(r.false_losses) : std::string("-"))
                  << " violations=" << r.violations.size() << rules
                  << " fence_refused=" << r.fence_refused << " pauses_checked=" << r.pauses_checked
                  << " liveness_windows=" << r.liveness_windows_checked
                  << " counter=" << (r.counter_checked ? "checked" : "skipped")
                  << " timeouts=" << r.timeouts << " errors=" << r.errors
                  << " bad_lines=" << bad_lines;
        if (params.permits > 0)
            std::cout << " max_held=" << r.max_concurrent;
        if (params.rw)
            std::cout << " writers=" << r.writers << " max_readers_held=" << r.max_concurrent;
        if (!r.resume_ns.empty()) {
            std::string resume;
            for (const auto ns : r.resume_ns)
                resume += (resume.empty() ? "" : ",") +
                          (ns < 0 ? std::string("none") : std::to_string(ns / 1'000'000));
            std::cout << " resume_ms=" << resume << " failover_held=" << r.failover_held
                      << " failover_told=" << r.failover_told;
        }
        std::cout << "\n";
        return r.passed() && bad_lines == 0 ? 0 : 1;
    } catch (const std::exception& e) {
        std::cerr << "sqlock_torture_check: " << e.what() << "\n";
        return 2;
    }
}
