// sqlock release --force: break-glass release of someone else's lock, recorded in the audit table.
#include "cli.hpp"
#include "command.hpp"

#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <sqlock/database.hpp>
#include <sqlock/semaphore.hpp>
#include <string>
#include <unistd.h>

namespace sqlock::cli {

namespace {

/// release's arguments.
struct release_args {
    std::string name;
    bool force = false;
    bool json = false;
    std::optional<std::int64_t> permit;
    std::string actor; ///< "" when not given
};

/// `value` of --permit: a permit number, 0 to sqlock::max_permits - 1.
std::int64_t permit_arg(const std::string& value) {
    std::int64_t k = -1;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), k);
    if (ec != std::errc{} || end != value.data() + value.size() || k < 0 ||
        k >= sqlock::max_permits)
        throw usage_error("--permit: \"" + value + "\" is not a permit number");
    return k;
}

/// release's arguments (NAME, then options) as they are given.
release_args parse_release_args(const options& o) {
    if (o.args.empty())
        throw usage_error("release: missing lock NAME");
    release_args r;
    r.name = o.args[0];
    for (std::size_t i = 1; i < o.args.size(); ++i) {
        const auto& a = o.args[i];
        if (a == "--force")
            r.force = true;
        else if (a == "--json")
            r.json = true;
        else if (a == "--actor" && i + 1 < o.args.size())
            r.actor = o.args[++i];
        else if (a == "--permit" && i + 1 < o.args.size())
            r.permit = permit_arg(o.args[++i]);
        else
            throw usage_error("release: unknown option " + a);
    }
    return r;
}

/// Who releases, for the audit table when --actor is not given: "$USER@host (sqlock release
/// --force)".
std::string default_actor() {
    const char* user = std::getenv("USER");
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    return std::string(user ? user : "unknown") + "@" + host + " (sqlock release --force)";
}

/// What the release did (`r`, of lock row `row_name`), as --json or text.
void print_release(const sqlock::database& db, const release_args& a, const std::string& row_name,
                   const sqlock::force_release_result& r) {
    const std::string shown = readable_lock_name(row_name); // "NAME [permit K]", escaped
    if (a.json) {
        const ojson out = {{"name", a.name},
                           {"permit", optional_json(a.permit)},
                           {"released", r.released},
                           {"strategy", r.strategy},
                           {"previous_owner", r.previous_owner},
                           {"previous_token", r.previous_token},
                           {"new_token", r.new_token},
                           {"sessions_ended", r.sessions_ended},
                           {"actor", a.actor}};
        std::cout << json_line(out) << "\n";
    } else if (!r.released) {
        std::cout << "nothing to release: lock \"" << shown << "\" is not held in " << db.url()
                  << "\n";
    } else if (r.strategy == "select_for_update") {
        std::cout << "released \"" << shown << "\": ended " << r.sessions_ended
                  << " holder session(s); recorded as " << a.actor << "\n";
    } else {
        std::cout << "released \"" << shown << "\" (was "
                  << (r.previous_owner.empty() ? std::string("free") : r.previous_owner)
                  << "); token " << r.previous_token << " -> " << r.new_token
                  << ", so the old holder's fenced writes fail; recorded as " << a.actor << "\n";
    }
}

} // namespace

int cmd_release(const options& o) {
    auto a = parse_release_args(o);
    // A semaphore's permit K is the lock "NAME<0x1f>permit K" (sqlock/semaphore.hpp).
    const std::string row_name =
        a.permit ? a.name + "\x1fpermit " + std::to_string(*a.permit) : a.name;
    if (!a.force)
        throw usage_error("release: breaking someone else's lock needs --force (the holder "
                          "loses it; its fenced writes will be refused)");
    if (a.actor.empty())
        a.actor = default_actor();
    if (o.urls.size() > 1) {
        if (a.permit)
            throw usage_error("release: --permit is for semaphores; a quorum lock has none");
        return cmd_release_quorum(o, a.name, a.actor, a.json);
    }
    auto db = open(o);
    const auto r = db.force_release(row_name, a.actor);
    print_release(db, a, row_name, r);
    return r.released ? exit_ok : exit_not_found;
}

} // namespace sqlock::cli
