#include "proxy/metrics.hpp"

#include <catch2/catch.hpp>

#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace modelproxy::proxy;
using namespace modelproxy::proxy::metrics;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

// The value of the sample written exactly as `series` (name and labels), or
// nullopt when the text has no such line.
std::optional<std::string> sample(const std::string& text, const std::string& series) {
    for (const auto& line : lines_of(text))
        if (line.rfind(series + " ", 0) == 0) return line.substr(series.size() + 1);
    return std::nullopt;
}

Snapshot one_route_snapshot() {
    Snapshot s;
    s.routes.resize(2);
    s.routes[1].route = "openai";
    s.version = "1.2.3";
    return s;
}

TurnRecord turn(std::string_view outcome, std::int64_t duration_ms, std::optional<std::int64_t> ttft_ms = {},
                std::string_view code = "") {
    TurnRecord r;
    r.outcome = outcome;
    r.duration_ms = duration_ms;
    r.ttft_ms = ttft_ms;
    r.code = code;
    return r;
}

AttemptRecord attempt(std::string_view error_class, std::int64_t delay_ms = 0) {
    AttemptRecord r;
    r.error_class = error_class;
    r.delay_ms = delay_ms;
    return r;
}

}  // namespace

TEST_CASE("every family has HELP then TYPE, and every sample belongs to the family above it", "[metrics]") {
    Snapshot s = one_route_snapshot();
    s.resident_memory_bytes = 4096;
    s.open_fds = 7;
    const std::string text = render(s);
    REQUIRE(!text.empty());
    CHECK(text.back() == '\n');

    std::string family;
    std::map<std::string, std::string> types;
    const auto lines = lines_of(text);
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const std::string& line = lines[i];
        CAPTURE(line);
        if (line.rfind("# HELP ", 0) == 0) {
            family = line.substr(7, line.find(' ', 7) - 7);
            REQUIRE(i + 1 < lines.size());
            const std::string& next = lines[i + 1];
            REQUIRE(next.rfind("# TYPE " + family + " ", 0) == 0);
            CHECK(types.count(family) == 0);  // each family once
            types[family] = next.substr(7 + family.size() + 1);
            ++i;
            continue;
        }
        REQUIRE(!family.empty());
        const std::string name = line.substr(0, line.find_first_of("{ "));
        if (types[family] == "histogram") {
            CHECK((name == family + "_bucket" || name == family + "_sum" || name == family + "_count"));
        } else {
            CHECK(name == family);
        }
    }
    CHECK(types["modelproxy_turns_total"] == "counter");
    CHECK(types["modelproxy_attempts_total"] == "counter");
    CHECK(types["modelproxy_retry_wait_seconds_total"] == "counter");
    CHECK(types["modelproxy_refusals_total"] == "counter");
    CHECK(types["modelproxy_usage_tokens_total"] == "counter");
    CHECK(types["modelproxy_turn_duration_seconds"] == "histogram");
    CHECK(types["modelproxy_attempt_duration_seconds"] == "histogram");
    CHECK(types["modelproxy_time_to_first_token_seconds"] == "histogram");
    CHECK(types["modelproxy_upstream_connections"] == "gauge");
    CHECK(types["modelproxy_upstream_connects_total"] == "counter");
    CHECK(types["modelproxy_inflight_turns"] == "gauge");
    CHECK(types["modelproxy_connections"] == "gauge");
    CHECK(types["modelproxy_build_info"] == "gauge");
    CHECK(types["process_resident_memory_bytes"] == "gauge");
    CHECK(types["process_open_fds"] == "gauge");
    CHECK(sample(text, "process_resident_memory_bytes") == "4096");
    CHECK(sample(text, "process_open_fds") == "7");
    CHECK(sample(text, R"(modelproxy_build_info{version="1.2.3"})") == "1");
}

TEST_CASE("process gauges are left out when /proc could not be read", "[metrics]") {
    const std::string text = render(one_route_snapshot());
    CHECK(text.find("process_resident_memory_bytes") == std::string::npos);
    CHECK(text.find("process_open_fds") == std::string::npos);
}

