// The two ends of deploy/bench/run's "many long streams" form: a paced SSE
// upstream that answers each request with a model stream at a fixed rate,
// and a client that holds many such streams open at once and measures how
// late each event arrives. One thread each, epoll and a timerfd, plain POSIX,
// no dependencies; compiled by deploy/bench/run with g++ -std=c++20 -O2.
//
//   streams upstream PORT [--rate R] [--seconds S]
//   streams client HOST PORT COUNT [--rate R] [--seconds S] [--ramp S] [--path P]
//   streams probe SECONDS
//
// upstream: an HTTP/1.1 server on 127.0.0.1:PORT. Every request (any method
// and path; a body is read by its Content-Length and ignored, a chunked one is
// refused with 501) is answered 200, text/event-stream, chunked: R*S ticks
// (default 10 per second for 30 s), one `chat.completion.chunk` event of
// about 250 bytes each, the first tick preceded by the role chunk and the
// last followed by the finish_reason chunk and `data: [DONE]` (so R*S + 2
// JSON events; role and finish go with a content event, as a proxy holding
// the events before the first answer text would release them anyway). A
// request's headers override the defaults: `x-bench-events: TICKS` and
// `x-bench-interval-us: US`; `x-bench-stream: HEX` (up to 8 hex digits) names
// the stream in every event's id, and `x-bench-model: NAME` the model the
// events name (default gpt-4o-mini-2024-07-18; another one shows whether a
// proxy checks identity). Each stream's clock starts when its request was
// read, so streams started apart stay apart. Every event carries its send
// time, CLOCK_MONOTONIC nanoseconds taken just before the write, as
// `created`, and its sequence number in `id`: "chatcmpl-SSSSSSSS-NNNNNN…"
// (stream, sequence from 0); a proxy treats both as members that vary. The
// connection stays open for the next request after the stream. When the last
// open stream has ended it prints one line, for the streams since the
// previous such line:
//   idle streams=N events=E late_p50_us=… late_p99_us=… late_max_us=… cpu_ms=…
// where late is how far behind its schedule an event was written (a loaded
// upstream shows there first) and cpu_ms the process's whole CPU time so far.
//
// client: opens COUNT connections to HOST:PORT, spread evenly over --ramp
// seconds (default 2, at most a quarter of S), each sending one stream
// request (POST P, default /v1/chat/completions, model gpt-4o-mini,
// "stream":true, the headers above with R and S) and reading the chunked (or
// length- or close-delimited) SSE answer. For every event it takes the delay
// now - send time (both CLOCK_MONOTONIC on this machine) into a histogram of
// every sample (1 µs steps below 100 ms, 100 µs steps to 60 s), and checks
// that the events are this stream's, in sequence, with none missing. A stream
// is ok when it answered 200 with all R*S + 2 events in order, `[DONE]` and a
// proper end. It prints, flushed at once:
//   open N      once every stream has been started and N of them (all but
//               those that already failed) have received their first event:
//               the moment all are open at once
//   ending      when the first stream ends (done or failed)
//   worst at_ms=T max_us=D events_over_1ms=N
//               at the end, the five windows of 100 ms (T ms after the start)
//               whose slowest event was slowest: D, and how many events in
//               it came over 1 ms late (many: every stream stalled at once)
//   streams=COUNT ok=… failed=… events=… expected=… lost=… disorder=…
//       failures=… p50_us=… p90_us=… p99_us=… p999_us=… max_us=… mean_us=…
//       cpu_ms=… seconds=…
//               at the end: lost = the events that never came (each stream's
//               expected less those it got, never below 0),
//               disorder = events out of sequence or of another stream,
//               failures = the failed streams by cause, `none` or e.g.
//               `cut:3,event:1`: connect, send, status (not 200), framing,
//               event (a non-stream event, as a proxy's closing error
//               event), order, short (ended without all events or
//               [DONE]), cut (closed before its end), timeout; cpu_ms is
//               the client's own CPU time.
// The first few failures are described on stderr. Exit 0 when every stream is
// ok, 1 otherwise (the summary line is printed either way). A stream not done
// 30 s after the last one's due end is failed as a timeout.
//
// probe: what the machine alone does to a delay. It sleeps 1 ms at a time
// for SECONDS (a timerfd, as the upstream's ticks) and prints how late it
// woke: `probe wakeups=N late_p50_us=… late_p99_us=… late_max_us=…
// over_1ms=…`. On an idle core a late wakeup is the machine's own (a virtual
// CPU the host did not run, an interrupt storm), which every event through a
// proxy on that core suffers as well.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iterator>
#include <map>
#include <memory>
#include <queue>
#include <string>
#include <string_view>
#include <vector>

