// sqlock_quorum_bench — what a quorum lock costs over a single-database lock: an uncontended
// quorum_mutex lock() + unlock() on three members against sqlock::mutex lock() + unlock()
// (unique_key) on a member alone; the acquire (lock()) is also timed on its own, as the issue's
// target is stated for it.
//
// --url URL gives one cell: three members with lock tables of their own on that server
// (prefixes qbench0_, qbench1_, qbench2_), the single lock on the first. Members on one server
// measure the protocol (two rounds, each sent to all members in parallel), not a network.
// --members A,B,C gives a cell over three independent servers: the single lock is measured on
// each of them, and the quorum is compared with the slowest (a quorum round waits for the
// slowest member of the fastest majority).
// The variants run INTERLEAVED, rotating who goes first, so all share the machine's noise
// (round 0 is a warm-up). The issue's target: an acquire at most 2.5x. See tools/bench/README.md.
#include "paired_bench.hpp"

#include <iostream>
#include <memory>
#include <optional>
#include <sqlock/sqlock.hpp>
#include <unistd.h>

namespace {

constexpr const char* usage_text =
    R"(usage: sqlock_quorum_bench [--url URL ...] [--members A,B,C ...] [--rounds R] [--batch B]
                           [--json FILE] [--markdown FILE]

Uncontended acquire + release of a quorum_mutex over three members against a unique_key
sqlock::mutex on a member alone, interleaved: R rounds (default 20, plus one warm-up round) of B
pairs each (default 30). --url URL: the three members are lock tables of their own on URL's
server. --members A,B,C: the members are three independent databases, and the single lock is
measured on each (the slowest one counts). The target: a quorum acquire at most 2.5x the
(slowest) single acquire, as a ratio of medians; acquire + release is reported too.

Exit status: 0 ok (the target is reported, not enforced: this machine's noise); 1 a variant
failed; 2 usage.
)";

constexpr double target_ratio = 2.5;

using bench::usage_error;

/// One cell to measure: one server (three members on it) or three independent members.
struct cell_spec {
    std::vector<std::string> urls; ///< 1: members on that server; 3: independent members
};

struct config {
    std::vector<cell_spec> cells;
    int rounds = 20;
    int batch = 30;
    std::string json_path;
    std::string markdown_path;
};

std::vector<std::string> split_commas(const std::string& value) {
    std::vector<std::string> out;
    std::size_t from = 0;
    for (;;) {
        const auto comma = value.find(',', from);
        out.push_back(value.substr(from, comma - from));
        if (comma == std::string::npos)
            return out;
        from = comma + 1;
    }
}

config parse(int argc, char** argv) {
    config c;
    bench::for_each_option(argc, argv, usage_text, [&](std::string_view flag, std::string value) {
        if (flag == "--url")
            c.cells.push_back({{value}});
        else if (flag == "--members") {
            auto urls = split_commas(value);
            if (urls.size() != 3)
                throw usage_error("--members wants three URLs separated by commas");
            c.cells.push_back({std::move(urls)});
        } else if (flag == "--rounds")
            c.rounds = static_cast<int>(bench::parse_int(flag, value));
        else if (flag == "--batch")
            c.batch = static_cast<int>(bench::parse_int(flag, value));
        else if (flag == "--json")
            c.json_path = value;
        else if (flag == "--markdown")
            c.markdown_path = value;
        else
            throw usage_error("unknown option " + std::string(flag));
    });
    if (c.cells.empty())
        throw usage_error("at least one --url or --members is needed");
    if (c.rounds < 1 || c.batch < 1)
        throw usage_error("--rounds and --batch must be at least 1");
    return c;
}

/// What is timed of one acquire + release (µs).
enum part { acquire = 0, whole = 1 };

/// One variant's samples and their summaries.
struct series {
    std::vector<double> samples[2]; ///< [part]
    bench::summary stats[2];
};

/// One cell: the single variants (one per member server measured) and the quorum.
struct cell {
    std::string label;
    std::vector<series> singles;
    series quorum;
    double ratio[2] = {0, 0}; ///< [part]: quorum median / the slowest single median
    std::string error;
};

/// The variants of one cell, ready to time: singles first, the quorum last.
class variants {
public:
    explicit variants(const cell_spec& spec) {
        const bool one_server = spec.urls.size() == 1;
        for (std::size_t i = 0; i < 3; ++i) {
            sqlock::connect_options o;
            o.table_prefix = "qbench" + std::to_string(i) + "_";
            m_members.push_back(sqlock::connect(spec.urls[one_server ? 0 : i], o));
            m_members.back().migrate();
        }
        const auto suffix = std::to_string(getpid());
        for (std::size_t i = 0; i < (one_server ? 1U : 3U); ++i)
            m_singles.push_back(
                std::make_unique<sqlock::mutex>(m_members[i], "quorum-bench-single-" + suffix));
        m_quorum.emplace(m_members, "quorum-bench-" + suffix);
    }

    int count() const { return static_cast<int>(m_singles.size()) + 1; }

