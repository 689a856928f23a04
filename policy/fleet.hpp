// The parts of docs/behaviour.md section 15 a replica decides alone: whether
// it treats Redis as up (and when it pings it while not), its share of a
// route's quota while Redis is down, and which failures count toward the
// shared part of a candidate's breaker. Pure: the caller passes the time of
// every event, judges each Redis call itself (failed, refused, or slower than
// fleet.timeout_ms) and keeps the state under its own lock; nothing here
// reads a clock, arms a timer or talks to Redis.
#pragma once

#include "policy/error_class.hpp"

#include <chrono>
#include <cstdint>
#include <optional>

namespace modelproxy::policy {

// Failed or slow Redis calls in a row that take a replica's Redis down.
inline constexpr int fleet_down_after = 3;
// The background pings while down: the first delay, doubled after each
// failed ping, at most the cap.
inline constexpr std::chrono::milliseconds fleet_first_ping{100};
inline constexpr std::chrono::milliseconds fleet_max_ping{5000};
// How long a run of good pings must last before the replica shares again.
inline constexpr std::chrono::milliseconds fleet_up_after{3000};

// A change of FleetHealth's state: the caller writes one stderr line for
// each and sets modelproxy_fleet_up.
enum class FleetChange { none, down, up };

class FleetHealth {
public:
    using Time = std::chrono::steady_clock::time_point;

    // Up until calls say otherwise.
    bool up() const { return up_; }

    // A Redis call ended (a quota reservation, a refresh of the shared state,
    // a transition written); `ok` false when it failed, was refused or was
    // slower than fleet.timeout_ms. Up: a good call ends the run of failures;
    // the fleet_down_after-th failure in a row -> down (FleetChange::down), and
    // the pings start at fleet_first_ping. Down: nothing (the replica makes
    // no calls but pings then, and a call in flight when Redis went down
    // says nothing the pings do not).
    FleetChange on_call(bool ok);

    // A background ping ended at `now`. Down: a failed ping ends the run of
    // good pings and doubles the delay to the next one (at most
    // fleet_max_ping); a good ping starts a run (at `now`) or extends it, and
    // the next ping comes fleet_first_ping later; once every ping since the
    // run's first has been good and the first was at least fleet_up_after
    // before `now` -> up (FleetChange::up), the run of failures at 0. Up:
    // nothing.
    FleetChange on_ping(bool ok, Time now);

    // While down, how long after the last ping (or after going down) the
    // next one is sent.
    std::chrono::milliseconds next_ping_delay() const { return ping_delay_; }

    int failures_in_row() const { return failures_; }
    // When the current run of good pings began; nullopt when none runs.
    std::optional<Time> good_since() const { return good_since_; }

private:
    bool up_ = true;
    int failures_ = 0;
    std::chrono::milliseconds ping_delay_ = fleet_first_ping;
    std::optional<Time> good_since_;
};

// A quota's share for one replica while its Redis is down: `quota` divided
// by the replicas it last saw (from their heartbeats; fewer than 1 reads as
// 1), rounded down, at least 1, so a fleet larger than its quota still lets
// each replica send. A quota of 0 (no limit on that dimension) stays 0.
std::int64_t fleet_share(std::int64_t quota, std::int64_t replicas_seen);

// Whether an attempt's failure counts toward the shared part of its
// candidate's breaker: only a failure the provider declared, of class
// server, either an HTTP 5xx answer (529 included) or a server-class error
// event (`server_error_event`, a 200 stream's). Network and timeout failures
// never count there (a 504 is class timeout), nor a 425 (class server but
// not 5xx), nor any other class: they count in the replica's own breaker
// only, so one replica's broken network never opens a breaker for the fleet.
bool shared_breaker_counts(ErrorClass cls, int http_status, bool server_error_event);

}  // namespace modelproxy::policy
