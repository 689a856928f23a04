// The turn deadline, docs/behaviour.md section 6: the route's timeout_ms, shortened by the
// client's own deadline (x-modelproxy-timeout-ms, else x-stainless-timeout,
// else x-stainless-read-timeout) less 500 ms. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace modelproxy::policy {

// The client's deadline headers, absent when not sent.
struct ClientDeadlineHeaders {
    std::optional<std::string_view> modelproxy_timeout_ms;   // integer milliseconds
    std::optional<std::string_view> stainless_timeout;       // decimal seconds
    std::optional<std::string_view> stainless_read_timeout;  // decimal seconds
};

// Which value set the turn deadline.
enum class DeadlineSource { route, modelproxy_timeout_ms, stainless_timeout, stainless_read_timeout };

std::string_view to_string(DeadlineSource s);  // "route", "x-modelproxy-timeout-ms", ...

struct TurnDeadline {
    std::int64_t ms = 0;   // the turn deadline, from the turn's start; never above timeout_ms
    DeadlineSource source = DeadlineSource::route;

    friend bool operator==(const TurnDeadline&, const TurnDeadline&) = default;
};

// The answer must reach the client before its own deadline.
inline constexpr std::int64_t client_deadline_margin_ms = 500;

// The first header, in the order above, whose value parses is the client's
// deadline; an unparseable one is ignored as if absent. Less 500 ms, never
// below 0, and it only ever shortens route_timeout_ms (a client deadline
// that is longer, or equal, leaves source route). A deadline of 0 is kept:
// attempt 1 still starts (section 6), and is cut at once (504, deadline).
// Seconds are converted to ms rounding down (never later than the client).
TurnDeadline turn_deadline(std::int64_t route_timeout_ms, const ClientDeadlineHeaders& headers);

// The client's deadline in ms before the margin, nullopt when none parses,
// and which header gave it.
struct ClientDeadline {
    std::int64_t ms = 0;
    DeadlineSource source = DeadlineSource::route;
};
std::optional<ClientDeadline> client_deadline(const ClientDeadlineHeaders& headers);

}  // namespace modelproxy::policy
