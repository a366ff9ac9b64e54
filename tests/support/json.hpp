// A small strict JSON reader for tests of the CLI's --json outputs (RFC 8259 subset: no
// surrogate pairs in \u escapes beyond the BMP, which sqlock never emits).
#pragma once

#include <cctype>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace test::json {

struct value;
using object = std::map<std::string, value>;
using array = std::vector<value>;

struct value {
    std::variant<std::nullptr_t, bool, double, std::string, std::shared_ptr<array>,
                 std::shared_ptr<object>>
        data;
    bool is_object() const { return std::holds_alternative<std::shared_ptr<object>>(data); }
    bool is_array() const { return std::holds_alternative<std::shared_ptr<array>>(data); }
    bool is_string() const { return std::holds_alternative<std::string>(data); }
    bool is_number() const { return std::holds_alternative<double>(data); }
    bool is_bool() const { return std::holds_alternative<bool>(data); }
    const object& obj() const { return *std::get<std::shared_ptr<object>>(data); }
    const array& arr() const { return *std::get<std::shared_ptr<array>>(data); }
    const std::string& str() const { return std::get<std::string>(data); }
    double num() const { return std::get<double>(data); }
    bool boolean() const { return std::get<bool>(data); }
    const value& operator[](const std::string& key) const { return obj().at(key); }
};

class parser {
public:
    explicit parser(std::string_view text) : m_text(text) {}

    value parse_document() {
        value v = parse_value();
        skip_space();
        if (m_pos != m_text.size())
            fail("trailing characters");
        return v;
    }

private:
    [[noreturn]] void fail(const std::string& why) const {
        throw std::runtime_error("JSON: " + why + " at offset " + std::to_string(m_pos));
    }
    void skip_space() {
        while (m_pos < m_text.size() && std::isspace(static_cast<unsigned char>(m_text[m_pos])))
            ++m_pos;
    }
    bool consume(std::string_view token) {
        if (m_text.substr(m_pos, token.size()) != token)
            return false;
        m_pos += token.size();
        return true;
    }
    void expect(char c) {
        skip_space();
        if (m_pos >= m_text.size() || m_text[m_pos] != c)
            fail(std::string("expected '") + c + "'");
        ++m_pos;
    }
    value parse_value() {
        skip_space();
        if (m_pos >= m_text.size())
            fail("unexpected end");
        const char c = m_text[m_pos];
        if (c == '{')
            return parse_object();
        if (c == '[')
            return parse_array();
        if (c == '"')
            return value{parse_string()};
        if (consume("true"))
            return value{true};
        if (consume("false"))
            return value{false};
        if (consume("null"))
            return value{nullptr};
        return value{parse_number()};
    }
    value parse_object() {
        auto o = std::make_shared<object>();
        expect('{');
        skip_space();
        if (consume("}"))
            return value{o};
        for (;;) {
            skip_space();
            auto key = parse_string();
            expect(':');
            if (!o->emplace(key, parse_value()).second)
                fail("duplicate key " + key);
            skip_space();
            if (consume("}"))
                return value{o};
            expect(',');
        }
    }
    value parse_array() {
        auto a = std::make_shared<array>();
        expect('[');
        skip_space();
        if (consume("]"))
            return value{a};
        for (;;) {
            a->push_back(parse_value());
            skip_space();
            if (consume("]"))
                return value{a};
            expect(',');
        }
    }
    std::string parse_string() {
        if (m_pos >= m_text.size() || m_text[m_pos] != '"')
            fail("expected a string");
        ++m_pos;
        std::string out;
        while (m_pos < m_text.size() && m_text[m_pos] != '"') {
            char c = m_text[m_pos++];
            if (static_cast<unsigned char>(c) < 0x20)
                fail("control character in string");
            if (c == '\\') {
                if (m_pos >= m_text.size())
                    fail("bad escape");
                const char e = m_text[m_pos++];
                switch (e) {
                case '"':
                    out += '"';
                    break;
                case '\\':
                    out += '\\';
                    break;
                case '/':
                    out += '/';
                    break;
                case 'b':
                    out += '\b';
                    break;
                case 'f':
                    out += '\f';
                    break;
                case 'n':
                    out += '\n';
                    break;
                case 'r':
                    out += '\r';
                    break;
                case 't':
                    out += '\t';
                    break;
                case 'u': {
                    const auto code = std::stoul(std::string(m_text.substr(m_pos, 4)), nullptr, 16);
                    m_pos += 4;
                    if (code < 0x80) {
                        out += static_cast<char>(code);
                    } else if (code < 0x800) {
                        out += static_cast<char>(0xC0 | (code >> 6));
                        out += static_cast<char>(0x80 | (code & 0x3F));
                    } else {
                        out += static_cast<char>(0xE0 | (code >> 12));
                        out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
                        out += static_cast<char>(0x80 | (code & 0x3F));
                    }
                    break;
                }
                default:
                    fail("bad escape");
                }
            } else {
                out += c;
            }
        }
        if (m_pos >= m_text.size())
            fail("unterminated string");
        ++m_pos;
        return out;
    }
    double parse_number() {
        const auto start = m_pos;
        if (m_pos < m_text.size() && m_text[m_pos] == '-')
            ++m_pos;
        while (m_pos < m_text.size() &&
               (std::isdigit(static_cast<unsigned char>(m_text[m_pos])) || m_text[m_pos] == '.' ||
                m_text[m_pos] == 'e' || m_text[m_pos] == 'E' || m_text[m_pos] == '+' ||
                m_text[m_pos] == '-'))
            ++m_pos;
        if (start == m_pos)
            fail("expected a value");
        return std::stod(std::string(m_text.substr(start, m_pos - start)));
    }

    std::string_view m_text;
    std::size_t m_pos = 0;
};

inline value parse(std::string_view text) {
    return parser(text).parse_document();
}

} // namespace test::json