namespace {

using Nanos = std::int64_t;

Nanos now_ns() {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<Nanos>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

double cpu_ms() {
    rusage ru{};
    ::getrusage(RUSAGE_SELF, &ru);
    return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

// Both ends hold thousands of sockets: the hard limit is the one that counts.
void raise_file_limit() {
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        ::setrlimit(RLIMIT_NOFILE, &rl);
    }
}

// Every sample kept, in µs: exact below 100 ms, 100 µs steps from there to
// 60 s, the rest counted above; the maximum is kept exactly.
class Histogram {
public:
    Histogram() : fine_(kFine, 0), coarse_(kCoarse, 0) {}
    void add(std::int64_t us) {
        if (us < 0) us = 0;
        if (us < kFine) ++fine_[static_cast<std::size_t>(us)];
        else if (us < kFine + kCoarse * kStep) ++coarse_[static_cast<std::size_t>((us - kFine) / kStep)];
        else ++above_;
        ++count_;
        sum_ += static_cast<double>(us);
        max_ = std::max(max_, us);
    }
    std::uint64_t count() const { return count_; }
    std::int64_t max() const { return max_; }
    double mean() const { return count_ ? sum_ / static_cast<double>(count_) : 0; }
    // The smallest value at or below which a fraction q of the samples lie.
    std::int64_t quantile(double q) const {
        if (count_ == 0) return 0;
        const auto rank = static_cast<std::uint64_t>(q * static_cast<double>(count_ - 1)) + 1;
        std::uint64_t seen = 0;
        for (std::size_t i = 0; i < fine_.size(); ++i)
            if ((seen += fine_[i]) >= rank) return static_cast<std::int64_t>(i);
        for (std::size_t i = 0; i < coarse_.size(); ++i)
            if ((seen += coarse_[i]) >= rank) return std::min(max_, kFine + static_cast<std::int64_t>(i) * kStep + kStep / 2);
        return max_;
    }
    void clear() { *this = Histogram(); }

private:
    static constexpr std::int64_t kFine = 100000;
    static constexpr std::int64_t kStep = 100;
    static constexpr std::int64_t kCoarse = (60000000 - kFine) / kStep;
    std::vector<std::uint32_t> fine_;
    std::vector<std::uint32_t> coarse_;
    std::uint64_t above_ = 0, count_ = 0;
    double sum_ = 0;
    std::int64_t max_ = 0;
};

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

void set_nodelay(int fd) {
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

bool iequals_prefix(std::string_view line, std::string_view name) {
    if (line.size() < name.size()) return false;
    for (std::size_t i = 0; i < name.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(line[i])) != name[i]) return false;
    return true;
}

// The value of header `name` (lower case, with the colon) in a head, trimmed;
// empty when absent.
std::string_view header(std::string_view head, std::string_view name) {
    std::size_t at = head.find("\r\n");
    while (at != std::string_view::npos && at + 2 < head.size()) {
        const std::size_t start = at + 2;
        std::size_t end = head.find("\r\n", start);
        if (end == std::string_view::npos) end = head.size();
        std::string_view line = head.substr(start, end - start);
        if (iequals_prefix(line, name)) {
            line.remove_prefix(name.size());
            while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
            while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
            return line;
        }
        at = end;
    }
    return {};
}

bool contains_token(std::string_view value, std::string_view token) {
    std::string lower(value);
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return lower.find(token) != std::string::npos;
}

std::int64_t to_int(std::string_view s, int base = 10) {
    std::string copy(s);
    char* end = nullptr;
    const long long v = std::strtoll(copy.c_str(), &end, base);
    return end == copy.c_str() ? -1 : v;
}

struct Options {
    double rate = 10;
    double seconds = 30;
    double ramp = -1;
    std::string path = "/v1/chat/completions";
};

bool parse_options(int argc, char** argv, int from, Options& o) {
    for (int i = from; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (i + 1 >= argc) return false;
        if (a == "--rate") o.rate = std::atof(argv[++i]);
        else if (a == "--seconds") o.seconds = std::atof(argv[++i]);
        else if (a == "--ramp") o.ramp = std::atof(argv[++i]);
        else if (a == "--path") o.path = argv[++i];
        else return false;
    }
    return o.rate > 0 && o.seconds > 0;
}

// ------------------------------------------------------------------ upstream

constexpr const char* kWords[] = {" the", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " dog,",
                                  " and", " then", " it", " rests."};

class Upstream {
public:
    Upstream(std::int64_t ticks, Nanos interval) : default_ticks_(ticks), default_interval_(interval) {}

    int run(int port) {
        listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
        const int one = 1;
        ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_port = htons(static_cast<std::uint16_t>(port));
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
            ::listen(listener_, 4096) != 0) {
            std::fprintf(stderr, "streams upstream: port %d: %s\n", port, std::strerror(errno));
            return 1;
        }
        set_nonblocking(listener_);
        epoll_ = ::epoll_create1(0);
        timer_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
        watch(listener_, EPOLLIN, kListener);
        watch(timer_, EPOLLIN, kTimer);
        std::vector<epoll_event> events(1024);
        for (;;) {
            const int n = ::epoll_wait(epoll_, events.data(), static_cast<int>(events.size()), -1);
            if (n < 0 && errno != EINTR) return 1;
            for (int i = 0; i < n; ++i) {
                const std::uint64_t tag = events[i].data.u64;
                if (tag == kListener) accept_all();
                else if (tag == kTimer) on_timer();
                else on_conn(tag, events[i].events);
            }
            arm();
        }
    }

private:
    static constexpr std::uint64_t kListener = ~0ULL, kTimer = ~0ULL - 1;

    struct Conn {
        int fd = -1;
        std::uint32_t generation = 0;  // bumped when the slot is reused: stale timer entries are skipped
        std::string in;
        std::string out;               // bytes the socket did not take yet
        bool want_write = false;
        std::int64_t body_left = -1;   // >= 0 while a request body is being read
        bool streaming = false;
        bool close_after = false;
        std::uint32_t stream = 0;
        std::string model;
        std::int64_t ticks = 0, next_tick = 0;
        Nanos start = 0, interval = 0;
    };
    struct Due {
        Nanos at;
        std::uint32_t slot, generation;
        bool operator>(const Due& o) const { return at > o.at; }
    };

    void watch(int fd, std::uint32_t events, std::uint64_t tag, int op = EPOLL_CTL_ADD) {
        epoll_event ev{};
        ev.events = events;
        ev.data.u64 = tag;
        ::epoll_ctl(epoll_, op, fd, &ev);
    }

    void accept_all() {
        for (;;) {
            const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_NONBLOCK);
            if (fd < 0) {
                if (errno != EAGAIN && errno != EINTR)
                    std::fprintf(stderr, "streams upstream: accept: %s\n", std::strerror(errno));
                return;
            }
            set_nodelay(fd);
            std::uint32_t slot;
            if (!free_.empty()) {
                slot = free_.back();
                free_.pop_back();
            } else {
                slot = static_cast<std::uint32_t>(conns_.size());
                conns_.push_back(std::make_unique<Conn>());
            }
            Conn& c = *conns_[slot];
            const std::uint32_t generation = c.generation + 1;
            c = Conn{};
            c.fd = fd;
            c.generation = generation;
            watch(fd, EPOLLIN, slot);
        }
    }

