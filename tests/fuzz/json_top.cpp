#include "json_top.hpp"

#include <cstdint>

namespace modelproxy::fuzz {

namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::size_t skip_ws(std::string_view t, std::size_t i) {
    while (i < t.size() && is_ws(t[i])) ++i;
    return i;
}

// t[i] is a string's opening quote; returns the index after its closing one.
std::size_t skip_string(std::string_view t, std::size_t i) {
    for (++i; i < t.size(); ++i) {
        if (t[i] == '\\') ++i;
        else if (t[i] == '"') return i + 1;
    }
    return t.size();
}

// The index after the value starting at t[i].
std::size_t skip_value(std::string_view t, std::size_t i) {
    if (t[i] == '"') return skip_string(t, i);
    if (t[i] == '{' || t[i] == '[') {
        int depth = 0;
        while (i < t.size()) {
            const char c = t[i];
            if (c == '"') {
                i = skip_string(t, i);
                continue;
            }
            if (c == '{' || c == '[') ++depth;
            if (c == '}' || c == ']') --depth;
            ++i;
            if (depth == 0) return i;
        }
        return i;
    }
    while (i < t.size() && !is_ws(t[i]) && t[i] != ',' && t[i] != '}' && t[i] != ']') ++i;
    return i;
}

int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return 0;
}

std::uint32_t unit_at(std::string_view s, std::size_t i) {
    std::uint32_t v = 0;
    for (std::size_t k = 0; k < 4 && i + k < s.size(); ++k) v = v * 16 + static_cast<std::uint32_t>(hex(s[i + k]));
    return v;
}

void put_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

}  // namespace

std::string decode_json_string(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '\\' || i + 1 >= s.size()) {
            out += s[i];
            continue;
        }
        const char e = s[++i];
        switch (e) {
            case 'b': out += '\b'; break;
            case 'f': out += '\f'; break;
            case 'n': out += '\n'; break;
            case 'r': out += '\r'; break;
            case 't': out += '\t'; break;
            case 'u': {
                std::uint32_t cp = unit_at(s, i + 1);
                i += 4;
                const bool high = cp >= 0xD800 && cp <= 0xDBFF;
                if (high && s.substr(i + 1, 2) == "\\u") {
                    const std::uint32_t low = unit_at(s, i + 3);
                    if (low >= 0xDC00 && low <= 0xDFFF) {
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                        i += 6;
                    }
                }
                put_utf8(out, cp >= 0xD800 && cp <= 0xDFFF ? 0xFFFD : cp);
                break;
            }
            default: out += e; break;  // '"', '\\', '/'
        }
    }
    return out;
}

TopLevel top_level(std::string_view t) {
    TopLevel top;
    std::size_t i = skip_ws(t, 0);
    if (i >= t.size() || t[i] != '{') return top;
    top.object = true;
    i = skip_ws(t, i + 1);
    while (i < t.size() && t[i] == '"') {
        const std::size_t key_end = skip_string(t, i);
        TopMember m;
        m.key = decode_json_string(t.substr(i + 1, key_end - i - 2));
        i = skip_ws(t, key_end);
        i = skip_ws(t, i + 1);  // the ':'
        m.value_offset = i;
        const std::size_t value_end = skip_value(t, i);
        m.value = t.substr(i, value_end - i);
        top.members.push_back(std::move(m));
        i = skip_ws(t, value_end);
        if (i < t.size() && t[i] == ',') i = skip_ws(t, i + 1);
    }
    return top;
}

}  // namespace modelproxy::fuzz
