#include "proxy/records.hpp"

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serializer.hpp>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace modelproxy::proxy {

namespace {

void put(boost::json::object& o, std::string_view key, std::string_view value) {
    if (value.empty()) {
        o[key] = nullptr;
    } else {
        o[key] = value;
    }
}

template <class T>
void put(boost::json::object& o, std::string_view key, const std::optional<T>& value) {
    if (value) {
        o[key] = *value;
    } else {
        o[key] = nullptr;
    }
}

// Builds one record's object and appends it, with a newline, to `out`. The
// object lives in a monotonic resource over a stack buffer and the serializer
// writes through a stack chunk, so a record costs no heap allocation beyond
// `out`'s growth (and RecordLog reuses one `out` per thread).
template <class Fill>
void append_line(std::string& out, Fill&& fill) {
    unsigned char storage[4096];
    boost::json::monotonic_resource resource(storage, sizeof storage);
    boost::json::object o(&resource);
    o.reserve(20);
    fill(o);
    boost::json::serializer serializer;
    serializer.reset(&o);
    char chunk[1024];
    while (!serializer.done()) out.append(serializer.read(chunk));
    out.push_back('\n');
}

void fill(boost::json::object& o, const AttemptRecord& r) {
    o["event"] = "attempt";
    put(o, "request_id", r.request_id);
    put(o, "route", r.route);
    put(o, "model", r.model);
    o["attempt"] = r.attempt;
    put(o, "status", r.status);
    put(o, "class", r.error_class);
    put(o, "code", r.code);
    put(o, "timeout_source", r.timeout_source);
    put(o, "rule", r.rule);
    put(o, "decision", r.decision);
    o["delay_ms"] = r.delay_ms;
    o["remaining_ms"] = r.remaining_ms;
    put(o, "digest", r.digest);
}

void fill(boost::json::object& o, const TurnRecord& r) {
    o["event"] = "turn";
    put(o, "request_id", r.request_id);
    put(o, "route", r.route);
    put(o, "model", r.model);
    o["attempts"] = r.attempts;
    o["provider_retries"] = r.attempts > 1 ? r.attempts - 1 : 0;
    put(o, "outcome", r.outcome);
    put(o, "class", r.error_class);
    put(o, "code", r.code);
    put(o, "bound", r.bound);
    put(o, "status", r.status);
    o["stream"] = r.stream;
    o["published"] = r.published;
    put(o, "fallback_from", r.fallback_from);
    o["duration_ms"] = r.duration_ms;
    put(o, "ttft_ms", r.ttft_ms);
}

// One reused line buffer per thread (workers and the control thread).
std::string& line_buffer() {
    thread_local std::string buffer;
    buffer.clear();
    return buffer;
}

}  // namespace

void append_json_line(std::string& out, const AttemptRecord& r) {
    append_line(out, [&](boost::json::object& o) { fill(o, r); });
}

void append_json_line(std::string& out, const TurnRecord& r) {
    append_line(out, [&](boost::json::object& o) { fill(o, r); });
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
