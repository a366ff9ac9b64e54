#include "cli.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace sqlock::cli {

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) {
    if (text.empty())
        return std::nullopt;
    std::size_t unit_pos = 0;
    while (unit_pos < text.size() &&
           ((text[unit_pos] >= '0' && text[unit_pos] <= '9') || text[unit_pos] == '.'))
        ++unit_pos;
    const auto number = text.substr(0, unit_pos);
    const auto unit = text.substr(unit_pos);
    if (number.empty())
        return std::nullopt;
    double value = 0;
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (ec != std::errc{} || end != number.data() + number.size() || !std::isfinite(value))
        return std::nullopt;
    double scale = 0;
    if (unit == "ms")
        scale = 1;
    else if (unit == "s" || unit.empty())
        scale = 1000;
    else if (unit == "m")
        scale = 60'000;
    else if (unit == "h")
        scale = 3'600'000;
    else if (unit == "d")
        scale = 86'400'000;
    else
        return std::nullopt;
    const double ms = value * scale;
    if (ms > 1e15)
        return std::nullopt;
    return std::chrono::milliseconds(static_cast<long long>(std::llround(ms)));
}

std::string json_quote(std::string_view s) {
    std::string out = "\"";
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        switch (c) {
        case '"':
            out += "\\\"";
            break;
        case '\\':
            out += "\\\\";
            break;
        case '\n':
            out += "\\n";
            break;
        case '\r':
            out += "\\r";
            break;
        case '\t':
            out += "\\t";
            break;
        default:
            if (c < 0x20) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\u%04x", c);
                out += buf;
            } else {
                out += ch; // names are validated UTF-8, so bytes >= 0x80 pass through
            }
        }
    }
    out += '"';
    return out;
}

} // namespace sqlock::cli
