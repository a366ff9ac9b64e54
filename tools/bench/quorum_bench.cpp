// sqlock_quorum_bench — what a quorum lock costs over a single-database lock: an uncontended
// quorum_mutex lock() + unlock() on three members against sqlock::mutex lock() + unlock()
// (unique_key) on one of them.
//
// Each --url gives one cell: three members with lock tables of their own on that server
// (prefixes qbench0_, qbench1_, qbench2_), the single lock on the first. Members on one server
// measure the protocol (two rounds, each sent to all members in parallel), not a network; on
// independent servers a quorum round waits for the slowest member of the fastest majority.
// The variants run INTERLEAVED, alternating who goes first, so both share the machine's noise
// (round 0 is a warm-up). The issue's target: at most 2.5x. See tools/bench/README.md.
#include "bench_common.hpp"

#include <iostream>
#include <optional>
#include <sqlock/sqlock.hpp>
#include <unistd.h>

namespace {

constexpr const char* usage_text =
    R"(usage: sqlock_quorum_bench --url URL [--url URL ...] [--rounds R] [--batch B]
                           [--json FILE] [--markdown FILE]

Uncontended acquire + release of a quorum_mutex over three members (lock tables of their own
on the server of URL) against a unique_key sqlock::mutex on one of them, interleaved: R rounds
(default 20, plus one warm-up round) of B pairs each (default 30). The target is a quorum /
single ratio of medians of at most 2.5x.

Exit status: 0 ok (the target is reported, not enforced: this machine's noise); 1 a variant
failed; 2 usage.
)";

constexpr double target_ratio = 2.5;

using bench::usage_error;

struct config {
    std::vector<std::string> urls;
    int rounds = 20;
    int batch = 30;
    std::string json_path;
    std::string markdown_path;
};

config parse(int argc, char** argv) {
    config c;
    bench::for_each_option(argc, argv, usage_text, [&](std::string_view flag, std::string value) {
        if (flag == "--url")
            c.urls.push_back(value);
        else if (flag == "--rounds")
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
    if (c.urls.empty())
        throw usage_error("at least one --url is needed");
    if (c.rounds < 1 || c.batch < 1)
        throw usage_error("--rounds and --batch must be at least 1");
    return c;
}

/// One cell: a server, both variants' samples and per-round ratios.
struct cell {
    std::string url_label;
    std::vector<double> samples[2]; // [0] single, [1] quorum; µs per acquire + release
    std::vector<double> round_ratio;
    bench::summary stats[2];
    double ratio = 0;
    std::string error;
};

/// The two variants of one cell, ready to time.
class variants {
public:
    explicit variants(const std::string& url) {
        for (int i = 0; i < 3; ++i) {
            sqlock::connect_options o;
            o.table_prefix = "qbench" + std::to_string(i) + "_";
            m_members.push_back(sqlock::connect(url, o));
            m_members.back().migrate();
        }
        const auto suffix = std::to_string(getpid());
        m_single.emplace(m_members.front(), "quorum-bench-single-" + suffix);
        m_quorum.emplace(m_members, "quorum-bench-" + suffix);
    }

    /// One acquire + release of variant `which` (0: single, 1: quorum), in µs.
    double pair(int which) {
        const auto t0 = bench::now_ns();
        if (which == 0) {
            m_single->lock();
            m_single->unlock();
        } else {
            m_quorum->lock();
            m_quorum->unlock();
        }
        return static_cast<double>(bench::now_ns() - t0) / 1000.0;
    }

private:
    std::vector<sqlock::database> m_members;
    std::optional<sqlock::mutex> m_single;
    std::optional<sqlock::quorum_mutex> m_quorum;
};

void measure(cell& c, const std::string& url, const config& cfg) {
    variants v(url);
    std::vector<double> batch;
    for (int round = 0; round <= cfg.rounds; ++round) {
        double medians[2] = {0, 0};
        for (int k = 0; k < 2; ++k) {
            const int which = (round + k) % 2; // alternate who goes first
            batch.clear();
            for (int i = 0; i < cfg.batch; ++i)
                batch.push_back(v.pair(which));
            std::sort(batch.begin(), batch.end());
            medians[which] = bench::median_of_sorted(batch);
            if (round > 0) // round 0: warm-up
                c.samples[which].insert(c.samples[which].end(), batch.begin(), batch.end());
        }
        if (round > 0)
            c.round_ratio.push_back(medians[1] / medians[0]);
    }
    for (int k = 0; k < 2; ++k)
        c.stats[k] = bench::summarise(c.samples[k]);
    c.ratio = c.stats[1].median / c.stats[0].median;
}

std::string markdown(const std::vector<cell>& cells, const config& cfg) {
    std::ostringstream o;
    o << "Quorum (3 members) vs a single-database unique_key lock, uncontended acquire + release "
         "(µs; "
      << cfg.rounds << " interleaved rounds × " << cfg.batch
      << " pairs per variant; quorum / single = ratio of medians; per-round = min–max of the "
         "per-round ratio). Target ≤ "
      << bench::ratio_text(target_ratio) << ".\n\n"
      << "| database | single median | quorum median | single p99 | quorum p99 | "
         "**quorum / single** | per-round | target |\n|---|---|---|---|---|---|---|---|\n";
    for (const auto& c : cells) {
        o << "| " << c.url_label << " | ";
        if (!c.error.empty()) {
            o << "failed: " << c.error << " ||||||\n";
            continue;
        }
        auto range = c.round_ratio;
        std::sort(range.begin(), range.end());
        o << bench::us(c.stats[0].median) << " | " << bench::us(c.stats[1].median) << " | "
          << bench::us(c.stats[0].p99) << " | " << bench::us(c.stats[1].p99) << " | **"
          << bench::fixed(c.ratio, 2) << "×** | " << bench::fixed(range.front(), 2) << "–"
          << bench::fixed(range.back(), 2) << " | " << (c.ratio <= target_ratio ? "met" : "missed")
          << " |\n";
    }
    return o.str();
}

std::string json(const std::vector<cell>& cells, const config& cfg) {
    std::ostringstream o;
    o << "{\"rounds\": " << cfg.rounds << ", \"batch\": " << cfg.batch
      << ", \"target\": " << bench::json_number(target_ratio) << ", \"cells\": [";
    for (std::size_t i = 0; i < cells.size(); ++i) {
        const auto& c = cells[i];
        o << (i ? ", " : "") << "{\"database\": " << bench::json_string(c.url_label)
          << ", \"single_median_us\": " << bench::json_number(c.stats[0].median)
          << ", \"quorum_median_us\": " << bench::json_number(c.stats[1].median)
          << ", \"single_p99_us\": " << bench::json_number(c.stats[0].p99)
          << ", \"quorum_p99_us\": " << bench::json_number(c.stats[1].p99)
          << ", \"ratio_median\": " << bench::json_number(c.ratio)
          << ", \"error\": " << (c.error.empty() ? "null" : bench::json_string(c.error)) << "}";
    }
    o << "]}\n";
    return o.str();
}

int run(const config& cfg) {
    std::vector<cell> cells;
    bool failed = false;
    for (const auto& url : cfg.urls) {
        cell c;
        c.url_label = bench::backend_label(bench::backend_of(url));
        try {
            measure(c, url, cfg);
        } catch (const std::exception& e) {
            c.error = e.what();
            failed = true;
        }
        cells.push_back(std::move(c));
    }
    const auto md = markdown(cells, cfg);
    std::cout << md;
    if (!cfg.markdown_path.empty())
        bench::write_file(cfg.markdown_path, md);
    if (!cfg.json_path.empty())
        bench::write_file(cfg.json_path, json(cells, cfg));
    return failed ? 1 : 0;
}

} // namespace

int main(int argc, char** argv) {
    return bench::bench_main("sqlock_quorum_bench", usage_text, argc, argv, parse, run);
}
