// Parsing of sqlock URLs. Everything here is pure; tests/unit_url.cpp covers it.
#include "base/config.hpp"
#include "sqlock/error.hpp"

#include <algorithm>
#include <charconv>
#include <optional>
#include <utility>

namespace sqlock::detail {

namespace {

[[noreturn]] void bad_url(const std::string& shown, const std::string& why) {
    throw error(errc::invalid_argument, "invalid database URL \"" + shown + "\": " + why +
                                            " (expected postgresql://user:password@host:port/db, "
                                            "mysql://..., sqlite:///abs/path.db or "
                                            "sqlite:relative.db)");
}

int hex_value(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/// Decodes %XX escapes; throws on a malformed escape.
std::string percent_decode(std::string_view in, const std::string& shown) {
    std::string out;
    out.reserve(in.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
        if (in[i] != '%') {
            out += in[i];
            continue;
        }
        const int hi = i + 2 < in.size() ? hex_value(in[i + 1]) : -1;
        const int lo = i + 2 < in.size() ? hex_value(in[i + 2]) : -1;
        if (i + 2 >= in.size() || hi < 0 || lo < 0)
            bad_url(shown, "malformed %-escape");
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
    }
    if (out.find('\0') != std::string::npos)
        bad_url(shown, "%00 is not allowed");
    return out;
}

/// Where the password of `url` is (offset and length of its still percent-encoded text), read
/// as parse_url reads it: after "://", up to the first '?' and then the first '/', the last '@'
/// ends the user info, whose first ':' starts the password.
std::optional<std::pair<std::size_t, std::size_t>> password_span(std::string_view url) {
    const auto scheme_end = url.find("://");
    if (scheme_end == std::string_view::npos)
        return std::nullopt;
    const auto start = scheme_end + 3;
    auto authority = url.substr(start);
    authority = authority.substr(0, authority.find('?'));
    authority = authority.substr(0, authority.find('/'));
    const auto at = authority.rfind('@');
    if (at == std::string_view::npos)
        return std::nullopt;
    const auto colon = authority.substr(0, at).find(':');
    if (colon == std::string_view::npos)
        return std::nullopt;
    return std::pair{start + colon + 1, at - colon - 1};
}

/// The URL with any password replaced by ***, safe to put into messages and logs. A malformed
/// URL whose password holds a raw '/', '?' or '#' (user:pa/ss@host) has no '@' where
/// parse_url looks for one: then everything from the first ':' after "://" to the last '@' is
/// masked, which may hide more than a password but never shows one.
std::string redact(std::string_view url) {
    auto span = password_span(url);
    if (!span) {
        const auto scheme_end = url.find("://");
        const auto at = url.rfind('@');
        if (scheme_end != std::string_view::npos && at != std::string_view::npos &&
            at > scheme_end) {
            const auto colon = url.find(':', scheme_end + 3);
            if (colon < at)
                span = std::pair{colon + 1, at - colon - 1};
        }
    }
    if (!span)
        return std::string(url);
    std::string out(url.substr(0, span->first));
    out += "***";
    out += url.substr(span->first + span->second);
    return out;
}

/// One host[:port] or [IPv6][:port] of a URL's host list.
endpoint parse_endpoint(std::string_view text, int default_port, const std::string& shown) {
    endpoint e;
    e.port = default_port;
    std::string_view port_text;
    if (text.starts_with("[")) { // [IPv6]:port
        const auto close = text.find(']');
        if (close == std::string_view::npos)
            bad_url(shown, "unterminated [IPv6] host");
        e.host = std::string(text.substr(1, close - 1));
        const auto after = text.substr(close + 1);
        if (!after.empty()) {
            if (after[0] != ':')
                bad_url(shown, "unexpected text after ]");
            port_text = after.substr(1);
        }
    } else {
        const auto c = text.rfind(':');
        e.host = percent_decode(text.substr(0, c), shown);
        if (c != std::string_view::npos)
            port_text = text.substr(c + 1);
    }
    if (e.host.empty())
        bad_url(shown, "no host");
    if (!port_text.empty()) {
        int port = 0;
        const auto [end, ec] =
            std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
        if (ec != std::errc{} || end != port_text.data() + port_text.size() || port < 1 ||
            port > 65535)
            bad_url(shown, "port must be a number from 1 to 65535");
        e.port = port;
    }
    return e;
}

/// sqlite:PATH or sqlite:///ABSOLUTE-PATH (`rest`: after "sqlite:"): the file; no options.
void read_file_target(connection_config& cfg, std::string_view rest, const std::string& shown) {
    if (rest.starts_with("//")) {
        rest.remove_prefix(2);
        if (!rest.starts_with("/"))
            bad_url(shown, "sqlite:// must be followed by an absolute path (sqlite:///path)");
    }
    const auto query = rest.find('?');
    cfg.path = percent_decode(rest.substr(0, query), shown);
    if (cfg.path.empty())
        bad_url(shown, "no database file path");
    if (query != std::string_view::npos)
        bad_url(shown, "sqlite URLs take no options");
}

/// host[:port] or [IPv6][:port], several separated by commas (a replicated database: the
/// session goes to the one that accepts writes); cfg.port is the default port.
void read_endpoints(connection_config& cfg, std::string_view authority, const std::string& shown) {
    const int default_port = cfg.port;
    while (true) {
        const auto comma = authority.find(',');
        cfg.endpoints.push_back(parse_endpoint(authority.substr(0, comma), default_port, shown));
        if (comma == std::string_view::npos)
            break;
        authority = authority.substr(comma + 1);
    }
    if (cfg.endpoints.size() > max_endpoints)
        bad_url(shown, "more than " + std::to_string(max_endpoints) + " hosts");
    cfg.host = cfg.endpoints.front().host;
    cfg.port = cfg.endpoints.front().port;
}

/// key=value&key=value: the connection options passed to the client library.
void read_options(connection_config& cfg, std::string_view query, const std::string& shown) {
    while (!query.empty()) {
        const auto amp = query.find('&');
        const auto item = query.substr(0, amp);
        query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
        if (item.empty())
            continue;
        const auto eq = item.find('=');
        if (eq == std::string_view::npos || eq == 0)
            bad_url(shown, "options must be key=value");
        cfg.options.emplace_back(percent_decode(item.substr(0, eq), shown),
                                 percent_decode(item.substr(eq + 1), shown));
    }
}

/// user:password@hosts/database?options (`rest`: after "scheme://").
void read_server_target(connection_config& cfg, std::string_view rest, const std::string& shown) {
    // Split off ?query first, then /database, leaving user:password@host:port.
    std::string_view query;
    if (const auto q = rest.find('?'); q != std::string_view::npos) {
        query = rest.substr(q + 1);
        rest = rest.substr(0, q);
    }
    std::string_view authority = rest;
    if (const auto slash = rest.find('/'); slash != std::string_view::npos) {
        authority = rest.substr(0, slash);
        cfg.database = percent_decode(rest.substr(slash + 1), shown);
    }
    if (cfg.database.empty())
        bad_url(shown, "no database name after the host");
    if (cfg.database.find('/') != std::string::npos)
        bad_url(shown, "database name contains '/'");
    if (const auto at = authority.rfind('@'); at != std::string_view::npos) {
        const auto userinfo = authority.substr(0, at);
        authority = authority.substr(at + 1);
        const auto c = userinfo.find(':');
        cfg.user = percent_decode(userinfo.substr(0, c), shown);
        if (c != std::string_view::npos)
            cfg.password = percent_decode(userinfo.substr(c + 1), shown);
    }
    read_endpoints(cfg, authority, shown);
    read_options(cfg, query, shown);
}

} // namespace

void apply_backend_options(connection_config& config, const connect_options& options) {
    config.create_file = options.create_sqlite_file;
}

connection_config parse_url(std::string_view url) {
    connection_config cfg;
    cfg.redacted_url = redact(url);
    const std::string& shown = cfg.redacted_url;
    if (url.empty())
        bad_url(shown, "it is empty");
    const auto colon = url.find(':');
    if (colon == std::string_view::npos)
        bad_url(shown, "no scheme");
    const auto scheme = url.substr(0, colon);
    if (scheme == "sqlite") {
        cfg.kind = backend_kind::sqlite;
        read_file_target(cfg, url.substr(colon + 1), shown);
        return cfg;
    }
    if (scheme == "postgresql" || scheme == "postgres") {
        cfg.kind = backend_kind::postgresql;
        cfg.port = 5432;
    } else if (scheme == "mysql" || scheme == "mariadb") {
        cfg.kind = backend_kind::mysql;
        cfg.port = 3306;
    } else {
        bad_url(shown, "unknown scheme \"" + std::string(scheme.substr(0, 20)) +
                           "\" (use postgresql, mysql, mariadb or sqlite)");
    }
    if (url.substr(colon, 3) != "://")
        bad_url(shown, "expected \"://\" after the scheme");
    read_server_target(cfg, url.substr(colon + 3), shown);
    return cfg;
}

std::string redact_passwords(std::string message) {
    // Every URL in the text ("scheme://..." up to the next blank or quote): its password field.
    const auto url_char = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '+' || c == '-' || c == '.';
    };
    const auto ends_url = [](char c) {
        return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '"' || c == '\'' ||
               c == '`' || c == '<' || c == '>';
    };
    for (auto mark = message.find("://"); mark != std::string::npos;) {
        auto begin = mark;
        while (begin > 0 && url_char(message[begin - 1]))
            --begin;
        auto end = mark + 3;
        while (end < message.size() && !ends_url(message[end]))
            ++end;
        const std::string_view found = std::string_view(message).substr(begin, end - begin);
        const std::string shown = begin < mark ? redact(found) : std::string(found);
        message.replace(begin, end - begin, shown);
        mark = message.find("://", begin + shown.size());
    }
    // libpq-style connection strings: password=secret, password='se cret' (\' and \\ escaped).
    constexpr std::string_view key = "password=";
    for (auto at = message.find(key); at != std::string::npos; at = message.find(key, at + 1)) {
        if (at > 0 && (url_char(message[at - 1]) || message[at - 1] == '_'))
            continue; // part of a longer word (my_password=)
        const auto value = at + key.size();
        auto end = value;
        if (end < message.size() && message[end] == '\'') {
            for (++end; end < message.size() && message[end] != '\''; ++end)
                if (message[end] == '\\')
                    ++end;
            end = std::min(end + 1, message.size());
        } else {
            while (end < message.size() && !ends_url(message[end]) && message[end] != '&' &&
                   message[end] != ';')
                ++end;
        }
        if (message.compare(value, end - value, "***") != 0)
            message.replace(value, end - value, "***");
    }
    return message;
}

} // namespace sqlock::detail

namespace sqlock {

std::string url_without_password(std::string_view url) {
    const auto span = detail::password_span(url);
    if (!span)
        return std::string(url);
    // Drop the ':' before the password too: user@host.
    return std::string(url.substr(0, span->first - 1)) +
           std::string(url.substr(span->first + span->second));
}

} // namespace sqlock