    void close_conn(std::uint32_t slot) {
        Conn& c = *conns_[slot];
        if (c.streaming) end_stream();
        ::close(c.fd);
        c.fd = -1;
        c.streaming = false;
        ++c.generation;
        c.in = std::string();
        c.out = std::string();
        free_.push_back(slot);
    }

    void on_conn(std::uint64_t tag, std::uint32_t events) {
        const auto slot = static_cast<std::uint32_t>(tag);
        Conn& c = *conns_[slot];
        if (c.fd < 0) return;
        if (events & EPOLLOUT) {
            if (!flush(slot)) return;
        }
        if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
            char buffer[16384];
            const ssize_t n = ::recv(c.fd, buffer, sizeof buffer, 0);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
                close_conn(slot);
                return;
            }
            if (n > 0 && !c.streaming) {
                c.in.append(buffer, static_cast<std::size_t>(n));
                read_requests(slot);
            }
            // Bytes that come while streaming (a pipelined request) wait in
            // the socket: a proxy sends none before the answer ends.
            else if (n > 0) c.in.append(buffer, static_cast<std::size_t>(n));
        }
    }

    void read_requests(std::uint32_t slot) {
        Conn& c = *conns_[slot];
        while (!c.streaming && c.fd >= 0) {
            if (c.body_left < 0) {
                const std::size_t end = c.in.find("\r\n\r\n");
                if (end == std::string::npos) {
                    if (c.in.size() > 65536) close_conn(slot);
                    return;
                }
                const std::string_view head(c.in.data(), end + 2);
                if (!header(head, "transfer-encoding:").empty()) {
                    reply_and_close(slot, "501 Not Implemented");  // proxies send bodies with a length
                    return;
                }
                const std::string_view length = header(head, "content-length:");
                c.body_left = length.empty() ? 0 : to_int(length);
                const std::string_view ticks = header(head, "x-bench-events:");
                const std::string_view interval = header(head, "x-bench-interval-us:");
                const std::string_view stream = header(head, "x-bench-stream:");
                const std::string_view model = header(head, "x-bench-model:");
                c.model = model.empty() ? "gpt-4o-mini-2024-07-18" : std::string(model.substr(0, 100));
                c.ticks = ticks.empty() ? default_ticks_ : to_int(ticks);
                c.interval = interval.empty() ? default_interval_ : to_int(interval) * 1000;
                c.stream = stream.empty() ? next_stream_++ : static_cast<std::uint32_t>(to_int(stream, 16));
                const std::size_t line_end = head.find("\r\n");
                c.close_after = contains_token(header(head, "connection:"), "close") ||
                                (line_end >= 8 && head.substr(line_end - 8, 8) == "HTTP/1.0");
                if (c.body_left < 0 || c.ticks < 1 || c.ticks > 999999 || c.interval < 0) {
                    reply_and_close(slot, "400 Bad Request");
                    return;
                }
                c.in.erase(0, end + 4);
            }
            const std::size_t take = std::min<std::size_t>(c.in.size(), static_cast<std::size_t>(c.body_left));
            c.in.erase(0, take);
            c.body_left -= static_cast<std::int64_t>(take);
            if (c.body_left > 0) return;
            c.body_left = -1;
            start_stream(slot);
        }
    }

    void reply_and_close(std::uint32_t slot, const char* status) {
        Conn& c = *conns_[slot];
        const std::string answer = std::string("HTTP/1.1 ") + status + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
        ::send(c.fd, answer.data(), answer.size(), MSG_NOSIGNAL);
        close_conn(slot);
    }

    void start_stream(std::uint32_t slot) {
        Conn& c = *conns_[slot];
        c.streaming = true;
        c.next_tick = 0;
        c.start = now_ns();
        ++open_;
        ++streams_;
        std::string head =
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nCache-Control: no-cache\r\n"
            "Transfer-Encoding: chunked\r\n";
        if (c.close_after) head += "Connection: close\r\n";
        head += "\r\n";
        c.out += head;
        tick(slot);  // the first tick goes with the head, at once
    }

    // One tick of a stream: its content event (with the role chunk before
    // the first, the finish chunk and [DONE] after the last) as one chunk.
    void tick(std::uint32_t slot) {
        Conn& c = *conns_[slot];
        const Nanos scheduled = c.start + c.next_tick * c.interval;
        const bool first = c.next_tick == 0, last = c.next_tick + 1 == c.ticks;
        std::string payload;
        const Nanos sent = now_ns();
        // Sequence numbers: the role chunk 0, content 1..ticks, finish ticks+1.
        const std::int64_t seq = c.next_tick + 1;
        if (first) append_event(payload, c, 0, sent, R"({"role":"assistant","content":"","refusal":null})", "null");
        char delta[64];
        std::snprintf(delta, sizeof delta, R"({"content":"%s"})", kWords[c.next_tick % std::size(kWords)]);
        append_event(payload, c, seq, sent, delta, "null");
        if (last) {
            append_event(payload, c, seq + 1, sent, "{}", "\"stop\"");
            payload += "data: [DONE]\n\n";
        }
        char size[32];
        std::snprintf(size, sizeof size, "%zx\r\n", payload.size());
        c.out += size;
        c.out += payload;
        c.out += last ? "\r\n0\r\n\r\n" : "\r\n";
        late_.add((sent - scheduled) / 1000);
        events_ += static_cast<std::uint64_t>(first + 1 + last);
        ++c.next_tick;
        if (!flush(slot)) return;  // the connection is gone
        if (!last) {
            due_.push({c.start + c.next_tick * c.interval, slot, c.generation});
            return;
        }
        c.streaming = false;
        end_stream();
        if (c.close_after && c.out.empty()) close_conn(slot);
        else if (!c.in.empty()) read_requests(slot);
    }

    static void append_event(std::string& to, const Conn& c, std::int64_t seq, Nanos sent, const char* delta,
                             const char* finish) {
        char event[512];
        const int n = std::snprintf(
            event, sizeof event,
            "data: {\"id\":\"chatcmpl-%08x-%06" PRId64 "CjcvOU2jLn4n57\",\"object\":\"chat.completion.chunk\","
            "\"created\":%" PRId64 ",\"model\":\"%s\",\"system_fingerprint\":\"fp_06737a9306\","
            "\"choices\":[{\"index\":0,\"delta\":%s,\"logprobs\":null,\"finish_reason\":%s}]}\n\n",
            c.stream, seq, sent, c.model.c_str(), delta, finish);
        to.append(event, static_cast<std::size_t>(n));
    }

    void end_stream() {
        if (--open_ > 0) return;
        std::printf("idle streams=%" PRIu64 " events=%" PRIu64 " late_p50_us=%" PRId64 " late_p99_us=%" PRId64
                    " late_max_us=%" PRId64 " cpu_ms=%.0f\n",
                    streams_, events_, late_.quantile(0.5), late_.quantile(0.99), late_.max(), cpu_ms());
        std::fflush(stdout);
        streams_ = events_ = 0;
        late_.clear();
    }

    // Writes what it can; false when the connection failed and was closed.
    bool flush(std::uint32_t slot) {
        Conn& c = *conns_[slot];
        while (!c.out.empty()) {
            const ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
            if (n > 0) {
                c.out.erase(0, static_cast<std::size_t>(n));
                continue;
            }
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && errno == EAGAIN) break;
            close_conn(slot);
            return false;
        }
        const bool want = !c.out.empty();
        if (want != c.want_write) {
            c.want_write = want;
            watch(c.fd, want ? EPOLLIN | EPOLLOUT : EPOLLIN, slot, EPOLL_CTL_MOD);
        }
        if (!want && !c.streaming && c.close_after) {
            close_conn(slot);
            return false;
        }
        return true;
    }

    void on_timer() {
        std::uint64_t expirations;
        while (::read(timer_, &expirations, sizeof expirations) > 0) {
        }
        const Nanos now = now_ns();
        while (!due_.empty() && due_.top().at <= now) {
            const Due d = due_.top();
            due_.pop();
            Conn& c = *conns_[d.slot];
            if (c.generation != d.generation || c.fd < 0 || !c.streaming) continue;  // closed since
            tick(d.slot);
        }
        armed_at_ = 0;  // it fired: set it anew
    }

    // The timer is set for the earliest tick due; called after every batch
    // of events, since a new stream's ticks may come before those pending.
    void arm() {
        const Nanos at = due_.empty() ? 0 : due_.top().at;
        if (at == armed_at_) return;
        armed_at_ = at;
        itimerspec spec{};  // zero: disarmed
        spec.it_value.tv_sec = at / 1000000000;
        spec.it_value.tv_nsec = at % 1000000000;
        ::timerfd_settime(timer_, TFD_TIMER_ABSTIME, &spec, nullptr);
    }

    std::int64_t default_ticks_;
    Nanos default_interval_;
    int listener_ = -1, epoll_ = -1, timer_ = -1;
    Nanos armed_at_ = 0;
    std::vector<std::unique_ptr<Conn>> conns_;
    std::vector<std::uint32_t> free_;
    std::priority_queue<Due, std::vector<Due>, std::greater<>> due_;
    std::uint32_t next_stream_ = 0x80000000u;
    std::uint64_t open_ = 0, streams_ = 0, events_ = 0;
    Histogram late_;
};


