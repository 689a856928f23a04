#include "proxy/records.hpp"

#include "proxy/json_string.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace modelproxy::proxy {

namespace {

// Writes one record's JSON object straight into `out`. The keys are this
// file's constants and the numbers come from std::to_chars; string values go
// through append_json_string (Boost.JSON's escaping), so a client's request
// id cannot break the line. Building a boost::json::object first cost
// about a tenth of a request's user CPU (key hashing, lookups, the walk back
// out); this writes each byte once and allocates nothing beyond `out`'s growth.
class LineWriter {
public:
    explicit LineWriter(std::string& out) : out_(out) { out_.push_back('{'); }
    LineWriter(const LineWriter&) = delete;
    LineWriter& operator=(const LineWriter&) = delete;

    void str(std::string_view key, std::string_view value) {
        if (value.empty()) return null(key);
        name(key);
        append_json_string(out_, value);
    }
    // One of the proxy's own words (an event, a decision, a class, a rule,
    // a code, the digest's hex): nothing to escape, so no check.
    void word(std::string_view key, std::string_view value) {
        if (value.empty()) return null(key);
        name(key);
        out_.push_back('"');
        out_.append(value);
        out_.push_back('"');
    }
    void num(std::string_view key, std::int64_t value) {
        name(key);
        char digits[24];
        auto [end, ec] = std::to_chars(digits, digits + sizeof digits, value);
        out_.append(digits, end);
    }
    template <class T>
    void num(std::string_view key, const std::optional<T>& value) {
        if (value) {
            num(key, static_cast<std::int64_t>(*value));
        } else {
            null(key);
        }
    }
    void boolean(std::string_view key, bool value) {
        name(key);
        out_.append(value ? "true" : "false");
    }
    void null(std::string_view key) {
        name(key);
        out_.append("null");
    }
    void end() { out_.append("}\n"); }

private:
    // `,"key":` in one append; the key is a constant of this file, with
    // nothing to escape.
    void name(std::string_view key) {
        char text[40];
        char* p = text;
        if (!first_) *p++ = ',';
        first_ = false;
        *p++ = '"';
        p = std::copy(key.begin(), key.end(), p);
        *p++ = '"';
        *p++ = ':';
        out_.append(text, p);
    }

    std::string& out_;
    bool first_ = true;
};

void fill(LineWriter& w, const AttemptRecord& r) {
    w.word("event", "attempt");
    w.str("request_id", r.request_id);
    w.str("route", r.route);
    w.str("model", r.model);
    w.num("attempt", r.attempt);
    w.num("status", r.status);
    w.word("class", r.error_class);
    w.word("code", r.code);
    w.word("timeout_source", r.timeout_source);
    w.word("rule", r.rule);
    w.word("decision", r.decision);
    w.num("delay_ms", r.delay_ms);
    w.num("remaining_ms", r.remaining_ms);
    w.word("digest", r.digest);
    w.end();
}

void fill(LineWriter& w, const TurnRecord& r) {
    w.word("event", "turn");
    w.str("request_id", r.request_id);
    w.str("route", r.route);
    w.str("model", r.model);
    w.num("attempts", r.attempts);
    w.num("provider_retries", r.attempts > 1 ? r.attempts - 1 : 0);
    w.word("outcome", r.outcome);
    w.word("class", r.error_class);
    w.word("code", r.code);
    w.word("bound", r.bound);
    w.num("status", r.status);
    w.boolean("stream", r.stream);
    w.boolean("published", r.published);
    w.str("fallback_from", r.fallback_from);
    w.num("duration_ms", r.duration_ms);
    w.num("ttft_ms", r.ttft_ms);
    w.end();
}

// One reused line buffer per thread (workers and the control thread).
std::string& line_buffer() {
    thread_local std::string buffer;
    buffer.clear();
    return buffer;
}

}  // namespace

void append_json_line(std::string& out, const AttemptRecord& r) {
    LineWriter w(out);
    fill(w, r);
}

void append_json_line(std::string& out, const TurnRecord& r) {
    LineWriter w(out);
    fill(w, r);
}

std::string to_json_line(const AttemptRecord& r) {
    std::string line;
    append_json_line(line, r);
    return line;
}

std::string to_json_line(const TurnRecord& r) {
    std::string line;
    append_json_line(line, r);
    return line;
}

void RecordLog::write(const AttemptRecord& r) {
    std::string& line = line_buffer();
    append_json_line(line, r);
    write(line);
}

void RecordLog::write(const TurnRecord& r) {
    std::string& line = line_buffer();
    append_json_line(line, r);
    write(line);
}

void RecordLog::write(const AttemptRecord& attempt, const TurnRecord& turn) {
    std::string& lines = line_buffer();
    append_json_line(lines, attempt);
    append_json_line(lines, turn);
    write(lines);
}

RecordLog::~RecordLog() {
    if (fd_ > 2) ::close(fd_);
}

std::optional<std::string> RecordLog::open(const std::string& path) {
    path_ = path;
    if (path.empty()) return std::nullopt;
    return reopen();
}

std::optional<std::string> RecordLog::reopen() {
    if (path_.empty()) return std::nullopt;
    int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    if (fd < 0) return "cannot open log file " + path_ + ": " + std::strerror(errno);
    std::lock_guard lock(mutex_);
    if (fd_ > 2) ::close(fd_);
    fd_ = fd;
    return std::nullopt;
}

void RecordLog::write(std::string_view line) {
    std::lock_guard lock(mutex_);
    const char* p = line.data();
    std::size_t left = line.size();
    while (left > 0) {
        ssize_t n = ::write(fd_, p, left);
        if (n < 0) {
            if (errno == EINTR) continue;
            return;  // a full disk must not stop the proxy; nothing else to do
        }
        p += n;
        left -= static_cast<std::size_t>(n);
    }
}

}  // namespace modelproxy::proxy
