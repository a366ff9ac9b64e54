#include "cli.hpp"

#include <algorithm>
#include <array>
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

namespace {

/// What a command's parser accepts. Every option of a command with a NAME must be listed (an
/// option missing here is still passed on as a flag, but its value would be taken for a word).
struct command_syntax {
    std::string_view command;
    std::string_view missing_name; ///< "" when the command takes no NAME; else its error
    std::vector<std::string_view> value_options;
    std::vector<std::string_view> flags;
};

const std::vector<command_syntax>& syntaxes() {
    static const std::vector<command_syntax> table = {
        {"migrate", "", {}, {"--print", "--status"}},
        {"run",
         "run: missing lock NAME",
         {"--strategy", "--ttl", "--wait", "--grace", "--permits", "--max-readers", "--once-per",
          "--slot", "--skipped-exit"},
         {"--no-renew", "--shared", "--exclusive", "--verbose", "-v"}},
        {"history", "history: missing job NAME", {"--limit"}, {"--json"}},
        {"check", "check: missing job NAME", {"--max-age", "--warn-age"}, {}},
        {"status", "", {"--name"}, {"--json", "--prometheus", "--expired", "--jobs"}},
        {"list", "", {"--name"}, {"--json", "--prometheus", "--expired"}},
        {"reap",
         "",
         {"--older-than", "--settle", "--keep-history", "--batch"},
         {"--dry-run", "--json"}},
        {"release", "release: missing lock NAME", {"--actor", "--permit"}, {"--force", "--json"}},
        {"leader", "leader: missing election NAME", {}, {"--json"}},
    };
    return table;
}

bool listed(const std::vector<std::string_view>& list, std::string_view option) {
    return std::find(list.begin(), list.end(), option) != list.end();
}

bool is_option(std::string_view a) {
    return a.size() > 1 && a[0] == '-';
}

} // namespace

command_args normalize_args(std::string_view command, std::vector<std::string> args) {
    const auto& table = syntaxes();
    const auto it = std::find_if(table.begin(), table.end(),
                                 [&](const command_syntax& s) { return s.command == command; });
    if (it == table.end())
        return {std::move(args), ""};
    const command_syntax& syntax = *it;
    const std::string cmd(command);
    const bool named = !syntax.missing_name.empty();
    command_args out;
    std::vector<std::string> words; // positional arguments
    std::string first_unknown;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        const auto eq = a.find('=');
        if (a.starts_with("--") && eq != std::string::npos && eq > 2) {
            const std::string option = a.substr(0, eq);
            if (listed(syntax.flags, option))
                return {{}, cmd + ": " + option + " takes no value (\"" + a + "\")"};
            if (!listed(syntax.value_options, option) && first_unknown.empty())
                first_unknown = option;
            out.args.push_back(option);
            out.args.push_back(a.substr(eq + 1));
            continue;
        }
        if (listed(syntax.value_options, a)) {
            if (i + 1 >= args.size())
                return {{}, cmd + ": " + a + " needs a value"};
            out.args.push_back(a);
            out.args.push_back(args[++i]); // even one that starts with '-'
            continue;
        }
        if (is_option(a)) {
            if (!listed(syntax.flags, a) && first_unknown.empty())
                first_unknown = a;
            out.args.push_back(a);
            continue;
        }
        if (named)
            words.push_back(a);
        else
            out.args.push_back(a); // the command's own parser says what is wrong with it
    }
    if (!named)
        return out;
    if (words.empty())
        return {{}, std::string(syntax.missing_name)};
    if (words.size() > 1) {
        if (!first_unknown.empty())
            return {{}, cmd + ": unknown option " + first_unknown};
        if (command == "run") {
            std::string cmdline;
            for (std::size_t i = 1; i < words.size(); ++i)
                cmdline += " " + words[i];
            return {{},
                    "run: \"" + escape_control(words[1]) +
                        "\" is not an option; put the command after \"--\": sqlock run " +
                        escape_control(words[0]) + " --" + escape_control(cmdline)};
        }
        return {{}, cmd + ": unexpected argument \"" + escape_control(words[1]) + "\""};
    }
    out.args.insert(out.args.begin(), words.front());
    return out;
}

std::string escape_control(std::string_view text) {
    static constexpr std::array<char, 16> hex = {'0', '1', '2', '3', '4', '5', '6', '7',
                                                 '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'};
    std::string out;
    out.reserve(text.size());
    for (const char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        if (c == '\\')
            out += "\\\\";
        else if (c == '\n')
            out += "\\n";
        else if (c == '\t')
            out += "\\t";
        else if (c == '\r')
            out += "\\r";
        else if (c < 0x20 || c == 0x7f) {
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 0xf];
        } else
            out += ch;
    }
    return out;
}

std::string readable_lock_name(std::string_view internal_name) {
    const auto sep = internal_name.find('\x1f');
    if (sep == std::string_view::npos)
        return escape_control(internal_name);
    return escape_control(internal_name.substr(0, sep)) + " [" +
           escape_control(internal_name.substr(sep + 1)) + "]";
}

std::string readable_message(std::string_view message) {
    std::string out;
    out.reserve(message.size());
    while (!message.empty()) {
        const auto sep = message.find('\x1f');
        const auto before = message.substr(0, sep);
        for (std::size_t i = 0; i < before.size();) { // escape all but backslashes
            const auto next = before.find('\\', i);
            out += escape_control(before.substr(i, next - i));
            if (next == std::string_view::npos)
                break;
            out += '\\';
            i = next + 1;
        }
        if (sep == std::string_view::npos)
            break;
        message.remove_prefix(sep + 1);
        const auto quote = message.find('"');
        const auto role = message.substr(0, quote);
        out += " [" + escape_control(role) + "]";
        message.remove_prefix(role.size());
    }
    return out;
}

} // namespace sqlock::cli