// -------------------------------------------------------------------- client

class Client {
public:
    Client(const sockaddr_in& address, std::size_t count, std::int64_t ticks, Nanos interval, Nanos ramp,
           std::string path)
        : address_(address), count_(count), ticks_(ticks), interval_(interval), ramp_(ramp), path_(std::move(path)) {}

    int run() {
        epoll_ = ::epoll_create1(0);
        timer_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
        watch(timer_, EPOLLIN, kTimer, EPOLL_CTL_ADD);
        conns_.resize(count_);
        begin_ = now_ns();
        // Past this a stream still running has failed: the last one starts
        // at the ramp's end, and is given 30 s beyond its length.
        give_up_ = begin_ + ramp_ + (ticks_ + 1) * interval_ + Nanos{30} * 1000000000;
        set_timer(begin_);
        std::vector<epoll_event> events(1024);
        while (finished_ < count_) {
            const int n = ::epoll_wait(epoll_, events.data(), static_cast<int>(events.size()), 1000);
            if (n < 0 && errno != EINTR) return 1;
            for (int i = 0; i < n; ++i) {
                if (events[i].data.u64 == kTimer) on_timer();
                else on_conn(static_cast<std::size_t>(events[i].data.u64), events[i].events);
            }
            if (now_ns() > give_up_) {
                for (std::size_t i = 0; i < count_; ++i)
                    if (conns_[i].state != State::idle && conns_[i].state != State::done) fail(i, "timeout", "no end in time");
                    else if (conns_[i].state == State::idle) {
                        conns_[i].state = State::connecting;  // so that fail() counts it once
                        fail(i, "timeout", "never started");
                    }
            }
        }
        report();
        return ok_ == count_ ? 0 : 1;
    }

private:
    static constexpr std::uint64_t kTimer = ~0ULL;
    enum class State { idle, connecting, sending, head, body, done };
    enum class Framing { chunked, length, close };
    enum class Chunk { size, data, data_end, trailer, end };

