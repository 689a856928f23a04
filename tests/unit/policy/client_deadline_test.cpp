#include "policy/client_deadline.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>
#include <string>

using namespace modelproxy::policy;

namespace {

using H = std::optional<std::string>;
using S = DeadlineSource;
constexpr auto absent = std::nullopt;

std::optional<std::string_view> view(const H& h) {
    if (!h) return std::nullopt;
    return std::string_view(*h);
}

}  // namespace

TEST_CASE("the client's deadline, less 500 ms, only shortens timeout_ms", "[client_deadline]") {
    // route timeout_ms, x-modelproxy-timeout-ms, x-stainless-timeout,
    // x-stainless-read-timeout -> turn deadline ms, source
    auto [route, modelproxy, stainless, read, ms, source] =
        GENERATE(table<std::int64_t, H, H, H, std::int64_t, S>({
            {300000, absent, absent, absent, 300000, S::route},
            // Each header alone.
            {300000, "10000", absent, absent, 9500, S::modelproxy_timeout_ms},
            {300000, absent, "60", absent, 59500, S::stainless_timeout},
            {300000, absent, absent, "2", 1500, S::stainless_read_timeout},
            {300000, absent, "5.5", absent, 5000, S::stainless_timeout},
            {300000, absent, "600.0", absent, 300000, S::route},
            {300000, absent, "1.0009", absent, 500, S::stainless_timeout},   // ms rounded down
            // Precedence: x-modelproxy-timeout-ms, else x-stainless-timeout, else read timeout.
            {300000, "10000", "5", "1", 9500, S::modelproxy_timeout_ms},
            {300000, absent, "5", "1", 4500, S::stainless_timeout},
            {300000, absent, "5", "100", 4500, S::stainless_timeout},
            // An unparseable value is ignored, as if absent.
            {300000, "abc", "5", absent, 4500, S::stainless_timeout},
            {300000, "1.5", "5", absent, 4500, S::stainless_timeout},       // integer ms only
            {300000, "-100", absent, absent, 300000, S::route},
            {300000, "", absent, absent, 300000, S::route},
            {300000, absent, "x", "2", 1500, S::stainless_read_timeout},
            {300000, absent, "-1", "nope", 300000, S::route},
            {300000, absent, "1e3", absent, 300000, S::route},
            // Only ever shortens.
            {300000, "300500", absent, absent, 300000, S::route},
            {300000, "300499", absent, absent, 299999, S::modelproxy_timeout_ms},
            {300000, "99999999999999999999", absent, absent, 300000, S::route},
            {5000, absent, "60", absent, 5000, S::route},
            // 500 ms or less leaves a deadline of 0: attempt 1 starts and is cut at once.
            {300000, "500", absent, absent, 0, S::modelproxy_timeout_ms},
            {300000, "400", absent, absent, 0, S::modelproxy_timeout_ms},
            {300000, "0", absent, absent, 0, S::modelproxy_timeout_ms},
            {300000, absent, "0.2", absent, 0, S::stainless_timeout},
            {300000, " 1500 ", absent, absent, 1000, S::modelproxy_timeout_ms},
        }));
    CAPTURE(route, modelproxy.value_or("-"), stainless.value_or("-"), read.value_or("-"));
    const TurnDeadline d = turn_deadline(route, {view(modelproxy), view(stainless), view(read)});
    CHECK(d.ms == ms);
    CHECK(to_string(d.source) == to_string(source));
}

TEST_CASE("the client deadline before the margin, and source names", "[client_deadline]") {
    const std::string five = "5";
    const auto c = client_deadline({std::nullopt, std::string_view(five), std::nullopt});
    REQUIRE(c);
    CHECK(c->ms == 5000);
    CHECK(c->source == S::stainless_timeout);
    CHECK_FALSE(client_deadline({}));
    CHECK(to_string(S::route) == "route");
    CHECK(to_string(S::modelproxy_timeout_ms) == "x-modelproxy-timeout-ms");
    CHECK(to_string(S::stainless_timeout) == "x-stainless-timeout");
    CHECK(to_string(S::stainless_read_timeout) == "x-stainless-read-timeout");
}
