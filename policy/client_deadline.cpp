#include "policy/client_deadline.hpp"

#include "policy/decimal.hpp"

#include <algorithm>

namespace modelproxy::policy {

std::string_view to_string(DeadlineSource s) {
    switch (s) {
        case DeadlineSource::route: return "route";
        case DeadlineSource::modelproxy_timeout_ms: return "x-modelproxy-timeout-ms";
        case DeadlineSource::stainless_timeout: return "x-stainless-timeout";
        case DeadlineSource::stainless_read_timeout: return "x-stainless-read-timeout";
    }
    return "unknown";
}

std::optional<ClientDeadline> client_deadline(const ClientDeadlineHeaders& headers) {
    if (headers.modelproxy_timeout_ms) {
        if (auto ms = parse_unsigned_integer(*headers.modelproxy_timeout_ms)) {
            return ClientDeadline{*ms, DeadlineSource::modelproxy_timeout_ms};
        }
    }
    if (headers.stainless_timeout) {
        if (auto ms = parse_decimal_scaled(*headers.stainless_timeout, 1000, Rounding::down)) {
            return ClientDeadline{*ms, DeadlineSource::stainless_timeout};
        }
    }
    if (headers.stainless_read_timeout) {
        if (auto ms = parse_decimal_scaled(*headers.stainless_read_timeout, 1000, Rounding::down)) {
            return ClientDeadline{*ms, DeadlineSource::stainless_read_timeout};
        }
    }
    return std::nullopt;
}

TurnDeadline turn_deadline(std::int64_t route_timeout_ms, const ClientDeadlineHeaders& headers) {
    const std::int64_t route = std::max<std::int64_t>(0, route_timeout_ms);
    const auto client = client_deadline(headers);
    if (!client) return {route, DeadlineSource::route};
    const std::int64_t shortened =
        std::max<std::int64_t>(0, client->ms - client_deadline_margin_ms);
    if (shortened >= route) return {route, DeadlineSource::route};
    return {shortened, client->source};
}

}  // namespace modelproxy::policy
