#include "lock_roles.hpp"

#include <map>
#include <string>
#include <string_view>

namespace sqlock::cli {

namespace {

/// The holder's process as the row tells it: host and pid (host empty where the database
/// does not say, as for a MariaDB select_for_update holder).
struct process_key {
    std::string_view host;
    std::int64_t pid = 0;
};

process_key process_of(const sqlock::lock_info& l) {
    return {l.host, l.pid};
}

/// The slots a writer collects are held by other mutex handles of the writer's process.
bool same_process(const process_key& a, const process_key& b) {
    return a.pid > 0 && a.pid == b.pid && (a.host.empty() || b.host.empty() || a.host == b.host);
}

bool is_reader_slot(const sqlock::lock_info& l) {
    const auto role = l.role();
    return role.starts_with("reader ") && !is_queue_row(l);
}

} // namespace

bool is_queue_row(const sqlock::lock_info& l) {
    return l.role().ends_with(" queue");
}

bool is_gate_row(const sqlock::lock_info& l) {
    return l.role() == "writer";
}

std::vector<row_count> classify_rows(const std::vector<sqlock::lock_info>& locks) {
    // Per shared mutex: the process of its writer (gate held), and whether a reader slot is
    // held by anyone else (then the writer still waits for that reader).
    std::map<std::string_view, process_key> writer_of;
    for (const auto& l : locks)
        if (is_gate_row(l) && l.held())
            writer_of[l.primitive_name()] = process_of(l);
    std::map<std::string_view, bool> readers_left;
    for (const auto& l : locks) {
        const auto w = writer_of.find(l.primitive_name());
        if (w != writer_of.end() && is_reader_slot(l) && l.held() &&
            !same_process(process_of(l), w->second))
            readers_left[l.primitive_name()] = true;
    }
    std::vector<row_count> out;
    out.reserve(locks.size());
    for (const auto& l : locks) {
        const auto w = writer_of.find(l.primitive_name());
        if (l.holder_hidden)
            out.push_back(row_count::unknown);
        else if (!l.held())
            out.push_back(row_count::free);
        else if (is_queue_row(l))
            out.push_back(row_count::waiter);
        else if (is_gate_row(l))
            out.push_back(readers_left.contains(l.primitive_name()) ? row_count::waiter
                                                                    : row_count::holder);
        else if (w != writer_of.end() && is_reader_slot(l) &&
                 same_process(process_of(l), w->second))
            out.push_back(row_count::writers_slot);
        else
            out.push_back(row_count::holder);
    }
    return out;
}

} // namespace sqlock::cli
