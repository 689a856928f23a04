#include "proxy/records.hpp"

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

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

}  // namespace

std::string to_json_line(const AttemptRecord& r) {
    boost::json::object o;
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
    std::string line = boost::json::serialize(o);
    line.push_back('\n');
    return line;
}

std::string to_json_line(const TurnRecord& r) {
    boost::json::object o;
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
    std::string line = boost::json::serialize(o);
    line.push_back('\n');
    return line;
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

void RecordLog::write(const std::string& line) {
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
