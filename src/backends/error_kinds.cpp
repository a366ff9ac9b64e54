// What a backend's errors mean for a caller deciding to wait (sqlock/error.hpp): each backend
// reports a full server, or a connect nobody answered, in its own words.
#include "sqlock/error.hpp"

#include <string_view>

namespace sqlock {

bool is_server_full(const error& e) noexcept {
    if (e.backend() == "postgresql")
        return e.sqlstate() == "53300"; // too_many_connections: every "no free slot" refusal
    if (e.backend() == "mysql") {
        switch (e.native_code()) {
        case 1040: // ER_CON_COUNT_ERROR: max_connections
        case 1203: // ER_TOO_MANY_USER_CONNECTIONS: the max_user_connections variable
            return true;
        case 1226: // ER_USER_LIMIT_REACHED: an account limit; only its connection count is
                   // freed by others disconnecting (not max_questions, ..._per_hour)
            return std::string_view(e.what()).find("'max_user_connections'") !=
                   std::string_view::npos;
        default:
            break;
        }
        // Over TLS, libmariadb may report the server's refusal, sent before the TLS handshake
        // completed, as a client error (2002/2026) quoting it: "... cannot be verified: 1040 -
        // Too many connections".
        if (e.native_code() >= 2000 && e.native_code() < 3000) {
            const std::string_view text = e.what();
            return text.find("1040 - ") != std::string_view::npos ||
                   text.find("1203 - ") != std::string_view::npos ||
                   (text.find("1226 - ") != std::string_view::npos &&
                    text.find("'max_user_connections'") != std::string_view::npos);
        }
        return false;
    }
    return false;
}

bool is_connect_unanswered(const error& e) noexcept {
    // errc::timeout: `sqlock run --wait` gave up on it at its deadline.
    if (e.code() != errc::connection && e.code() != errc::timeout)
        return false;
    const std::string_view text = e.what();
    if (text.find(": cannot connect to ") == std::string_view::npos)
        return false; // a connection that broke later, not one being opened
    if (e.backend() == "postgresql")
        return text.find("timeout expired") != std::string_view::npos ||
               text.find("server closed the connection unexpectedly") != std::string_view::npos;
    if (e.backend() == "mysql") {
        const int code = e.native_code();
        if (code == 2013) // CR_SERVER_LOST while connecting: during the handshake
            return true;
        return (code == 2002 || code == 2003) &&
               (text.find("system error: 110") != std::string_view::npos ||
                text.find("(110)") != std::string_view::npos);
    }
    return false;
}

} // namespace sqlock
