#include "strict_json.hpp"

#include <cmath>
#include <cstdlib>
#include <string>

namespace modelproxy::fuzz {

std::size_t utf8_length_at(std::string_view s, std::size_t i) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x80) return 1;
    std::size_t n;
    unsigned char lo = 0x80, hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) n = 1;
    else if (b == 0xE0) n = 2, lo = 0xA0;
    else if (b == 0xED) n = 2, hi = 0x9F;
    else if (b >= 0xE1 && b <= 0xEF) n = 2;
    else if (b == 0xF0) n = 3, lo = 0x90;
    else if (b >= 0xF1 && b <= 0xF3) n = 3;
    else if (b == 0xF4) n = 3, hi = 0x8F;
    else return 0;
    if (i + n >= s.size()) return 0;
    for (std::size_t k = 1; k <= n; ++k) {
        const auto c = static_cast<unsigned char>(s[i + k]);
        if (c < (k == 1 ? lo : 0x80) || c > (k == 1 ? hi : 0xBF)) return 0;
    }
    return n + 1;
}

namespace {

class Checker {
public:
    explicit Checker(std::string_view text) : t_(text) {}

    StrictJson run() {
        ws();
        const std::size_t root = pos_;
        const bool root_number = pos_ < t_.size() && (t_[pos_] == '-' || digit(pos_));
        result_.valid = value(1);
        ws();
        if (pos_ != t_.size()) result_.valid = false;
        if (result_.valid && root_number) {
            // simdjson parses a root number as a double of at most 1082 characters.
            const std::string token(t_.substr(root, token_end_ - root));
            result_.unrepresentable_root_number =
                token.size() > 1082 || std::isinf(std::strtod(token.c_str(), nullptr));
        }
        return result_;
    }

private:
    bool digit(std::size_t i) const { return i < t_.size() && t_[i] >= '0' && t_[i] <= '9'; }
    bool at(char c) const { return pos_ < t_.size() && t_[pos_] == c; }
    unsigned char byte(std::size_t i) const { return static_cast<unsigned char>(t_[i]); }

    void ws() {
        while (pos_ < t_.size() && (t_[pos_] == ' ' || t_[pos_] == '\t' || t_[pos_] == '\n' || t_[pos_] == '\r'))
            ++pos_;
    }

    bool value(int depth) {
        if (depth > strict_json_deep) result_.too_deep = true;
        if (depth > strict_json_max_depth || pos_ >= t_.size()) return false;
        switch (t_[pos_]) {
            case '{': return object(depth);
            case '[': return array(depth);
            case '"': return string();
            case 't': return literal("true");
            case 'f': return literal("false");
            case 'n': return literal("null");
            default: return number();
        }
    }

    bool object(int depth) {
        ++pos_;
        ws();
        if (at('}')) return ++pos_, true;
        for (;;) {
            ws();
            if (!at('"') || !string()) return false;
            ws();
            if (!at(':')) return false;
            ++pos_;
            ws();
            if (!value(depth + 1)) return false;
            ws();
            if (at('}')) return ++pos_, true;
            if (!at(',')) return false;
            ++pos_;
        }
    }

    bool array(int depth) {
        ++pos_;
        ws();
        if (at(']')) return ++pos_, true;
        for (;;) {
            ws();
            if (!value(depth + 1)) return false;
            ws();
            if (at(']')) return ++pos_, true;
            if (!at(',')) return false;
            ++pos_;
        }
    }

    bool literal(std::string_view word) {
        if (t_.substr(pos_, word.size()) != word) return false;
        pos_ += word.size();
        return true;
    }

    bool number() {
        if (at('-')) ++pos_;
        if (!digit(pos_)) return false;
        if (at('0')) {
            ++pos_;
        } else {
            while (digit(pos_)) ++pos_;
        }
        if (at('.')) {
            ++pos_;
            if (!digit(pos_)) return false;
            while (digit(pos_)) ++pos_;
        }
        if (at('e') || at('E')) {
            ++pos_;
            if (at('+') || at('-')) ++pos_;
            if (!digit(pos_)) return false;
            while (digit(pos_)) ++pos_;
        }
        token_end_ = pos_;
        return true;
    }

    // Four hex digits at pos_ into out.
    bool hex4(unsigned& out) {
        if (pos_ + 4 > t_.size()) return false;
        out = 0;
        for (int i = 0; i < 4; ++i) {
            const char c = t_[pos_++];
            unsigned v;
            if (c >= '0' && c <= '9') v = static_cast<unsigned>(c - '0');
            else if (c >= 'a' && c <= 'f') v = static_cast<unsigned>(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F') v = static_cast<unsigned>(c - 'A' + 10);
            else return false;
            out = out * 16 + v;
        }
        return true;
    }

    bool escape() {
        if (pos_ >= t_.size()) return false;
        const char c = t_[pos_++];
        switch (c) {
            case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
                return true;
            case 'u': break;
            default: return false;
        }
        unsigned unit = 0;
        if (!hex4(unit)) return false;
        if (unit >= 0xDC00 && unit <= 0xDFFF) {
            result_.lone_surrogate = true;
        } else if (unit >= 0xD800 && unit <= 0xDBFF) {
            // Paired only when \uDC00..\uDFFF follows at once.
            unsigned low = 0;
            const std::size_t mark = pos_;
            if (t_.substr(pos_, 2) == "\\u") {
                pos_ += 2;
                if (!hex4(low)) return false;
                if (low < 0xDC00 || low > 0xDFFF) {
                    result_.lone_surrogate = true;
                    pos_ = mark;  // the second escape is read on its own
                }
            } else {
                result_.lone_surrogate = true;
            }
        }
        return true;
    }

    // One UTF-8 sequence starting with a byte >= 0x80.
    bool utf8() {
        const std::size_t n = utf8_length_at(t_, pos_);
        if (n == 0) return false;
        pos_ += n;
        return true;
    }

    bool string() {
        ++pos_;
        for (;;) {
            if (pos_ >= t_.size()) return false;
            const unsigned char c = byte(pos_);
            if (c == '"') return ++pos_, true;
            if (c < 0x20) return false;
            if (c == '\\') {
                ++pos_;
                if (!escape()) return false;
            } else if (c >= 0x80) {
                if (!utf8()) return false;
            } else {
                ++pos_;
            }
        }
    }

    std::string_view t_;
    std::size_t pos_ = 0;
    std::size_t token_end_ = 0;
    StrictJson result_;
};

}  // namespace

StrictJson check_strict_json(std::string_view text) { return Checker(text).run(); }

}  // namespace modelproxy::fuzz
