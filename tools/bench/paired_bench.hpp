// paired_bench.hpp — the skeleton of a benchmark that times two ways of making the same
// uncontended acquire + release ("reference" and "variant": the C++ API and the C API, the sync
// API and the async one) on every database and strategy it is given.
//
// The two run INTERLEAVED: every round times a batch of each, the order alternating from round
// to round, so both share the machine's noise (round 0 is a warm-up and is not counted). The
// ratio is variant / reference of the medians over all samples; the per-round range of the
// ratio shows how stable it is. A benchmark supplies its usage text, a description (names,
// targets) and a Variants class; everything else (options, loop, statistics, markdown and
// JSON) is here.
//
// Header-only and internal to tools/bench.
#pragma once

#include "bench_common.hpp"

#include <functional>

namespace bench::paired {

/// The options every paired benchmark takes: --url (repeatable), --strategy (repeatable;
/// default all three), --rounds R (default 30), --batch B (default 40), --json FILE,
/// --markdown FILE.
struct config {
    std::vector<std::string> urls;
    std::vector<std::string> strategies;
    int rounds = 30;
    int batch = 40;
    std::string json_path;
    std::string markdown_path;
};

/// Parses `argv` into a config; throws usage_error (bench_main prints `usage`).
inline config parse(int argc, char** argv, const char* usage) {
    config c;
    for_each_option(argc, argv, usage, [&](std::string_view flag, std::string value) {
        if (flag == "--url")
            c.urls.push_back(value);
        else if (flag == "--strategy")
            c.strategies.push_back(std::string(sqlock::to_string(sqlock::parse_strategy(value))));
        else if (flag == "--rounds")
            c.rounds = static_cast<int>(parse_int(flag, value));
        else if (flag == "--batch")
            c.batch = static_cast<int>(parse_int(flag, value));
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
    if (c.strategies.empty())
        c.strategies = {"unique_key", "select_for_update", "optimistic_version"};
    return c;
}

/// How a benchmark names what it compares, and its target.
struct description {
    std::string title;        ///< "C API vs C++ API": the table's first words
    std::string names[2];     ///< [0] reference, [1] variant, for the table ("C++", "C")
    std::string json_keys[2]; ///< the same as JSON field prefixes ("cpp", "c")
    std::string target_text;  ///< the targets in words, after "Target" in the table's caption
    std::function<double(backend)> target; ///< the highest ratio that meets the target
};

/// One cell: a database and strategy, both variants' samples and per-round ratios.
struct cell {
    std::string url_label;
    std::string strategy;
    double target = 0;
    std::vector<double> samples[2]; ///< [0] reference, [1] variant; µs per acquire + release
    std::vector<double> round_ratio;
    summary stats[2];
    double ratio = 0;
    std::string error;
};

/// Times one cell. `Variants(url, strategy)` opens both variants on that database;
/// `pairs(which, n)` makes n acquire + release pairs of variant `which` (0: the reference)
/// and returns each one's time in µs.
template <class Variants>
void measure(cell& c, const std::string& url, const config& cfg) {
    Variants v(url, c.strategy);
    for (int round = 0; round <= cfg.rounds; ++round) {
        double medians[2] = {0, 0};
        for (int k = 0; k < 2; ++k) {
            const int which = (round + k) % 2; // alternate who goes first
            auto batch = v.pairs(which, cfg.batch);
            std::sort(batch.begin(), batch.end());
            medians[which] = median_of_sorted(batch);
            if (round > 0) // round 0: warm-up
                c.samples[which].insert(c.samples[which].end(), batch.begin(), batch.end());
        }
        if (round > 0)
            c.round_ratio.push_back(medians[1] / medians[0]);
    }
    for (int k = 0; k < 2; ++k)
        c.stats[k] = summarise(c.samples[k]);
    c.ratio = c.stats[1].median / c.stats[0].median;
}

/// The cells as a markdown table with its caption.
inline std::string markdown(const std::vector<cell>& cells, const config& cfg,
                            const description& d) {
    const auto ratio_name = d.names[1] + " / " + d.names[0];
    std::ostringstream o;
    o << d.title << ", uncontended acquire + release (µs; " << cfg.rounds
      << " interleaved rounds × " << cfg.batch << " pairs per variant; " << ratio_name
      << " = ratio of medians; per-round = min–max of the per-round ratio). Target "
      << d.target_text << ".\n\n"
      << "| database | strategy | " << d.names[0] << " median | " << d.names[1] << " median | "
      << d.names[0] << " p99 | " << d.names[1] << " p99 | **" << ratio_name
      << "** | per-round | target |\n|---|---|---|---|---|---|---|---|---|\n";
    for (const auto& c : cells) {
        o << "| " << c.url_label << " | `" << c.strategy << "` | ";
        if (!c.error.empty()) {
            o << "failed: " << c.error << " ||||||\n";
            continue;
        }
        auto range = c.round_ratio;
        std::sort(range.begin(), range.end());
        o << us(c.stats[0].median) << " | " << us(c.stats[1].median) << " | " << us(c.stats[0].p99)
          << " | " << us(c.stats[1].p99) << " | **" << fixed(c.ratio, 3) << "×** | "
          << fixed(range.front(), 2) << "–" << fixed(range.back(), 2) << " | "
          << (c.ratio <= c.target ? "met (≤ " : "missed (≤ ") << ratio_text(c.target) << ") |\n";
    }
    return o.str();
}

/// The cells as JSON: {rounds, batch, cells: [{database, strategy, <key>_median_us,
/// <key>_p99_us for both variants, target, ratio_median, error}]}.
inline std::string json(const std::vector<cell>& cells, const config& cfg, const description& d) {
    std::ostringstream o;
    o << "{\"rounds\": " << cfg.rounds << ", \"batch\": " << cfg.batch << ", \"cells\": [";
    for (std::size_t i = 0; i < cells.size(); ++i) {
        const auto& c = cells[i];
        o << (i ? ", " : "") << "{\"database\": " << json_string(c.url_label)
          << ", \"strategy\": " << json_string(c.strategy);
        for (int k = 0; k < 2; ++k)
            o << ", \"" << d.json_keys[k] << "_median_us\": " << json_number(c.stats[k].median)
              << ", \"" << d.json_keys[k] << "_p99_us\": " << json_number(c.stats[k].p99);
        o << ", \"target\": " << json_number(c.target)
          << ", \"ratio_median\": " << json_number(c.ratio)
          << ", \"error\": " << (c.error.empty() ? "null" : json_string(c.error)) << "}";
    }
    o << "]}\n";
    return o.str();
}

/// Prints `md` and writes it and `json_text` where the options ask.
inline void emit(const std::string& md, const std::string& json_text,
                 const std::string& markdown_path, const std::string& json_path) {
    std::cout << md;
    if (!markdown_path.empty())
        write_file(markdown_path, md);
    if (!json_path.empty())
        write_file(json_path, json_text);
}

/// Measures every database × strategy of `cfg` (a cell that fails is reported as such and the
/// rest go on), prints the table and writes the files. Exit status: 1 when a cell failed.
template <class Variants>
int run(const config& cfg, const description& d) {
    std::vector<cell> cells;
    bool failed = false;
    for (const auto& url : cfg.urls) {
        for (const auto& strategy : cfg.strategies) {
            cell c;
            c.url_label = backend_label(backend_of(url));
            c.target = d.target(backend_of(url));
            c.strategy = strategy;
            try {
                measure<Variants>(c, url, cfg);
            } catch (const std::exception& e) {
                c.error = e.what();
                failed = true;
            }
            cells.push_back(std::move(c));
        }
    }
    emit(markdown(cells, cfg, d), json(cells, cfg, d), cfg.markdown_path, cfg.json_path);
    return failed ? 1 : 0;
}

} // namespace bench::paired