    /// One acquire + release of variant `which` (the last: the quorum): µs per part.
    std::array<double, 2> pair(int which) {
        const auto t0 = bench::now_ns();
        std::int64_t t1 = 0;
        if (which + 1 < count()) {
            m_singles[static_cast<std::size_t>(which)]->lock();
            t1 = bench::now_ns();
            m_singles[static_cast<std::size_t>(which)]->unlock();
        } else {
            m_quorum->lock();
            t1 = bench::now_ns();
            m_quorum->unlock();
        }
        const auto t2 = bench::now_ns();
        return {static_cast<double>(t1 - t0) / 1000.0, static_cast<double>(t2 - t0) / 1000.0};
    }

private:
    std::vector<sqlock::database> m_members;
    std::vector<std::unique_ptr<sqlock::mutex>> m_singles;
    std::optional<sqlock::quorum_mutex> m_quorum;
};

series& series_of(cell& c, int which) {
    return which < static_cast<int>(c.singles.size()) ? c.singles[static_cast<std::size_t>(which)]
                                                      : c.quorum;
}

void measure(cell& c, const cell_spec& spec, const config& cfg) {
    variants v(spec);
    c.singles.resize(static_cast<std::size_t>(v.count() - 1));
    for (int round = 0; round <= cfg.rounds; ++round) {
        for (int k = 0; k < v.count(); ++k) {
            const int which = (round + k) % v.count(); // rotate who goes first
            for (int i = 0; i < cfg.batch; ++i) {
                const auto t = v.pair(which);
                if (round > 0) // round 0: warm-up
                    for (int p : {acquire, whole})
                        series_of(c, which).samples[p].push_back(t[static_cast<std::size_t>(p)]);
            }
        }
    }
    for (int which = 0; which < v.count(); ++which)
        for (int p : {acquire, whole})
            series_of(c, which).stats[p] = bench::summarise(series_of(c, which).samples[p]);
    for (int p : {acquire, whole}) {
        double slowest = 0;
        for (const auto& s : c.singles)
            slowest = std::max(slowest, s.stats[p].median);
        c.ratio[p] = c.quorum.stats[p].median / slowest;
    }
}

/// The slowest single variant's summary of `p`.
const bench::summary& slowest_single(const cell& c, int p) {
    const bench::summary* out = &c.singles.front().stats[p];
    for (const auto& s : c.singles)
        if (s.stats[p].median > out->median)
            out = &s.stats[p];
    return *out;
}

std::string markdown(const std::vector<cell>& cells, const config& cfg) {
    std::ostringstream o;
    o << "Quorum (3 members) vs a single-database unique_key lock, uncontended (µs; " << cfg.rounds
      << " interleaved rounds × " << cfg.batch
      << " pairs per variant; ratios of medians against the slowest member's single lock). "
         "Target: acquire ≤ "
      << bench::ratio_text(target_ratio) << ".\n\n"
      << "| members | single acquire | quorum acquire | **acquire ratio** | single acquire + "
         "release | quorum acquire + release | acquire + release ratio | quorum p99 | target "
         "|\n|---|---|---|---|---|---|---|---|---|\n";
    for (const auto& c : cells) {
        o << "| " << c.label << " | ";
        if (!c.error.empty()) {
            o << "failed: " << c.error << " ||||||||\n";
            continue;
        }
        o << bench::us(slowest_single(c, acquire).median) << " | "
          << bench::us(c.quorum.stats[acquire].median) << " | **"
          << bench::fixed(c.ratio[acquire], 2) << "×** | "
          << bench::us(slowest_single(c, whole).median) << " | "
          << bench::us(c.quorum.stats[whole].median) << " | " << bench::fixed(c.ratio[whole], 2)
          << "× | " << bench::us(c.quorum.stats[whole].p99) << " | "
          << (c.ratio[acquire] <= target_ratio ? "met" : "missed") << " |\n";
    }
    return o.str();
}

std::string json(const std::vector<cell>& cells, const config& cfg) {
    std::ostringstream o;
    o << "{\"rounds\": " << cfg.rounds << ", \"batch\": " << cfg.batch
      << ", \"target\": " << bench::json_number(target_ratio) << ", \"cells\": [";
    for (std::size_t i = 0; i < cells.size(); ++i) {
        const auto& c = cells[i];
        const bool ok = c.error.empty();
        const auto num = [&](double v) {
            return ok ? bench::json_number(v) : std::string("null");
        };
        o << (i ? ", " : "") << "{\"members\": " << bench::json_string(c.label)
          << ", \"single_acquire_median_us\": " << num(ok ? slowest_single(c, acquire).median : 0)
          << ", \"quorum_acquire_median_us\": " << num(c.quorum.stats[acquire].median)
          << ", \"ratio_acquire\": " << num(c.ratio[acquire])
          << ", \"single_median_us\": " << num(ok ? slowest_single(c, whole).median : 0)
          << ", \"quorum_median_us\": " << num(c.quorum.stats[whole].median)
          << ", \"quorum_p99_us\": " << num(c.quorum.stats[whole].p99)
          << ", \"ratio_median\": " << num(c.ratio[whole])
          << ", \"error\": " << (ok ? "null" : bench::json_string(c.error)) << "}";
    }
    o << "]}\n";
    return o.str();
}

/// "PostgreSQL" for members on one server; "PostgreSQL + MariaDB + SQLite" for independent ones.
std::string label_of(const cell_spec& spec) {
    std::string out;
    for (const auto& url : spec.urls)
        out += (out.empty() ? "" : " + ") + bench::backend_label(bench::backend_of(url));
    return spec.urls.size() == 1 ? out + " (3 members on one server)"
                                 : out + " (independent members)";
}

int run(const config& cfg) {
    std::vector<cell> cells;
    bool failed = false;
    for (const auto& spec : cfg.cells) {
        cell c;
        c.label = label_of(spec);
        try {
            measure(c, spec, cfg);
        } catch (const std::exception& e) {
            c.error = e.what();
            failed = true;
        }
        cells.push_back(std::move(c));
    }
    bench::paired::emit(markdown(cells, cfg), json(cells, cfg), cfg.markdown_path, cfg.json_path);
    return failed ? 1 : 0;
}

} // namespace

int main(int argc, char** argv) {
    return bench::bench_main("sqlock_quorum_bench", usage_text, argc, argv, parse, run);
}
