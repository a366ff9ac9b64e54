#include "cli.hpp"

#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>

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

namespace {

/// nlohmann::json's own text for a scalar (or a key). Bytes that are not UTF-8 (names and owners
/// are binary in some backends; an actor comes from argv) become U+FFFD instead of an exception.
std::string scalar_text(const nlohmann::ordered_json& v) {
    return v.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

} // namespace

std::string json_line(const nlohmann::ordered_json& v) {
    if (!v.is_object() && !v.is_array())
        return scalar_text(v);
    std::string out = v.is_object() ? "{" : "[";
    bool first = true;
    for (auto it = v.begin(); it != v.end(); ++it) {
        out += first ? "" : ", ";
        first = false;
        if (v.is_object())
            out += scalar_text(it.key()) + ": ";
        out += json_line(it.value());
    }
    out += v.is_object() ? "}" : "]";
    return out;
}

std::string json_rows(const nlohmann::ordered_json& rows) {
    std::string out = "[";
    for (const auto& row : rows)
        out += (out.size() > 1 ? ",\n " : "\n ") + json_line(row);
    out += rows.empty() ? "]\n" : "\n]\n";
    return out;
}

} // namespace sqlock::cli