    struct Conn {
        State state = State::idle;
        int fd = -1;
        std::size_t sent = 0;
        std::string in;       // bytes of the head, or of an incomplete chunk-size or trailer line
        std::string line;     // the SSE line not yet ended
        int status = 0;
        Framing framing = Framing::close;
        Chunk chunk = Chunk::size;
        std::int64_t left = 0;  // bytes left in this chunk (or the whole body with a length)
        std::int64_t next_seq = 0, events = 0;
        bool done_marker = false, receiving = false, bad = false, disordered = false;
    };

    void watch(int fd, std::uint32_t events, std::uint64_t tag, int op) {
        epoll_event ev{};
        ev.events = events;
        ev.data.u64 = tag;
        ::epoll_ctl(epoll_, op, fd, &ev);
    }

    void set_timer(Nanos at) {
        itimerspec spec{};
        spec.it_value.tv_sec = at / 1000000000;
        spec.it_value.tv_nsec = at % 1000000000;
        ::timerfd_settime(timer_, TFD_TIMER_ABSTIME, &spec, nullptr);
    }

    Nanos start_of(std::size_t i) const {
        return begin_ + static_cast<Nanos>(static_cast<double>(ramp_) * static_cast<double>(i) / static_cast<double>(count_));
    }

    // Starts the connections whose time has come, and sets the timer for the next.
    void on_timer() {
        std::uint64_t expirations;
        while (::read(timer_, &expirations, sizeof expirations) > 0) {
        }
        const Nanos now = now_ns();
        while (started_ < count_ && start_of(started_) <= now) start(started_++);
        if (started_ < count_) set_timer(start_of(started_));
    }

    void start(std::size_t i) {
        Conn& c = conns_[i];
        c.state = State::connecting;
        c.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        if (c.fd < 0) {
            fail(i, "connect", std::strerror(errno));
            return;
        }
        set_nodelay(c.fd);
        if (::connect(c.fd, reinterpret_cast<const sockaddr*>(&address_), sizeof address_) != 0 && errno != EINPROGRESS) {
            fail(i, "connect", std::strerror(errno));
            return;
        }
        watch(c.fd, EPOLLOUT, i, EPOLL_CTL_ADD);
    }

    std::string request_for(std::size_t i) const {
        static const std::string body =
            R"({"model":"gpt-4o-mini","messages":[{"role":"user","content":"Tell me a long story."}],"stream":true})";
        char head[1024];
        std::snprintf(head, sizeof head,
                      "POST %s HTTP/1.1\r\nHost: %s:%u\r\nContent-Type: application/json\r\n"
                      "Accept: text/event-stream\r\nAuthorization: Bearer sk-client-side-key\r\n"
                      "x-bench-stream: %08zx\r\nx-bench-events: %" PRId64 "\r\nx-bench-interval-us: %" PRId64 "\r\n"
                      "Content-Length: %zu\r\n\r\n",
                      path_.c_str(), inet_ntoa(address_.sin_addr), ntohs(address_.sin_port), i, ticks_,
                      interval_ / 1000, body.size());
        return head + body;
    }

