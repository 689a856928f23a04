#include "proxy/records.hpp"

#include "request/json_string.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <unistd.h>

namespace modelproxy::proxy {

namespace {

// The most characters std::to_chars writes for an int64: "-9223372036854775808".
constexpr std::size_t kNumberBound = 20;

// A record line is written in two passes over the same fill() below: Bound
// adds up the most bytes each piece can take, Writer then writes the pieces
// with a raw cursor into a buffer that big. One fill() drives both, so the
// bound cannot drift from the text. Appending piece by piece to a
// std::string cost about 30 capacity checks and calls per line; this is one
// size check per line, and each key with its punctuation is one fixed-size
// copy of a literal (callgrind: a request's two lines went from 6.7k to
// 1.5k instructions).
class Bound {
public:
    template <std::size_t N>
    void text(const char (&)[N]) { size += N - 1; }
    // Escaped worst case, or "null" when empty.
    void str(std::string_view value) { size += request::json_string_bound(value.size()) + 2; }
    // Quoted, or "null" when empty.
    void word(std::string_view value) { size += value.size() + 4; }
    void num(std::int64_t) { size += kNumberBound; }
    template <class T>
    void num(const std::optional<T>&) { size += kNumberBound; }
    void boolean(bool) { size += 5; }

    std::size_t size = 0;
};

class Writer {
public:
    explicit Writer(char* out) : p_(out) {}

