// The turn and its route's quota (docs/behaviour.md section 15): one
// reservation per attempt, in the fleet's Redis while it is up, else in this
// replica's own window (its share of the quota while Redis is down), waited
// for like an admission slot, settled by the answer's `usage`. The window
// arithmetic is policy/'s (QuotaWindow) and the Redis script transport/'s
// (RedisQuota); this file does the calls and the one wait.
#include "policy/fleet.hpp"
#include "proxy/fleet.hpp"
#include "proxy/turn_run.hpp"
#include "request/token_estimate.hpp"
#include "transport/redis_quota.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include <algorithm>

namespace modelproxy::proxy {

namespace {

// A settlement goes on without the turn: the turn never waits for it.
Task<void> settle_in_redis(transport::RedisClient* client, std::string prefix, std::string route,
                           std::int64_t second, std::int64_t delta, std::chrono::milliseconds timeout) {
    transport::RedisQuota quota(*client, std::move(prefix));
    const transport::QuotaSettlement s = co_await quota.settle(std::move(route), second, delta, timeout);
    Fleet::process().on_call(!s.failed, s.error);
}

}  // namespace

Task<std::optional<bool>> TurnRun::pass_gates(Failed* last) {
    if (route_->admission.enabled) {
        if (auto ended = co_await pass_admission(last)) co_return ended;
    }
    if (route_->quota) co_return co_await pass_quota(last);
    co_return std::nullopt;
}

void TurnRun::note_usage(const sse::Usage& usage) {
    if (usage.total_tokens) {
        usage_tokens_ = static_cast<std::int64_t>(*usage.total_tokens);
    } else if (usage.input_tokens || usage.output_tokens) {
        usage_tokens_ = static_cast<std::int64_t>(usage.input_tokens.value_or(0) + usage.output_tokens.value_or(0));
    }
}

Task<std::optional<bool>> TurnRun::pass_quota(Failed* last) {
    const config::Route& route = *route_;
    const config::Quota& q = *route.quota;
    Fleet& fleet = Fleet::process();
    const auto start = clock_.now();
    // Inside the turn's deadline and queue_timeout_ms (0: the deadline), as
    // an admission wait.
    const std::int64_t left = std::max<std::int64_t>(replays_.left_ms(start), 0);
    const std::int64_t queue_ms =
        route.admission.queue_timeout_ms > 0 ? std::min(route.admission.queue_timeout_ms, left) : left;
    const auto until = start + std::chrono::milliseconds(queue_ms);
    const std::string_view content_type =
        plan_.client_fields ? plan_.client_fields->content_type.value_or("") : std::string_view();
    const std::int64_t tokens = request::estimate_tokens(content_type, plan_.body, q.tokens_per_minute).tokens;
    usage_tokens_.reset();
    std::optional<Timer> timer;
    const config::Config& cfg = plan_.runtime->config;
    // This replica's share of the quota (with a fleet), or the whole of it.
    policy::QuotaAsk own;
    own.requests_per_minute = q.requests_per_minute;
    own.tokens_per_minute = q.tokens_per_minute;
    own.tokens = tokens;
    for (;;) {
        std::int64_t wait_ms = 0;
        bool waits = false;
        if (cfg.fleet) {
            const std::int64_t replicas = fleet.replicas_seen();
            own.requests_per_minute = policy::fleet_share(q.requests_per_minute, replicas);
            own.tokens_per_minute = policy::fleet_share(q.tokens_per_minute, replicas);
        }
        if (cfg.fleet && fleet.enabled() && fleet.up()) {
            // Mirrored in the own window first: within a minute of Redis
            // coming back (it may have forgotten the minute) the share must
            // fit too; otherwise the mirror only records.
            auto now = clock_.now();
            policy::QuotaAsk mirror{0, 0, tokens};
            if (fleet.recently_resumed(now)) mirror = own;
            const policy::QuotaAnswer local = fleet.reserve_local(route.name, mirror, now);
            if (!local.reserved) {
                waits = true;
                wait_ms = local.wait_ms;
            } else {
                transport::RedisQuota shared(worker_.redis(*plan_.runtime), cfg.fleet->key_prefix);
                const std::chrono::milliseconds timeout(cfg.fleet->timeout_ms);
                const transport::QuotaReservation r = co_await shared.reserve(
                    route.name, transport::QuotaLimits{q.requests_per_minute, q.tokens_per_minute}, tokens, timeout);
                const bool failed = r.outcome == transport::QuotaReservation::Outcome::failed;
                fleet.on_call(!failed, r.error);
                if (r.outcome == transport::QuotaReservation::Outcome::reserved) {
                    quota_ = QuotaHeld{true, true, r.bucket_second, r.tokens, &route, true, local.second, local.tokens};
                    if (watch_cut()) co_return false;  // given back with the turn
                    co_return std::nullopt;
                }
                fleet.cancel_local(route.name, local.second, local.tokens, clock_.now());
                if (watch_cut()) co_return false;
                if (!failed) {
                    waits = true;
                    wait_ms = r.wait.count();
                }
                // A failed call: this replica's own window decides, at once.
            }
        }
        if (!waits) {
            // No fleet: the whole quota here. Redis down: this replica's
            // share, against a window that holds its last minute.
            const auto now = clock_.now();
            const policy::QuotaAnswer a = fleet.reserve_local(route.name, own, now);
            if (a.reserved) {
                quota_ = QuotaHeld{true, false, a.second, a.tokens, &route};
                co_return std::nullopt;
            }
            wait_ms = a.wait_ms;
        }
        const auto now = clock_.now();
        if (now + std::chrono::milliseconds(wait_ms) > until) {
            co_return co_await refuse_admission(last, (wait_ms + 999) / 1000, policy::FailureKind::quota_timeout);
        }
        if (!timer) timer.emplace(client_.get_executor());
        timer->expires_after(std::chrono::milliseconds(wait_ms));
        co_await timer->async_wait(use_tuple);
        if (watch_cut()) co_return false;
    }
}

void TurnRun::settle_quota(bool answered) {
    if (!quota_.held) return;
    quota_.held = false;
    // No 2xx answer: the request stays counted, its tokens go back. A 2xx
    // answer: charged what its usage says, else the estimate stands.
    std::int64_t delta = -quota_.tokens;
    if (answered) delta = usage_tokens_ ? *usage_tokens_ - quota_.tokens : 0;
    usage_tokens_.reset();
    if (delta == 0) return;
    const config::Route& route = *quota_.route;
    if (!quota_.redis) {
        Fleet::process().settle_local(route.name, quota_.second, delta, clock_.now());
        return;
    }
    if (quota_.mirrored) {
        const std::int64_t local_delta = answered ? delta : -quota_.local_tokens;
        Fleet::process().settle_local(route.name, quota_.local_second, local_delta, clock_.now());
    }
    const config::Config& cfg = plan_.runtime->config;
    if (!cfg.fleet) return;
    asio::co_spawn(client_.get_executor(),
                   settle_in_redis(&worker_.redis(*plan_.runtime), cfg.fleet->key_prefix, route.name, quota_.second,
                                   delta, std::chrono::milliseconds(cfg.fleet->timeout_ms)),
                   asio::detached);
}

}  // namespace modelproxy::proxy
