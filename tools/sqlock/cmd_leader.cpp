// sqlock leader: who leads an election (sqlock::leader_election), without campaigning.
#include "cli.hpp"
#include "command.hpp"

#include <iostream>
#include <sqlock/database.hpp>
#include <sqlock/leader.hpp>
#include <string>

namespace sqlock::cli {

int cmd_leader(const options& o) {
    if (o.args.empty())
        throw usage_error("leader: missing election NAME");
    const std::string name = o.args[0];
    bool json = false;
    for (std::size_t i = 1; i < o.args.size(); ++i) {
        if (o.args[i] == "--json")
            json = true;
        else
            throw usage_error("leader: unknown option " + o.args[i]);
    }
    auto db = open(o);
    const sqlock::leader_election election(db, name);
    const auto who = election.leader();
    if (json) {
        ojson out = {{"name", name}, {"leader", who.has_value()}};
        if (who) {
            out["id"] = who->id;
            out["host"] = who->host;
            out["pid"] = who->pid;
            out["term"] = who->term;
            out["since"] = who->since;
            out["expires"] = who->expires;
            out["remaining_ms"] = who->remaining.count();
            out["leading_for_ms"] = who->leading_for.count();
        } else {
            for (const char* key : {"id", "host", "pid", "term", "since", "expires", "remaining_ms",
                                    "leading_for_ms"})
                out[key] = nullptr;
        }
        std::cout << json_line(out) << "\n";
    } else if (who) {
        std::cout << "leader of \"" << name << "\": " << who->host << ":" << who->pid << ", term "
                  << who->term << ", leading since " << who->since << " UTC, lease expires "
                  << who->expires << " UTC (in " << who->remaining.count() << " ms)\n  id "
                  << who->id << "\n";
    } else {
        std::cout << "no leader for \"" << name << "\"";
        // The last leader, when its lease is still in the row: it stopped renewing.
        if (const auto row = db.find(name); row && !row->owner.empty())
            std::cout << ": the last leader, " << row->host << ":" << row->pid << " term "
                      << row->token << ", stopped renewing; its lease expired "
                      << -row->expires_in.count() << " ms ago";
        std::cout << "\n";
    }
    return who ? exit_ok : exit_not_found;
}

} // namespace sqlock::cli
