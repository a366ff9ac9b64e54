// SQLite extended result code -> sqlock error category.
#include "backends/backend.hpp"

#include <array>
#include <sqlite3.h>
#include <utility>

namespace sqlock::detail {

errc classify_sqlite_code(int extended_code) {
    // Exact extended codes first, then the primary code (low byte).
    static constexpr std::array<std::pair<int, errc>, 3> exact = {{
        {SQLITE_BUSY_SNAPSHOT, errc::conflict}, // WAL snapshot went stale: retry the transaction
        {SQLITE_IOERR_NOMEM, errc::backend},
        {SQLITE_CANTOPEN_ISDIR, errc::connection}, // the URL names a directory
    }};
    static constexpr std::array<std::pair<int, errc>, 8> primary = {{
        {SQLITE_BUSY, errc::timeout},        // another connection held the lock past busy_timeout
        {SQLITE_LOCKED, errc::conflict},     // conflict within this connection / shared cache
        {SQLITE_CANTOPEN, errc::connection}, // file or directory missing or not accessible
        {SQLITE_NOTADB, errc::connection},   // the file is not an SQLite database
        {SQLITE_PERM, errc::connection},     // access permission denied
        {SQLITE_AUTH, errc::connection},     // authorizer denied
        {SQLITE_READONLY, errc::backend},    // read-only file: writes cannot work
        {SQLITE_CORRUPT, errc::backend},     // database image is malformed
    }};
    for (const auto& [code, category] : exact)
        if (code == extended_code)
            return category;
    for (const auto& [code, category] : primary)
        if (code == (extended_code & 0xff))
            return category;
    return errc::backend;
}

} // namespace sqlock::detail
