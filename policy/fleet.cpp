#include "policy/fleet.hpp"

#include <algorithm>

namespace modelproxy::policy {

FleetChange FleetHealth::on_call(bool ok) {
    if (!up_) {
        return FleetChange::none;
    }
    if (ok) {
        failures_ = 0;
        return FleetChange::none;
    }
    if (++failures_ < fleet_down_after) {
        return FleetChange::none;
    }
    up_ = false;
    ping_delay_ = fleet_first_ping;
    good_since_.reset();
    return FleetChange::down;
}

FleetChange FleetHealth::on_ping(bool ok, Time now) {
    if (up_) {
        return FleetChange::none;
    }
    if (!ok) {
        good_since_.reset();
        ping_delay_ = std::min(ping_delay_ * 2, fleet_max_ping);
        return FleetChange::none;
    }
    ping_delay_ = fleet_first_ping;
    if (!good_since_) {
        good_since_ = now;
    }
    if (now - *good_since_ < fleet_up_after) {
        return FleetChange::none;
    }
    up_ = true;
    failures_ = 0;
    good_since_.reset();
    return FleetChange::up;
}

std::int64_t fleet_share(std::int64_t quota, std::int64_t replicas_seen) {
    if (quota <= 0) {
        return 0;
    }
    return std::max<std::int64_t>(1, quota / std::max<std::int64_t>(1, replicas_seen));
}

bool shared_breaker_counts(ErrorClass cls, int http_status, bool server_error_event) {
    if (cls != ErrorClass::server) {
        return false;
    }
    return (http_status >= 500 && http_status <= 599) || server_error_event;
}

}  // namespace modelproxy::policy