    template <std::size_t N>
    void text(const char (&literal)[N]) {
        std::memcpy(p_, literal, N - 1);
        p_ += N - 1;
    }
    // A string from outside (a client's request id, a model name): escaped.
    void str(std::string_view value) {
        if (value.empty()) return text("null");
        p_ = request::write_json_string(p_, value);
    }
    // One of the proxy's own words (an event, a decision, a class, a rule,
    // a code, the digest's hex): nothing to escape, so no check.
    void word(std::string_view value) {
        if (value.empty()) return text("null");
        *p_++ = '"';
        p_ = std::copy(value.begin(), value.end(), p_);
        *p_++ = '"';
    }
    void num(std::int64_t value) { p_ = std::to_chars(p_, p_ + kNumberBound, value).ptr; }
    template <class T>
    void num(const std::optional<T>& value) {
        if (value) return num(static_cast<std::int64_t>(*value));
        text("null");
    }
    void boolean(bool value) {
        if (value) return text("true");
        text("false");
    }
    char* end() const { return p_; }

private:
    char* p_;
};

template <class Out>
void fill(Out& out, const AttemptRecord& r) {
    out.text(R"({"event":"attempt","request_id":)");
    out.str(r.request_id);
    out.text(R"(,"route":)");
    out.str(r.route);
    out.text(R"(,"model":)");
    out.str(r.model);
    out.text(R"(,"attempt":)");
    out.num(r.attempt);
    out.text(R"(,"status":)");
    out.num(r.status);
    out.text(R"(,"class":)");
    out.word(r.error_class);
    out.text(R"(,"code":)");
    out.word(r.code);
    out.text(R"(,"timeout_source":)");
    out.word(r.timeout_source);
    out.text(R"(,"rule":)");
    out.word(r.rule);
    out.text(R"(,"decision":)");
    out.word(r.decision);
    out.text(R"(,"delay_ms":)");
    out.num(r.delay_ms);
    out.text(R"(,"remaining_ms":)");
    out.num(r.remaining_ms);
    out.text(R"(,"digest":)");
    out.word(r.digest);
    out.text(R"(,"candidate":)");
    out.num(r.candidate);
    out.text(R"(,"resume_offset":)");
    out.num(r.resume_offset);
    if (r.accepted_models) {
        out.text(R"(,"answered_model":)");
        out.str(r.answered_model);
        out.text(R"(,"accepted_models":[)");
        for (std::size_t i = 0; i < r.accepted_models->size(); ++i) {
            if (i > 0) out.text(",");
            out.str((*r.accepted_models)[i]);
        }
        out.text("]");
    }
    out.text("}\n");
}

template <class Out>
void fill(Out& out, const TurnRecord& r) {
    out.text(R"({"event":"turn","request_id":)");
    out.str(r.request_id);
    out.text(R"(,"route":)");
    out.str(r.route);
    out.text(R"(,"model":)");
    out.str(r.model);
    out.text(R"(,"attempts":)");
    out.num(r.attempts);
    out.text(R"(,"provider_retries":)");
    out.num(r.attempts > 1 ? r.attempts - 1 : 0);
    out.text(R"(,"outcome":)");
    out.word(r.outcome);
    out.text(R"(,"class":)");
    out.word(r.error_class);
    out.text(R"(,"code":)");
    out.word(r.code);
    out.text(R"(,"bound":)");
    out.word(r.bound);
    out.text(R"(,"status":)");
    out.num(r.status);
    out.text(R"(,"stream":)");
    out.boolean(r.stream);
    out.text(R"(,"published":)");
    out.boolean(r.published);
    out.text(R"(,"fallback_from":)");
    out.str(r.fallback_from);
    out.text(R"(,"duration_ms":)");
    out.num(r.duration_ms);
    out.text(R"(,"ttft_ms":)");
    out.num(r.ttft_ms);
    out.text(R"(,"resumed":)");
    out.num(r.resumed);
    out.text("}\n");
}

template <class Out>
void fill(Out& out, const BreakerRecord& r) {
    out.text(R"({"event":"breaker","route":)");
    out.str(r.route);
    out.text(R"(,"model":)");
    out.str(r.model);
    out.text(R"(,"from":)");
    out.word(r.from);
    out.text(R"(,"to":)");
    out.word(r.to);
    out.text(R"(,"reason":)");
    out.word(r.reason);
    out.text(R"(,"open_ms":)");
    out.num(r.open_ms);
    out.text("}\n");
}

template <class Record>
std::size_t line_bound(const Record& r) {
    Bound bound;
    fill(bound, r);
    return bound.size;
}

// Writes the line at `out`, which has room for line_bound(r) bytes.
template <class Record>
char* write_line(char* out, const Record& r) {
    Writer writer(out);
    fill(writer, r);
    return writer.end();
}

// One reused line buffer per thread (workers and the control thread). It
// only grows, and never needs zero-filling (a std::string's resize would), so
// a steady state writes its records without allocating.
class LineBuffer {
public:
    char* room(std::size_t bound) {
        if (bound > capacity_) {
            capacity_ = std::max(bound, 2 * capacity_);
            data_ = std::make_unique_for_overwrite<char[]>(capacity_);
        }
        return data_.get();
    }

private:
    std::unique_ptr<char[]> data_;
    std::size_t capacity_ = 0;
};

thread_local LineBuffer line_buffer;

// The records' lines, one after the other, in the thread's line buffer
// (valid until this thread's next call).
template <class... Records>
std::string_view lines(const Records&... records) {
    char* const start = line_buffer.room((line_bound(records) + ...));
    char* end = start;
    ((end = write_line(end, records)), ...);
    return {start, static_cast<std::size_t>(end - start)};
}

}  // namespace

std::string to_json_line(const AttemptRecord& r) { return std::string(lines(r)); }

std::string to_json_line(const TurnRecord& r) { return std::string(lines(r)); }

void RecordLog::write(const AttemptRecord& r) { write(lines(r)); }

void RecordLog::write(const TurnRecord& r) { write(lines(r)); }

void RecordLog::write(const BreakerRecord& r) { write(lines(r)); }

std::string to_json_line(const BreakerRecord& r) { return std::string(lines(r)); }

void RecordLog::write(const AttemptRecord& attempt, const TurnRecord& turn) { write(lines(attempt, turn)); }

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