TEST_CASE("every known label combination is present, zeros included", "[metrics]") {
    const std::string text = render(one_route_snapshot());
    for (auto outcome : outcomes)
        CHECK(sample(text, "modelproxy_turns_total{route=\"openai\",outcome=\"" + std::string(outcome) + "\"}") == "0");
    for (std::size_t i = 0; i < attempt_classes; ++i)
        CHECK(sample(text, "modelproxy_attempts_total{route=\"openai\",class=\"" +
                               std::string(attempt_class_name(i)) + "\"}") == "0");
    for (auto code : refusal_codes)
        CHECK(sample(text, "modelproxy_refusals_total{route=\"openai\",code=\"" + std::string(code) + "\"}") == "0");
    CHECK(sample(text, R"(modelproxy_usage_tokens_total{route="openai",kind="input"})") == "0");
    CHECK(sample(text, R"(modelproxy_usage_tokens_total{route="openai",kind="output"})") == "0");
    CHECK(sample(text, R"(modelproxy_upstream_connections{route="openai",state="busy"})") == "0");
    CHECK(sample(text, R"(modelproxy_upstream_connections{route="openai",state="idle"})") == "0");
    CHECK(sample(text, R"(modelproxy_retry_wait_seconds_total{route="openai"})") == "0");
    for (auto kind : connect_kinds)
        CHECK(sample(text, "modelproxy_upstream_connects_total{route=\"openai\",tls=\"" + std::string(kind) + "\"}") ==
              "0");
}

TEST_CASE("the unrouted slot appears only as rejected turns", "[metrics]") {
    Snapshot s = one_route_snapshot();
    s.routes[0].turns[6] = 3;  // rejected
    const std::string text = render(s);
    CHECK(sample(text, R"(modelproxy_turns_total{route="",outcome="rejected"})") == "3");
    CHECK_FALSE(sample(text, R"(modelproxy_turns_total{route="",outcome="ok"})"));
    CHECK(text.find(R"(_bucket{route="",)") == std::string::npos);
    CHECK(text.find(R"(modelproxy_attempts_total{route="",)") == std::string::npos);
}

TEST_CASE("label values are escaped", "[metrics]") {
    CHECK(escape_label("plain-name.1") == "plain-name.1");
    CHECK(escape_label("a\"b") == "a\\\"b");
    CHECK(escape_label("a\\b") == "a\\\\b");
    CHECK(escape_label("a\nb") == "a\\nb");
    Snapshot s = one_route_snapshot();
    s.version = "x\"y\\z\n";
    CHECK(sample(render(s), R"(modelproxy_build_info{version="x\"y\\z\n"})") == "1");
}

TEST_CASE("histogram buckets are cumulative and end with +Inf, sum in seconds", "[metrics]") {
    Histogram h;
    for (std::int64_t ms : {0, 5, 6, 250, 1000, 1001, 300000, 300001, 999999}) h.observe(ms);
    Snapshot s = one_route_snapshot();
    for (std::size_t i = 0; i <= bucket_count; ++i) s.routes[1].turn_duration.buckets[i] = h.buckets[i].load();
    s.routes[1].turn_duration.sum_ms = h.sum_ms.load();
    const std::string text = render(s);
    auto bucket = [&](std::string_view le) {
        return sample(text, "modelproxy_turn_duration_seconds_bucket{route=\"openai\",le=\"" + std::string(le) + "\"}");
    };
    CHECK(bucket("0.005") == "2");   // 0 and 5 (le is inclusive)
    CHECK(bucket("0.01") == "3");    // + 6
    CHECK(bucket("0.1") == "3");
    CHECK(bucket("0.25") == "4");    // + 250
    CHECK(bucket("1") == "5");       // + 1000
    CHECK(bucket("2.5") == "6");     // + 1001
    CHECK(bucket("300") == "7");     // + 300000
    CHECK(bucket("+Inf") == "9");
    CHECK(sample(text, R"(modelproxy_turn_duration_seconds_count{route="openai"})") == "9");
    CHECK(sample(text, R"(modelproxy_turn_duration_seconds_sum{route="openai"})") == "1602.262");

    // Buckets in order, each at least the one before.
    std::uint64_t last = 0;
    int seen = 0;
    for (const auto& line : lines_of(text)) {
        if (line.rfind(R"(modelproxy_turn_duration_seconds_bucket{route="openai")", 0) != 0) continue;
        const std::uint64_t value = std::stoull(line.substr(line.rfind(' ') + 1));
        CHECK(value >= last);
        last = value;
        ++seen;
    }
    CHECK(seen == static_cast<int>(bucket_count) + 1);
}

