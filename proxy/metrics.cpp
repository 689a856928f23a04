#include "proxy/metrics.hpp"

#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <initializer_list>

namespace modelproxy::proxy::metrics {

namespace {

constexpr auto relaxed = std::memory_order_relaxed;

// A load and a store, not fetch_add: a block has one writer, the thread of
// the worker that owns it (metrics.hpp), and a locked read-modify-write
// costs some twenty cycles more; about ten of them ran per request.
// A reader (the /metrics sum) still sees whole values, old or new.
void add(Counter& counter, std::uint64_t n) { counter.store(counter.load(relaxed) + n, relaxed); }

std::uint64_t non_negative(std::int64_t value) { return value > 0 ? static_cast<std::uint64_t>(value) : 0; }

template <std::size_t N>
void load(const std::array<Counter, N>& from, std::array<std::uint64_t, N>& into) {
    for (std::size_t i = 0; i < N; ++i) into[i] += from[i].load(relaxed);
}

void load(const Histogram& from, HistogramValues& into) {
    load(from.buckets, into.buckets);
    into.sum_ms += from.sum_ms.load(relaxed);
}

}  // namespace

std::string_view attempt_class_name(std::size_t index) {
    if (index == 0) return "ok";
    return policy::to_string(static_cast<policy::ErrorClass>(index - 1));
}

std::optional<std::size_t> attempt_class_index(std::string_view error_class) {
    if (error_class.empty()) return 0;
    for (std::size_t i = 1; i < attempt_classes; ++i)
        if (attempt_class_name(i) == error_class) return i;
    return std::nullopt;
}

void Histogram::observe(std::int64_t ms) {
    std::size_t i = 0;
    while (i < bucket_count && ms > bucket_bounds_ms[i]) ++i;
    add(buckets[i], 1);
    add(sum_ms, non_negative(ms));
}

void count_turn(RouteCounters& c, const TurnRecord& r) {
    const auto outcome = index_of(outcomes, r.outcome);
    if (!outcome) return;  // every writer uses the section 10 spellings; nothing else is counted
    add(c.turns[*outcome], 1);
    if (r.outcome == "refused") {
        if (auto code = index_of(refusal_codes, r.code)) add(c.refusals[*code], 1);
    }
    if (r.outcome == "rejected") return;  // refused before routing: no route, no duration
    c.turn_duration.observe(r.duration_ms);
    if (r.ttft_ms) c.time_to_first_token.observe(*r.ttft_ms);
}

void count_attempt(RouteCounters& c, const AttemptRecord& r, std::int64_t duration_ms) {
    if (auto cls = attempt_class_index(r.error_class)) add(c.attempts[*cls], 1);
    add(c.retry_wait_ms, non_negative(r.delay_ms));
    c.attempt_duration.observe(duration_ms);
}

void count_usage(RouteCounters& c, const sse::Usage& usage) {
    if (usage.input_tokens) add(c.tokens[0], *usage.input_tokens);
    if (usage.output_tokens) add(c.tokens[1], *usage.output_tokens);
}

void read_process(Snapshot& snapshot) {
    // statm: size resident shared text lib data dt, in pages.
    std::ifstream statm("/proc/self/statm");
    std::uint64_t size = 0, resident = 0;
    if (statm >> size >> resident) {
        const long page = ::sysconf(_SC_PAGESIZE);
        snapshot.resident_memory_bytes = resident * static_cast<std::uint64_t>(page > 0 ? page : 4096);
    }
    if (DIR* dir = ::opendir("/proc/self/fd")) {
        std::uint64_t count = 0;
        while (const dirent* entry = ::readdir(dir))
            if (entry->d_name[0] != '.') ++count;
        ::closedir(dir);
        snapshot.open_fds = count > 0 ? count - 1 : 0;  // less the one listing the directory
    }
}

// ---- Registry --------------------------------------------------------------

Registry::Registry()
    : names_(std::make_unique<std::string[]>(max_slots)),
      blocks_(std::make_unique<std::atomic<RouteCounters*>[]>(max_slots)) {
    for (std::size_t i = 0; i < max_slots; ++i) blocks_[i].store(nullptr, relaxed);
    named_.store(1, std::memory_order_release);  // slot 0: "" (no route)
}

Registry::~Registry() {
    for (std::size_t i = 0; i < max_slots; ++i) delete[] blocks_[i].load(relaxed);
}

Registry& Registry::process() {
    // Never destroyed: no worker can outlive it at exit.
    static Registry* registry = new Registry;
    return *registry;
}

std::uint16_t Registry::slot_for(std::string_view route_name) {
    const std::size_t named = named_.load(relaxed);
    for (std::size_t i = 1; i < named; ++i)
        if (names_[i] == route_name) return static_cast<std::uint16_t>(i);
    if (named == max_slots) return static_cast<std::uint16_t>(max_slots - 1);  // "(other)"
    const std::size_t slot = named;
    names_[slot] = slot == max_slots - 1 ? std::string(overflow_name) : std::string(route_name);
    allocate(slot);
    // The name and the blocks are in place before a scrape can see the slot.
    named_.store(slot + 1, std::memory_order_release);
    return static_cast<std::uint16_t>(slot);
}

void Registry::set_workers(std::size_t workers) {
    workers_ = workers;
    const std::size_t named = named_.load(relaxed);
    for (std::size_t slot = 0; slot < named; ++slot) allocate(slot);
}

void Registry::allocate(std::size_t slot) {
    if (workers_ == 0 || blocks_[slot].load(relaxed)) return;
    blocks_[slot].store(new RouteCounters[workers_](), std::memory_order_release);
}

Snapshot Registry::snapshot() const {
    Snapshot snapshot;
    const std::size_t named = named_.load(std::memory_order_acquire);
    snapshot.routes.resize(named);
    for (std::size_t slot = 0; slot < named; ++slot) {
        RouteValues& values = snapshot.routes[slot];
        values.route = names_[slot];
        const RouteCounters* block = blocks_[slot].load(std::memory_order_acquire);
        for (std::size_t w = 0; block && w < workers_; ++w) {
            const RouteCounters& c = block[w];
            load(c.turns, values.turns);
            load(c.attempts, values.attempts);
            load(c.refusals, values.refusals);
            load(c.tokens, values.tokens);
            load(c.resumes, values.resumes);
            load(c.connects, values.connects);
            values.retry_wait_ms += c.retry_wait_ms.load(relaxed);
            load(c.turn_duration, values.turn_duration);
            load(c.attempt_duration, values.attempt_duration);
            load(c.time_to_first_token, values.time_to_first_token);
            values.busy_connections += c.busy_connections.load(relaxed);
            values.idle_connections += c.idle_connections.load(relaxed);
        }
    }
    return snapshot;
}

// ---- render ----------------------------------------------------------------

namespace {

// Milliseconds as seconds, exactly: "1.234".
std::string seconds(std::uint64_t ms) {
    std::string text = std::to_string(ms / 1000);
    const auto frac = ms % 1000;
    if (frac == 0) return text;
    char digits[5];
    std::snprintf(digits, sizeof digits, ".%03u", static_cast<unsigned>(frac));
    text += digits;
    while (text.back() == '0') text.pop_back();
    return text;
}

class Text {
public:
    void family(std::string_view name, std::string_view type, std::string_view help) {
        out_ += "# HELP ";
        out_ += name;
        out_ += ' ';
        out_ += help;  // our own constant text: no backslash or newline to escape
        out_ += "\n# TYPE ";
        out_ += name;
        out_ += ' ';
        out_ += type;
        out_ += '\n';
    }
    // name{labels} value; `labels` is a list of name, value pairs.
    void sample(std::string_view name, std::initializer_list<std::pair<std::string_view, std::string_view>> labels,
                std::string_view value) {
        out_ += name;
        if (labels.size() > 0) {
            out_ += '{';
            bool first = true;
            for (const auto& [label, label_value] : labels) {
                if (!first) out_ += ',';
                first = false;
                out_ += label;
                out_ += "=\"";
                out_ += escape_label(label_value);
                out_ += '"';
            }
            out_ += '}';
        }
        out_ += ' ';
        out_ += value;
        out_ += '\n';
    }
    void histogram(std::string_view name, std::string_view route, const HistogramValues& h) {
        const std::string base(name);
        std::uint64_t cumulative = 0;
        for (std::size_t i = 0; i <= bucket_count; ++i) {
            cumulative += h.buckets[i];
            const std::string_view le = i < bucket_count ? bucket_labels[i] : std::string_view("+Inf");
            sample(base + "_bucket", {{"route", route}, {"le", le}}, std::to_string(cumulative));
        }
        sample(base + "_sum", {{"route", route}}, seconds(h.sum_ms));
        sample(base + "_count", {{"route", route}}, std::to_string(cumulative));
    }
    std::string take() { return std::move(out_); }

private:
    std::string out_;
};

}  // namespace

std::string escape_label(std::string_view value) {
    std::string out;
    out.reserve(value.size());
    for (char c : value) {
        if (c == '\\') {
            out += "\\\\";
        } else if (c == '"') {
            out += "\\\"";
        } else if (c == '\n') {
            out += "\\n";
        } else {
            out += c;
        }
    }
    return out;
}

std::string render(const Snapshot& s) {
    Text t;
    // Routed slots: everything but slot 0 ("", turns rejected before routing).
    auto routed = [&](auto&& each) {
        for (const RouteValues& r : s.routes)
            if (!r.route.empty()) each(r);
    };

    t.family("modelproxy_turns_total", "counter",
             "Turns ended, by route and outcome (one per turn record; route is empty for requests rejected before "
             "routing).");
    for (const RouteValues& r : s.routes)
        for (std::size_t i = 0; i < outcomes.size(); ++i) {
            if (r.route.empty() && outcomes[i] != "rejected") continue;
            t.sample("modelproxy_turns_total", {{"route", r.route}, {"outcome", outcomes[i]}},
                     std::to_string(r.turns[i]));
        }

    t.family("modelproxy_attempts_total", "counter",
             "Upstream attempts, by route and error class (ok for an attempt that succeeded).");
    routed([&](const RouteValues& r) {
        for (std::size_t i = 0; i < attempt_classes; ++i)
            t.sample("modelproxy_attempts_total", {{"route", r.route}, {"class", attempt_class_name(i)}},
                     std::to_string(r.attempts[i]));
    });

    t.family("modelproxy_retry_wait_seconds_total", "counter",
             "Seconds waited between attempts before replays (the attempt records' delay_ms).");
    routed([&](const RouteValues& r) {
        t.sample("modelproxy_retry_wait_seconds_total", {{"route", r.route}}, seconds(r.retry_wait_ms));
    });

    t.family("modelproxy_refusals_total", "counter",
             "Turns refused at the response boundary (outcome refused), by route and code.");
    routed([&](const RouteValues& r) {
        for (std::size_t i = 0; i < refusal_codes.size(); ++i)
            t.sample("modelproxy_refusals_total", {{"route", r.route}, {"code", refusal_codes[i]}},
                     std::to_string(r.refusals[i]));
    });

    t.family("modelproxy_usage_tokens_total", "counter",
             "Tokens the upstream reported in the usage of its 2xx answers, by route and kind (input: prompt or "
             "input tokens; output: completion or output tokens).");
    routed([&](const RouteValues& r) {
        for (std::size_t i = 0; i < token_kinds.size(); ++i)
            t.sample("modelproxy_usage_tokens_total", {{"route", r.route}, {"kind", token_kinds[i]}},
                     std::to_string(r.tokens[i]));
    });

    t.family("modelproxy_resumes_total", "counter",
             "Cut streams the proxy tried to continue (docs/behaviour.md section 16), by route and result: continued "
             "past the seam, diverged from the published text, broken before the seam, or skipped (a rule ruled "
             "the resume out).");
    routed([&](const RouteValues& r) {
        for (std::size_t i = 0; i < resume_results.size(); ++i)
            t.sample("modelproxy_resumes_total", {{"route", r.route}, {"result", resume_results[i]}},
                     std::to_string(r.resumes[i]));
    });

    t.family("modelproxy_turn_duration_seconds", "histogram",
             "Turn duration from the request to the end of the answer (the turn records' duration_ms).");
    routed([&](const RouteValues& r) { t.histogram("modelproxy_turn_duration_seconds", r.route, r.turn_duration); });

    t.family("modelproxy_attempt_duration_seconds", "histogram",
             "Attempt duration from its start to its record (waits between attempts excluded).");
    routed([&](const RouteValues& r) {
        t.histogram("modelproxy_attempt_duration_seconds", r.route, r.attempt_duration);
    });

    t.family("modelproxy_time_to_first_token_seconds", "histogram",
             "Time from the request to the first answer byte published (the turn records' ttft_ms).");
    routed([&](const RouteValues& r) {
        t.histogram("modelproxy_time_to_first_token_seconds", r.route, r.time_to_first_token);
    });

    t.family("modelproxy_upstream_connects_total", "counter",
             "New upstream connections made by the route's attempts, by TLS handshake: none (plain HTTP), full, "
             "or resumed (a session an earlier connection was given).");
    routed([&](const RouteValues& r) {
        for (std::size_t i = 0; i < connect_kinds.size(); ++i)
            t.sample("modelproxy_upstream_connects_total", {{"route", r.route}, {"tls", connect_kinds[i]}},
                     std::to_string(r.connects[i]));
    });

    t.family("modelproxy_upstream_connections", "gauge",
             "Upstream connections: busy (held by this route's attempts) and idle (kept alive in the pool).");
    routed([&](const RouteValues& r) {
        t.sample("modelproxy_upstream_connections", {{"route", r.route}, {"state", "busy"}},
                 std::to_string(r.busy_connections));
        t.sample("modelproxy_upstream_connections", {{"route", r.route}, {"state", "idle"}},
                 std::to_string(r.idle_connections));
    });

    t.family("modelproxy_inflight_turns", "gauge", "Turns in flight.");
    t.sample("modelproxy_inflight_turns", {}, std::to_string(s.inflight_turns));
    t.family("modelproxy_connections", "gauge", "Open client connections.");
    t.sample("modelproxy_connections", {}, std::to_string(s.client_connections));
    t.family("modelproxy_build_info", "gauge", "Always 1; the version is the label.");
    t.sample("modelproxy_build_info", {{"version", s.version}}, "1");
    if (s.resident_memory_bytes) {
        t.family("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
        t.sample("process_resident_memory_bytes", {}, std::to_string(*s.resident_memory_bytes));
    }
    if (s.open_fds) {
        t.family("process_open_fds", "gauge", "Number of open file descriptors.");
        t.sample("process_open_fds", {}, std::to_string(*s.open_fds));
    }
    return t.take();
}

}  // namespace modelproxy::proxy::metrics