    void on_conn(std::size_t i, std::uint32_t events) {
        Conn& c = conns_[i];
        if (c.state == State::done) return;  // an event of this batch for a connection closed since
        if (c.state == State::connecting) {
            int error = 0;
            socklen_t size = sizeof error;
            ::getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &error, &size);
            if (error != 0) {
                fail(i, "connect", std::strerror(error));
                return;
            }
            c.state = State::sending;
        }
        if (c.state == State::sending) {
            if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) return;
            const std::string request = request_for(i);
            const ssize_t n = ::send(c.fd, request.data() + c.sent, request.size() - c.sent, MSG_NOSIGNAL);
            if (n < 0 && errno != EAGAIN && errno != EINTR) {
                fail(i, "send", std::strerror(errno));
                return;
            }
            if (n > 0) c.sent += static_cast<std::size_t>(n);
            if (c.sent == request.size()) {
                c.state = State::head;
                watch(c.fd, EPOLLIN, i, EPOLL_CTL_MOD);
            }
            return;
        }
        char buffer[65536];
        const ssize_t n = ::recv(c.fd, buffer, sizeof buffer, 0);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
        const Nanos now = now_ns();  // every event in these bytes arrived now
        if (n <= 0) {
            if (c.state == State::body && c.framing == Framing::close) finish(i);
            else fail(i, "cut", n == 0 ? "closed before the stream's end" : std::strerror(errno));
            return;
        }
        std::string_view data(buffer, static_cast<std::size_t>(n));
        if (c.state == State::head) {
            c.in.append(data);
            const std::size_t end = c.in.find("\r\n\r\n");
            if (end == std::string::npos) return;
            const std::string_view head(c.in.data(), end + 2);
            c.status = head.size() > 12 ? static_cast<int>(to_int(head.substr(9, 3))) : 0;
            if (contains_token(header(head, "transfer-encoding:"), "chunked")) c.framing = Framing::chunked;
            else if (!header(head, "content-length:").empty()) {
                c.framing = Framing::length;
                c.left = to_int(header(head, "content-length:"));
            }
            if (c.status != 200) {
                std::string first_line(head.substr(0, head.find("\r\n")));
                std::string rest = c.in.substr(end + 4, 200);
                fail(i, "status", (first_line + " " + rest).c_str());
                return;
            }
            c.state = State::body;
            std::string rest = c.in.substr(end + 4);
            c.in.clear();
            body(i, rest, now);
            return;
        }
        body(i, data, now);
    }

    // The answer's body bytes, framing taken off.
    void body(std::size_t i, std::string_view data, Nanos now) {
        Conn& c = conns_[i];
        if (c.framing == Framing::close) {
            feed(i, data, now);
            return;
        }
        if (c.framing == Framing::length) {
            const auto take = std::min<std::size_t>(data.size(), static_cast<std::size_t>(c.left));
            feed(i, data.substr(0, take), now);
            c.left -= static_cast<std::int64_t>(take);
            if (c.left == 0 && c.state == State::body) finish(i);
            return;
        }
        while (!data.empty() && c.state == State::body) {
            switch (c.chunk) {
                case Chunk::size:
                case Chunk::trailer: {
                    const std::size_t nl = data.find('\n');
                    if (nl == std::string_view::npos) {
                        c.in.append(data);
                        return;
                    }
                    c.in.append(data.substr(0, nl));
                    data.remove_prefix(nl + 1);
                    if (!c.in.empty() && c.in.back() == '\r') c.in.pop_back();
                    if (c.chunk == Chunk::trailer) {
                        if (c.in.empty()) {
                            finish(i);
                            return;
                        }
                    } else {
                        c.left = to_int(c.in.substr(0, c.in.find(';')), 16);
                        if (c.left < 0) {
                            fail(i, "framing", "bad chunk size");
                            return;
                        }
                        c.chunk = c.left == 0 ? Chunk::trailer : Chunk::data;
                    }
                    c.in.clear();
                    break;
                }
                case Chunk::data: {
                    const auto take = std::min<std::size_t>(data.size(), static_cast<std::size_t>(c.left));
                    feed(i, data.substr(0, take), now);
                    data.remove_prefix(take);
                    c.left -= static_cast<std::int64_t>(take);
                    if (c.left == 0) c.chunk = Chunk::data_end;
                    break;
                }
                case Chunk::data_end: {
                    // The CRLF after a chunk's data (it may come split).
                    const char ch = data.front();
                    data.remove_prefix(1);
                    if (ch == '\n') c.chunk = Chunk::size;
                    else if (ch != '\r') {
                        fail(i, "framing", "no CRLF after a chunk");
                        return;
                    }
                    break;
                }
                case Chunk::end: return;
            }
        }
    }

    // SSE bytes: cut into lines, each data line an event.
    void feed(std::size_t i, std::string_view data, Nanos now) {
        Conn& c = conns_[i];
        while (!data.empty()) {
            const std::size_t nl = data.find('\n');
            if (nl == std::string_view::npos) {
                c.line.append(data);
                return;
            }
            if (c.line.empty()) {
                line(i, data.substr(0, nl), now);
            } else {
                c.line.append(data.substr(0, nl));
                line(i, c.line, now);
                c.line.clear();
            }
            data.remove_prefix(nl + 1);
        }
    }

    void line(std::size_t i, std::string_view text, Nanos now) {
        Conn& c = conns_[i];
        if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
        if (text.substr(0, 5) != "data:") return;  // blank lines, comments, event: lines
        text.remove_prefix(5);
        if (!text.empty() && text.front() == ' ') text.remove_prefix(1);
        if (text == "[DONE]") {
            c.done_marker = true;
            return;
        }
        // "id":"chatcmpl-SSSSSSSS-NNNNNN…", "created":NANOS (the upstream's shape).
        static constexpr std::string_view kId = "\"id\":\"chatcmpl-", kCreated = "\"created\":";
        const std::size_t id = text.find(kId);
        const std::size_t created = text.find(kCreated);
        if (id == std::string_view::npos || created == std::string_view::npos ||
            id + kId.size() + 15 > text.size() || text[id + kId.size() + 8] != '-') {
            if (!c.bad) describe("event", i, std::string(text.substr(0, 300)).c_str());
            c.bad = true;  // a proxy's closing error event, or anything else not a chunk of this stream
            return;
        }
        const std::int64_t stream = to_int(text.substr(id + kId.size(), 8), 16);
        const std::int64_t seq = to_int(text.substr(id + kId.size() + 9, 6));
        const std::int64_t sent = to_int(text.substr(created + kCreated.size(), 20));
        if (stream != static_cast<std::int64_t>(i) || seq != c.next_seq) {
            ++disorder_;
            c.disordered = true;
            if (disorder_ <= 5) {
                char what[128];
                std::snprintf(what, sizeof what, "event %" PRId64 " of stream %" PRIx64 " where %" PRId64 " of %zx was due",
                              seq, stream, c.next_seq, i);
                describe("order", i, what);
            }
        }
        c.next_seq = seq + 1;
        ++c.events;
        ++events_;
        const std::int64_t delay = (now - sent) / 1000;
        delay_.add(delay);
        // Where the delays were worst: a stall of the proxy shows as many
        // streams late in one window, a lone slow event as one.
        const auto window = static_cast<std::size_t>((now - begin_) / kWindow);
        if (window >= windows_.size()) windows_.resize(window + 1);
        windows_[window].worst = std::max(windows_[window].worst, delay);
        if (delay > 1000) ++windows_[window].over_1ms;
        if (!c.receiving) {
            c.receiving = true;
            ++receiving_;
            check_open();
        }
    }

    // `open` once all streams were started and none is still waiting for its
    // first event.
    void check_open() {
        if (open_said_ || started_ < count_ || receiving_ + failed_before_open_ < count_) return;
        open_said_ = true;
        std::printf("open %zu\n", receiving_);
        std::fflush(stdout);
    }

    void ended(std::size_t i) {
        Conn& c = conns_[i];
        if (c.fd >= 0) ::close(c.fd);
        c.fd = -1;
        c.state = State::done;
        c.in = std::string();
        c.line = std::string();
        ++finished_;
        if (!ending_said_ && open_said_) {
            ending_said_ = true;
            std::printf("ending\n");
            std::fflush(stdout);
        }
    }

    void finish(std::size_t i) {
        Conn& c = conns_[i];
        const std::int64_t expected = ticks_ + 2;
        if (c.bad) {
            fail(i, "event", "a non-stream event came");
            return;
        }
        if (c.disordered) {
            fail(i, "order", "events out of sequence or of another stream");
            return;
        }
        if (!c.done_marker || c.events != expected) {
            char what[128];
            std::snprintf(what, sizeof what, "ended with %" PRId64 " of %" PRId64 " events%s", c.events, expected,
                          c.done_marker ? "" : ", no [DONE]");
            fail(i, "short", what);
            return;
        }
        ++ok_;
        ended(i);
    }

    void fail(std::size_t i, const char* kind, const char* what) {
        Conn& c = conns_[i];
        if (c.state == State::done) return;
        ++failed_;
        ++failures_[kind];
        if (!c.receiving) ++failed_before_open_;
        describe(kind, i, what);
        ended(i);
        check_open();
    }

    void describe(const char* kind, std::size_t i, const char* what) {
        if (++described_ <= 10) std::fprintf(stderr, "streams client: stream %zx: %s: %s\n", i, kind, what);
    }

    // The five worst windows of 100 ms, a line each, before the summary.
    void report_windows() {
        std::vector<std::size_t> order(windows_.size());
        for (std::size_t w = 0; w < order.size(); ++w) order[w] = w;
        const std::size_t shown = std::min<std::size_t>(5, order.size());
        std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(shown), order.end(),
                          [&](std::size_t a, std::size_t b) { return windows_[a].worst > windows_[b].worst; });
        for (std::size_t k = 0; k < shown; ++k) {
            const Window& w = windows_[order[k]];
            std::printf("worst at_ms=%" PRId64 " max_us=%" PRId64 " events_over_1ms=%" PRIu64 "\n",
                        static_cast<std::int64_t>(order[k]) * (kWindow / 1000000), w.worst, w.over_1ms);
        }
    }

    void report() {
        report_windows();
        const std::uint64_t expected = static_cast<std::uint64_t>(count_) * static_cast<std::uint64_t>(ticks_ + 2);
        // Per stream, so that one stream's duplicates hide no other's losses.
        std::int64_t lost = 0;
        for (const Conn& c : conns_) lost += std::max<std::int64_t>(0, ticks_ + 2 - c.events);
        std::string failures;
        for (const auto& [kind, n] : failures_) failures += (failures.empty() ? "" : ",") + kind + ":" + std::to_string(n);
        std::printf("streams=%zu ok=%zu failed=%zu events=%" PRIu64 " expected=%" PRIu64 " lost=%" PRId64
                    " disorder=%" PRIu64 " failures=%s p50_us=%" PRId64 " p90_us=%" PRId64 " p99_us=%" PRId64
                    " p999_us=%" PRId64 " max_us=%" PRId64 " mean_us=%.0f cpu_ms=%.0f seconds=%.1f\n",
                    count_, ok_, failed_, events_, expected, lost, disorder_,
                    failures.empty() ? "none" : failures.c_str(), delay_.quantile(0.5), delay_.quantile(0.9), delay_.quantile(0.99), delay_.quantile(0.999),
                    delay_.max(), delay_.mean(), cpu_ms(), static_cast<double>(now_ns() - begin_) / 1e9);
        std::fflush(stdout);
    }

    sockaddr_in address_;
    std::size_t count_;
    std::int64_t ticks_;
    Nanos interval_, ramp_;
    std::string path_;
    int epoll_ = -1, timer_ = -1;
    std::vector<Conn> conns_;
    Nanos begin_ = 0, give_up_ = 0;
    std::size_t started_ = 0, finished_ = 0, ok_ = 0, failed_ = 0, failed_before_open_ = 0, receiving_ = 0;
    std::size_t described_ = 0;
    std::uint64_t events_ = 0, disorder_ = 0;
    bool open_said_ = false, ending_said_ = false;
    struct Window {
        std::int64_t worst = 0;
        std::uint64_t over_1ms = 0;
    };
    static constexpr Nanos kWindow = 100000000;
    std::vector<Window> windows_;  // by arrival time since the start, kWindow each
    std::map<std::string, std::size_t> failures_;
    Histogram delay_;
};