TEST_CASE("seconds are written exactly from milliseconds", "[metrics]") {
    Snapshot s = one_route_snapshot();
    s.routes[1].retry_wait_ms = 51500;
    s.routes[1].attempt_duration.sum_ms = 7;
    s.routes[1].time_to_first_token.sum_ms = 2000;
    const std::string text = render(s);
    CHECK(sample(text, R"(modelproxy_retry_wait_seconds_total{route="openai"})") == "51.5");
    CHECK(sample(text, R"(modelproxy_attempt_duration_seconds_sum{route="openai"})") == "0.007");
    CHECK(sample(text, R"(modelproxy_time_to_first_token_seconds_sum{route="openai"})") == "2");
}

TEST_CASE("records are counted by their own values", "[metrics]") {
    Registry registry;
    const auto slot = registry.slot_for("openai");
    registry.set_workers(1);
    RouteCounters& c = registry.at(0, slot);

    count_turn(c, turn("ok", 1200, 300));
    count_turn(c, turn("refused", 40, std::nullopt, "model_identity_mismatch"));
    count_turn(c, turn("exhausted", 9000));
    count_attempt(c, attempt("server", 500), 30);
    count_attempt(c, attempt("", 0), 1100);
    count_attempt(c, attempt("rate-limit", 1000), 20);
    count_usage(c, modelproxy::sse::Usage{12, 34, 46});

    const Snapshot s = registry.snapshot();
    REQUIRE(s.routes.size() == 2);
    const RouteValues& v = s.routes[1];
    CHECK(v.route == "openai");
    CHECK(v.turns[*index_of(outcomes, "ok")] == 1);
    CHECK(v.turns[*index_of(outcomes, "refused")] == 1);
    CHECK(v.turns[*index_of(outcomes, "exhausted")] == 1);
    CHECK(v.refusals[*index_of(refusal_codes, "model_identity_mismatch")] == 1);
    CHECK(v.attempts[*attempt_class_index("server")] == 1);
    CHECK(v.attempts[*attempt_class_index("rate-limit")] == 1);
    CHECK(v.attempts[0] == 1);  // ok
    CHECK(v.retry_wait_ms == 1500);
    CHECK(v.tokens[0] == 12);
    CHECK(v.tokens[1] == 34);
    std::uint64_t turns = 0, attempts = 0, ttft = 0;
    for (auto n : v.turn_duration.buckets) turns += n;
    for (auto n : v.attempt_duration.buckets) attempts += n;
    for (auto n : v.time_to_first_token.buckets) ttft += n;
    CHECK(turns == 3);
    CHECK(attempts == 3);
    CHECK(ttft == 1);  // only the turn with a ttft_ms
    CHECK(v.turn_duration.sum_ms == 1200 + 40 + 9000);
    CHECK(v.attempt_duration.sum_ms == 30 + 1100 + 20);
    CHECK(v.time_to_first_token.sum_ms == 300);
}

TEST_CASE("a rejected turn counts on the unrouted slot without a duration", "[metrics]") {
    Registry registry;
    registry.set_workers(1);
    count_turn(registry.at(0, Registry::no_route_slot), turn("rejected", 0));
    const Snapshot s = registry.snapshot();
    REQUIRE(s.routes.size() == 1);
    CHECK(s.routes[0].route.empty());
    CHECK(s.routes[0].turns[*index_of(outcomes, "rejected")] == 1);
    CHECK(s.routes[0].turn_duration.buckets[0] == 0);
}

