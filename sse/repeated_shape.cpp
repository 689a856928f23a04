#include "sse/repeated_shape.hpp"

#include <simdjson.h>

#include <algorithm>
#include <cstring>

namespace modelproxy::sse {

namespace {

bool free_key(std::string_view key) {
    return std::find(std::begin(RepeatedShape::free_keys), std::end(RepeatedShape::free_keys), key) !=
           std::end(RepeatedShape::free_keys);
}

bool digit(char c) { return c >= '0' && c <= '9'; }

// A string value's bytes between its quotes: no quote, backslash or control
// byte, valid UTF-8.
bool plain_string(std::string_view s) {
    bool ascii = true;
    for (const char c : s) {
        const auto b = static_cast<unsigned char>(c);
        if (b == '"' || b == '\\' || b < 0x20) return false;
        ascii = ascii && b < 0x80;
    }
    return ascii || simdjson::validate_utf8(s.data(), s.size());
}

}  // namespace

bool RepeatedShape::learn(std::string_view line, std::string_view text) {
    known_ = false;
    slots_.clear();
    if (text.empty() || std::memchr(line.data(), '\\', line.size()) != nullptr) return false;
    // Without a backslash the quotes alternate open and close; the line is
    // valid JSON (the Inspector parsed it), so every open quote has its close
    // and the brackets outside strings nest.
    std::size_t found = 0;
    Slot answer{};
    int depth = 0;
    bool expect_key = false;   // at depth 1: the next string is a member's key
    std::string_view key;      // the top-level member whose value comes next
    for (std::size_t at = 0; at < line.size(); ++at) {
        const char c = line[at];
        if (c == '"') {
            const std::size_t start = at + 1;
            const void* e = std::memchr(line.data() + start, '"', line.size() - start);
            if (!e) return false;  // not valid JSON: never learned from
            const std::size_t end = static_cast<std::size_t>(static_cast<const char*>(e) - line.data());
            const std::string_view token = line.substr(start, end - start);
            if (depth == 1 && expect_key) {
                key = token;
                expect_key = false;
            } else if (depth == 1 && free_key(key)) {
                slots_.push_back({start, end, Kind::string});
            }
            if (token == text) {
                if (++found > 1) return false;  // ambiguous: which token is T's?
                answer = {start, end, Kind::answer};
            }
            at = end;
        } else if (c == '{' || c == '[') {
            ++depth;
            if (depth == 1) expect_key = c == '{';
        } else if (c == '}' || c == ']') {
            --depth;
        } else if (c == ',' && depth == 1) {
            expect_key = true;
        } else if (depth == 1 && !expect_key && (c == '-' || digit(c))) {
            // The whole number token; only an integer's can change.
            std::size_t end = at + 1;
            bool integer = true;
            for (; end < line.size(); ++end) {
                const char n = line[end];
                if (n == '.' || n == 'e' || n == 'E' || n == '+' || n == '-') {
                    integer = false;
                } else if (!digit(n)) {
                    break;
                }
            }
            if (integer && free_key(key)) slots_.push_back({at, end, Kind::integer});
            at = end - 1;
        }
    }
    if (found != 1) return false;
    for (const Slot& slot : slots_)
        if (slot.open == answer.open) return false;  // never: no rule reads a free member
    const auto at = slots_.insert(std::upper_bound(slots_.begin(), slots_.end(), answer,
                                                   [](const Slot& a, const Slot& b) { return a.open < b.open; }),
                                  answer);
    answer_ = static_cast<std::size_t>(at - slots_.begin());
    line_.assign(line);
    known_ = true;
    return true;
}

std::optional<std::string_view> RepeatedShape::match(std::string_view line) const {
    if (!known_) return std::nullopt;
    // Most often only the answer text changed: the bytes before and after it
    // are L0's, which two compares show (the segments below would make five
    // or more).
    const Slot& t = slots_[answer_];
    const std::size_t suffix = line_.size() - t.close;
    if (line.size() > t.open + suffix && std::memcmp(line.data(), line_.data(), t.open) == 0 &&
        std::memcmp(line.data() + line.size() - suffix, line_.data() + t.close, suffix) == 0) {
        const std::string_view value = line.substr(t.open, line.size() - suffix - t.open);
        if (!plain_string(value)) return std::nullopt;  // parsed whole (a miss is always safe)
        return value;
    }
    std::string_view answer;
    std::size_t pos = 0;    // in `line`
    std::size_t fixed = 0;  // the next fixed segment's start in L0
    const auto segment = [&](std::size_t until) {
        const std::size_t n = until - fixed;
        if (line.size() - pos < n || std::memcmp(line.data() + pos, line_.data() + fixed, n) != 0) return false;
        pos += n;
        return true;
    };
    for (const Slot& slot : slots_) {
        if (!segment(slot.open)) return std::nullopt;
        if (slot.kind == Kind::integer) {
            // -?(0|[1-9][0-9]*); what follows must be the next segment.
            std::size_t end = pos;
            if (end < line.size() && line[end] == '-') ++end;
            if (end == line.size() || !digit(line[end])) return std::nullopt;
            if (line[end++] != '0')
                while (end < line.size() && digit(line[end])) ++end;
            pos = end;
        } else {
            const void* q = std::memchr(line.data() + pos, '"', line.size() - pos);
            if (!q) return std::nullopt;
            const std::size_t end = static_cast<std::size_t>(static_cast<const char*>(q) - line.data());
            const std::string_view value = line.substr(pos, end - pos);
            if (slot.kind == Kind::answer) {
                if (value.empty() || !plain_string(value)) return std::nullopt;
                answer = value;
            } else if (value != std::string_view(line_).substr(slot.open, slot.close - slot.open) &&
                       !plain_string(value)) {
                return std::nullopt;  // a changed value is checked; an unchanged one was in L0
            }
            pos = end;
        }
        fixed = slot.close;
    }
    if (!segment(line_.size()) || pos != line.size()) return std::nullopt;
    return answer;
}

}  // namespace modelproxy::sse