int probe(double seconds) {
    const int timer = ::timerfd_create(CLOCK_MONOTONIC, 0);
    const Nanos period = 1000000, start = now_ns(), end = start + static_cast<Nanos>(seconds * 1e9);
    itimerspec spec{};
    spec.it_interval.tv_nsec = period;
    spec.it_value.tv_sec = (start + period) / 1000000000;
    spec.it_value.tv_nsec = (start + period) % 1000000000;
    ::timerfd_settime(timer, TFD_TIMER_ABSTIME, &spec, nullptr);
    Histogram late;
    std::uint64_t over = 0;
    Nanos due = start + period;
    for (Nanos now = start; now < end;) {
        std::uint64_t expirations = 0;
        if (::read(timer, &expirations, sizeof expirations) != sizeof expirations) return 1;
        now = now_ns();
        // The lateness of the first expiration this read covers; those the
        // stall swallowed whole are not counted again.
        const std::int64_t us = (now - due) / 1000;
        late.add(us);
        over += us > 1000;
        due += static_cast<Nanos>(expirations) * period;
    }
    std::printf("probe wakeups=%" PRIu64 " late_p50_us=%" PRId64 " late_p99_us=%" PRId64 " late_max_us=%" PRId64
                " over_1ms=%" PRIu64 "\n",
                late.count(), late.quantile(0.5), late.quantile(0.99), late.max(), over);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    ::signal(SIGPIPE, SIG_IGN);
    raise_file_limit();
    const std::string_view mode = argc > 1 ? argv[1] : "";
    Options o;
    if (mode == "upstream" && argc >= 3 && parse_options(argc, argv, 3, o)) {
        Upstream upstream(static_cast<std::int64_t>(o.rate * o.seconds + 0.5), static_cast<Nanos>(1e9 / o.rate));
        return upstream.run(std::atoi(argv[2]));
    }
    if (mode == "client" && argc >= 5 && parse_options(argc, argv, 5, o)) {
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_port = htons(static_cast<std::uint16_t>(std::atoi(argv[3])));
        const auto count = static_cast<std::size_t>(std::strtoull(argv[4], nullptr, 10));
        if (::inet_pton(AF_INET, argv[2], &address.sin_addr) != 1 || count == 0 || count > 0xffffffffu) {
            std::fprintf(stderr, "streams client: bad IPv4 address %s or COUNT %s\n", argv[2], argv[4]);
            return 2;
        }
        const double ramp = o.ramp >= 0 ? o.ramp : std::min(2.0, o.seconds / 4);
        Client client(address, count, static_cast<std::int64_t>(o.rate * o.seconds + 0.5),
                      static_cast<Nanos>(1e9 / o.rate), static_cast<Nanos>(ramp * 1e9), o.path);
        return client.run();
    }
    if (mode == "probe" && argc == 3 && std::atof(argv[2]) > 0) return probe(std::atof(argv[2]));
    std::fprintf(stderr,
                 "usage: streams upstream PORT [--rate R] [--seconds S]\n"
                 "       streams client HOST PORT COUNT [--rate R] [--seconds S] [--ramp S] [--path P]\n"
                 "       streams probe SECONDS\n");
    return 2;
}