TEST_CASE("a scrape sums every worker's counters", "[metrics]") {
    Registry registry;
    registry.set_workers(3);
    const auto slot = registry.slot_for("anthropic");  // assigned after the workers were set
    std::vector<std::thread> threads;
    for (std::size_t w = 0; w < 3; ++w)
        threads.emplace_back([&, w] {
            for (int i = 0; i < 1000; ++i) count_attempt(registry.at(w, slot), attempt("server", 2), 1);
        });
    for (auto& t : threads) t.join();
    const Snapshot s = registry.snapshot();
    CHECK(s.routes[slot].attempts[*attempt_class_index("server")] == 3000);
    CHECK(s.routes[slot].retry_wait_ms == 6000);
}

TEST_CASE("a route name keeps its slot, new names get new ones, overflow shares (other)", "[metrics]") {
    Registry registry;
    registry.set_workers(1);
    const auto a = registry.slot_for("a");
    const auto b = registry.slot_for("b");
    CHECK(a != b);
    CHECK(a != Registry::no_route_slot);
    CHECK(registry.slot_for("a") == a);  // a reload naming it again
    count_turn(registry.at(0, a), turn("ok", 1));
    CHECK(registry.snapshot().routes[a].turns[0] == 1);

    // Slots 0 (""), a and b are taken: fill all but the last.
    for (std::size_t i = 0; i + 4 < Registry::max_slots; ++i) registry.slot_for("r" + std::to_string(i));
    CHECK(registry.snapshot().routes.size() == Registry::max_slots - 1);
    const auto last = registry.slot_for("one-more");
    CHECK(last == Registry::max_slots - 1);
    CHECK(registry.slot_for("and-another") == last);
    CHECK(registry.snapshot().routes[last].route == Registry::overflow_name);
    CHECK(registry.slot_for("a") == a);
}

TEST_CASE("attempt classes: ok and every error class, by their record spelling", "[metrics]") {
    CHECK(attempt_class_index("") == 0u);
    CHECK(attempt_class_name(0) == "ok");
    CHECK(attempt_class_name(*attempt_class_index("rate-limit")) == "rate-limit");
    CHECK(attempt_class_name(attempt_classes - 1) == "cancelled");
    CHECK_FALSE(attempt_class_index("nonsense"));
}

TEST_CASE("a stream's usage: the latest count of each kind, counted once", "[metrics]") {
    Registry registry;
    const auto slot = registry.slot_for("anthropic");
    registry.set_workers(1);
    {
        UsageTally tally(registry.at(0, slot));
        tally.see({25, 1, std::nullopt});             // message_start
        tally.see({std::nullopt, 15, std::nullopt});  // message_delta: cumulative output
        tally.see({});                                // an event without usage
        CHECK(registry.snapshot().routes[slot].tokens[1] == 0);  // not before the relay ends
    }
    const Snapshot s = registry.snapshot();
    CHECK(s.routes[slot].tokens[0] == 25);
    CHECK(s.routes[slot].tokens[1] == 15);
}

TEST_CASE("a held gauge is released once, also when moved", "[metrics]") {
    std::atomic<std::int64_t> gauge{0};
    {
        GaugeHold hold;
        hold.hold(gauge);
        hold.hold(gauge);  // already held: no second count
        CHECK(gauge == 1);
        GaugeHold moved(std::move(hold));
        CHECK(gauge == 1);
        hold.release();  // the moved-from hold holds nothing
        CHECK(gauge == 1);
    }
    CHECK(gauge == 0);
}

TEST_CASE("read_process finds this process's memory and descriptors", "[metrics]") {
    Snapshot s;
    read_process(s);
    REQUIRE(s.resident_memory_bytes);
    CHECK(*s.resident_memory_bytes > 0);
    REQUIRE(s.open_fds);
    CHECK(*s.open_fds >= 3);  // stdin, stdout, stderr
}
