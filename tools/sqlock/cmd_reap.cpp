// sqlock reap: deletes expired lock rows and old run-ledger rows, in small batches.
#include "cli.hpp"
#include "command.hpp"

#include <charconv>
#include <chrono>
#include <iostream>
#include <sqlock/database.hpp>
#include <string>

namespace sqlock::cli {

namespace {

/// reap's options.
struct reap_args {
    sqlock::reap_options reap;
    bool json = false;
};

/// `value` of --batch: a positive number of rows.
std::size_t batch_arg(const std::string& value) {
    std::size_t n = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (ec != std::errc{} || end != value.data() + value.size() || n == 0)
        throw usage_error("--batch: \"" + value + "\" is not a positive number");
    return n;
}

/// reap's arguments, checked.
reap_args parse_reap_args(const options& o) {
    reap_args r;
    r.reap.settle = std::chrono::minutes(1);
    for (std::size_t i = 0; i < o.args.size(); ++i) {
        const auto& a = o.args[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= o.args.size())
                throw usage_error(a + " needs a value");
            return o.args[++i];
        };
        if (a == "--dry-run")
            r.reap.dry_run = true;
        else if (a == "--older-than")
            r.reap.older_than = duration_arg(a, value());
        else if (a == "--settle")
            r.reap.settle = duration_arg(a, value());
        else if (a == "--keep-history")
            r.reap.keep_history = duration_arg(a, value());
        else if (a == "--batch")
            r.reap.batch = batch_arg(value());
        else if (a == "--json")
            r.json = true;
        else
            throw usage_error("reap: unknown option " + a);
    }
    if (r.reap.keep_history < std::chrono::hours(24))
        throw usage_error("--keep-history: the run ledger must be kept at least 1d");
    return r;
}

/// What reap did (`r`, in `elapsed`), as --json or text.
void print_reap_result(const sqlock::database& db, const reap_args& a, const sqlock::reap_result& r,
                       std::chrono::milliseconds elapsed) {
    const auto& ro = a.reap;
    if (a.json) {
        const ojson out = {{"deleted", r.deleted},
                           {"expired", r.expired},
                           {"deferred", r.deferred},
                           {"batches", r.batches},
                           {"dry_run", ro.dry_run},
                           {"older_than_ms", ro.older_than.count()},
                           {"batch", ro.batch},
                           {"elapsed_ms", elapsed.count()},
                           {"history_deleted", r.history_deleted},
                           {"history_expired", r.history_expired},
                           {"keep_history_ms", ro.keep_history.count()}};
        std::cout << json_line(out) << "\n";
    } else if (ro.dry_run) {
        std::cout << r.expired << " expired rows and " << r.history_expired
                  << " run-ledger rows would be deleted from " << db.url() << "\n";
    } else {
        std::cout << "deleted " << r.deleted << " expired rows in " << r.batches << " batches and "
                  << r.history_deleted << " run-ledger rows from " << db.url() << " ("
                  << elapsed.count() << " ms)";
        if (r.deferred > 0)
            std::cout << "; " << r.deferred
                      << " expired-looking leases deferred (not yet seen unchanged for their TTL)";
        std::cout << "\n";
    }
}

} // namespace

int cmd_reap(const options& o) {
    const auto a = parse_reap_args(o);
    auto db = open(o);
    const auto start = std::chrono::steady_clock::now();
    const auto r = db.reap(a.reap);
    const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
    print_reap_result(db, a, r, elapsed);
    return exit_ok;
}

} // namespace sqlock::cli
