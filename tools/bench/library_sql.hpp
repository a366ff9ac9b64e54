// library_sql.hpp — sqlock's own statements, as the library sends them, for the bare-driver
// variants of the benchmarks (latency_bench.cpp).
//
// Nothing here is a copy: the text comes from a database handle's statement catalog (the
// sql/<backend>/<statement>.sql files embedded in libsqlock, table names expanded for that
// handle's prefix, base/statements.hpp) and goes through the library's own placeholder
// rewriting (base/sql_text.hpp). How many parameters a statement takes is read from that text
// (its highest $N), and the driver wrappers in bench_common.hpp refuse to bind any other
// number, so a statement that gains a parameter fails the benchmark's smoke test
// (`ctest -R bench`) instead of measuring something else.
#pragma once

#include "base/sql_text.hpp"
#include "base/statements.hpp"
#include "database/database_impl.hpp"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <sqlock/sqlock.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace bench {

using sqlock::detail::statement;

/// One catalog statement, ready for a bare driver.
struct library_statement {
    std::string name; ///< the file stem ("acquire_unique_key"), also the prepared name
    /// The SQL as this backend's session sends it: $N (PostgreSQL), ?N (SQLite), ? (MariaDB).
    std::string text;
    /// MariaDB: the 0-based parameter each "?" binds, in order. Empty elsewhere.
    std::vector<int> order;
    /// The parameters it takes: its highest $N.
    std::size_t params = 0;
};

/// The statements of the backend `db` is connected to (kept alive while this is).
class library_sql {
public:
    explicit library_sql(const sqlock::database& db)
        : m_db(sqlock::detail::database_access::impl(db)) {}

    /// Statement `id` as the library sends it. Throws when the library sends nothing for it
    /// on this backend (a file of comments only): a bare variant must not send it either.
    library_statement operator()(statement id) const {
        if (!sends(id))
            throw std::logic_error("sqlock sends no " + std::string(sqlock::detail::name_of(id)) +
                                   " on " + std::string(sqlock::to_string(kind())) +
                                   ": the bare variant must not send it either");
        const std::string& text = catalog()[id];
        library_statement s;
        s.name = std::string(sqlock::detail::name_of(id));
        for (const int index : rewrite(text, placeholder_style::question).order)
            s.params = std::max(s.params, static_cast<std::size_t>(index) + 1);
        switch (kind()) {
        case sqlock::backend_kind::postgresql:
            s.text = text; // libpq takes $N as it is
            break;
        case sqlock::backend_kind::mysql: {
            auto r = rewrite(text, placeholder_style::question);
            s.text = std::move(r.text);
            s.order = std::move(r.order);
            break;
        }
        case sqlock::backend_kind::sqlite:
            s.text = rewrite(text, placeholder_style::question_numbered).text;
            break;
        }
        return s;
    }

    /// Whether the library sends statement `id` on this backend at all.
    bool sends(statement id) const { return !catalog().is_noop(id); }

    /// Throws unless the library sends nothing for `id` here: where a bare variant leaves a
    /// statement out because this backend's file is a no-op, a library that starts sending it
    /// must stop the benchmark rather than make the comparison unequal.
    void require_not_sent(statement id) const {
        if (sends(id))
            throw std::logic_error("sqlock now sends " + std::string(sqlock::detail::name_of(id)) +
                                   " on " + std::string(sqlock::to_string(kind())) +
                                   ", which the bare variant leaves out: update latency_bench.cpp");
    }

    /// acquire_unique_key's $7 as sqlock::mutex::lock() sends it uncontended: 1 where waiters
    /// queue in the server (the acquire defers to a queued waiter), else 0.
    std::int64_t lock_defers_to_queue() const { return m_db->queues_waiters() ? 1 : 0; }

    sqlock::backend_kind kind() const { return m_db->kind(); }

private:
    using placeholder_style = sqlock::detail::placeholder_style;
    static sqlock::detail::rewritten_sql rewrite(std::string_view sql, placeholder_style style) {
        return sqlock::detail::rewrite_placeholders(sql, style);
    }
    const sqlock::detail::sql_catalog& catalog() const { return m_db->catalog(); }

    std::shared_ptr<sqlock::detail::database_impl> m_db;
};

} // namespace bench
