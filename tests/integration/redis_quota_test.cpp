// transport/redis_quota: the fleet's quota script (docs/behaviour.md
// section 15, "Quota by reservation") run by a real redis-server: the
// window's limits on requests and tokens, the wait a refusal gives, settling,
// two replicas sharing one window, what is stored and for how long, and the
// script surviving Redis's loss of its script cache.
//
// The window's clock is Redis's TIME, so a test that needs old buckets
// writes them with HSET at seconds read from TIME; its bounds allow for the
// second changing between the two.
#include "support/redis_server.hpp"

#include "support/run_task.hpp"
#include "transport/redis_quota.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

using namespace modelproxy::test;
using namespace modelproxy::transport;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;
using Kind = RedisResult::Kind;
using Outcome = QuotaReservation::Outcome;
using Strings = std::vector<std::string>;

namespace {

constexpr auto slow = 5000ms;

struct Replica {
    boost::asio::io_context& io;
    RedisClient client;
    RedisQuota quota;
    Replica(boost::asio::io_context& context, const RedisServer& server, std::string prefix = "modelproxy:")
        : io(context),
          client(context.get_executor(), RedisOptions{.url = std::get<RedisUrl>(parse_redis_url(server.url()))}),
          quota(client, std::move(prefix)) {}

    RedisResult call(Strings args) { return run_task(io, client.call(std::move(args), slow)); }
    QuotaReservation reserve(const std::string& route, QuotaLimits limits, std::int64_t tokens) {
        return run_task(io, quota.reserve(route, limits, tokens, slow));
    }
    QuotaSettlement settle(const std::string& route, std::int64_t second, std::int64_t delta) {
        return run_task(io, quota.settle(route, second, delta, slow));
    }
    long long redis_now() {
        const RedisResult t = call({"TIME"});
        REQUIRE(t.kind == Kind::array);
        return std::stoll(t.elements.at(0).text);
    }
    long long field(const std::string& route, const std::string& name) {
        const RedisResult r = call({"HGET", quota.key(route), name});
        return r.kind == Kind::nil ? -1 : std::stoll(r.text);
    }
};

}  // namespace

TEST_CASE("quota: requests are reserved up to requests_per_minute, then refused with a wait", "[redis][quota]") {
    RedisServer server;
    boost::asio::io_context io{1};
    Replica r(io, server);
    const QuotaLimits limits{.requests_per_minute = 5};
    for (int i = 0; i < 5; ++i) {
        CAPTURE(i);
        const QuotaReservation got = r.reserve("openai", limits, 100);
        REQUIRE(got.outcome == Outcome::reserved);
        CHECK(got.tokens == 100);
        CHECK(got.bucket_second > 1600000000);
    }
    const QuotaReservation refused = r.reserve("openai", limits, 100);
    CHECK(refused.outcome == Outcome::wait);
    CHECK(refused.wait >= 1ms);
    CHECK(refused.wait <= 61000ms);
    // Another route has its own window.
    CHECK(r.reserve("anthropic", limits, 100).outcome == Outcome::reserved);
}

TEST_CASE("quota: tokens are reserved up to tokens_per_minute, and an ask above it is charged at the limit",
          "[redis][quota]") {
    RedisServer server;
    boost::asio::io_context io{1};
    Replica r(io, server);
    const QuotaLimits limits{.tokens_per_minute = 1000};
    CHECK(r.reserve("t", limits, 600).outcome == Outcome::reserved);
    CHECK(r.reserve("t", limits, 500).outcome == Outcome::wait);
    CHECK(r.reserve("t", limits, 400).outcome == Outcome::reserved);
    CHECK(r.reserve("t", limits, 1).outcome == Outcome::wait);
    CHECK(r.reserve("t", limits, 0).outcome == Outcome::reserved);  // no tokens asked, no request limit

    const QuotaReservation huge = r.reserve("fresh", limits, 5000);
    REQUIRE(huge.outcome == Outcome::reserved);
    CHECK(huge.tokens == 1000);
    CHECK(r.field("fresh", "t:" + std::to_string(huge.bucket_second)) == 1000);
    // Both limits at once: the tighter one refuses.
    const QuotaLimits both{.requests_per_minute = 2, .tokens_per_minute = 1000000};
    CHECK(r.reserve("both", both, 10).outcome == Outcome::reserved);
    CHECK(r.reserve("both", both, 10).outcome == Outcome::reserved);
    CHECK(r.reserve("both", both, 10).outcome == Outcome::wait);
}

TEST_CASE("quota: the wait is until enough of the oldest buckets leave the window, and buckets older than a minute "
          "are deleted and not counted",
          "[redis][quota]") {
    RedisServer server;
    boost::asio::io_context io{1};
    Replica r(io, server);
    const long long now = r.redis_now();
    const std::string key = r.quota.key("w");
    // Requests: 2 at now-58, 1 at now-30; a minute-old bucket of 50 that must not count.
    REQUIRE(r.call({"HSET", key, "r:" + std::to_string(now - 58), "2", "t:" + std::to_string(now - 58), "10",
                    "r:" + std::to_string(now - 30), "1", "t:" + std::to_string(now - 30), "80",
                    "r:" + std::to_string(now - 100), "50", "t:" + std::to_string(now - 100), "900"})
                .ok());

    // rpm 3: 3 in the window; one must leave: now-58's bucket, at (now + 3) s.
    const QuotaReservation by_requests = r.reserve("w", {.requests_per_minute = 3}, 0);
    REQUIRE(by_requests.outcome == Outcome::wait);
    CHECK(by_requests.wait >= 1ms);
    CHECK(by_requests.wait > 2000ms);
    CHECK(by_requests.wait <= 3000ms);
    CHECK(r.field("w", "r:" + std::to_string(now - 100)) == -1);
    CHECK(r.field("w", "t:" + std::to_string(now - 100)) == -1);

    // tpm 100 with 90 in the window, 50 asked: both buckets must leave; now-30's does at (now + 31) s.
    const QuotaReservation by_tokens = r.reserve("w", {.tokens_per_minute = 100}, 50);
    REQUIRE(by_tokens.outcome == Outcome::wait);
    CHECK(by_tokens.wait > 30000ms);
    CHECK(by_tokens.wait <= 31000ms);

    // rpm 4 has room for one more: the minute-old 50 did not count.
    CHECK(r.reserve("w", {.requests_per_minute = 4}, 0).outcome == Outcome::reserved);
}

TEST_CASE("quota: settle charges and gives back tokens in the reservation's bucket, never below 0, and only "
          "inside the window",
          "[redis][quota]") {
    RedisServer server;
    boost::asio::io_context io{1};
    Replica r(io, server);
    const QuotaReservation got = r.reserve("s", {}, 100);
    REQUIRE(got.outcome == Outcome::reserved);
    const std::string tokens = "t:" + std::to_string(got.bucket_second);
    CHECK(r.field("s", tokens) == 100);
    CHECK(r.field("s", "r:" + std::to_string(got.bucket_second)) == 1);

    const QuotaSettlement charged = r.settle("s", got.bucket_second, 50);  // usage above the estimate
    CHECK_FALSE(charged.failed);
    CHECK(charged.applied);
    CHECK(r.field("s", tokens) == 150);
    CHECK(r.settle("s", got.bucket_second, -120).applied);  // given back
    CHECK(r.field("s", tokens) == 30);
    CHECK(r.settle("s", got.bucket_second, -1000).applied);
    CHECK(r.field("s", tokens) == 0);

    // A bucket that left the window, or that holds no reservation: nothing changes, nothing is made.
    const long long now = r.redis_now();
    const QuotaSettlement old = r.settle("s", now - 70, 500);
    CHECK_FALSE(old.failed);
    CHECK_FALSE(old.applied);
    CHECK(r.field("s", "t:" + std::to_string(now - 70)) == -1);
    CHECK_FALSE(r.settle("s", now - 10, 500).applied);
    CHECK(r.field("s", "t:" + std::to_string(now - 10)) == -1);
    CHECK_FALSE(r.settle("never-reserved", now, 5).applied);
    CHECK(r.call({"EXISTS", r.quota.key("never-reserved")}).integer == 0);

    // Tokens given back make room for a later reservation.
    const QuotaLimits limits{.tokens_per_minute = 1000};
    const QuotaReservation first = r.reserve("room", limits, 900);
    REQUIRE(first.outcome == Outcome::reserved);
    CHECK(r.reserve("room", limits, 500).outcome == Outcome::wait);
    CHECK(r.settle("room", first.bucket_second, -600).applied);
    CHECK(r.reserve("room", limits, 500).outcome == Outcome::reserved);
}

TEST_CASE("quota: two replicas on their own connections share one window", "[redis][quota]") {
    RedisServer server;
    boost::asio::io_context io{1};
    Replica a(io, server);
    Replica b(io, server);
    const QuotaLimits limits{.requests_per_minute = 10};
    int reserved = 0, waited = 0, done = 0;
    for (int i = 0; i < 30; ++i) {
        Replica* replica = i % 2 == 0 ? &a : &b;
        boost::asio::co_spawn(
            io,
            [&, replica]() -> Task<void> {
                const QuotaReservation got = co_await replica->quota.reserve("shared", limits, 1, slow);
                if (got.outcome == Outcome::reserved) ++reserved;
                if (got.outcome == Outcome::wait) ++waited;
                ++done;
            },
            boost::asio::detached);
    }
    while (done < 30) io.run_one();
    CHECK(reserved == 10);
    CHECK(waited == 20);
    CHECK(a.reserve("shared", limits, 1).outcome == Outcome::wait);
    CHECK(b.reserve("shared", limits, 1).outcome == Outcome::wait);
}

TEST_CASE("quota: only the route's hash of counts is stored, under the prefix, and it expires", "[redis][quota]") {
    RedisServer server;
    boost::asio::io_context io{1};
    Replica r(io, server, "fleet-a:");
    const QuotaReservation got = r.reserve("openai", {.requests_per_minute = 100, .tokens_per_minute = 1000}, 42);
    REQUIRE(got.outcome == Outcome::reserved);
    CHECK(r.quota.key("openai") == "fleet-a:quota:openai");

    const RedisResult keys = r.call({"KEYS", "*"});
    REQUIRE(keys.elements.size() == 1);
    CHECK(keys.elements[0].text == "fleet-a:quota:openai");
    CHECK(r.call({"TYPE", "fleet-a:quota:openai"}).text == "hash");
    const RedisResult fields = r.call({"HGETALL", "fleet-a:quota:openai"});
    REQUIRE(fields.elements.size() == 4);
    for (std::size_t i = 0; i < fields.elements.size(); i += 2) {
        const std::string& name = fields.elements[i].text;
        CAPTURE(name);
        CHECK((name == "r:" + std::to_string(got.bucket_second) || name == "t:" + std::to_string(got.bucket_second)));
    }
    const RedisResult ttl = r.call({"PTTL", "fleet-a:quota:openai"});
    CHECK(ttl.integer > 100000);
    CHECK(ttl.integer <= 120000);

    // A settle renews it; a refused reservation writes nothing.
    REQUIRE(r.call({"PEXPIRE", "fleet-a:quota:openai", "5000"}).integer == 1);
    CHECK(r.settle("openai", got.bucket_second, 8).applied);
    CHECK(r.call({"PTTL", "fleet-a:quota:openai"}).integer > 100000);
    REQUIRE(r.call({"PEXPIRE", "fleet-a:quota:openai", "5000"}).integer == 1);
    CHECK(r.reserve("openai", {.tokens_per_minute = 10}, 5).outcome == Outcome::wait);
    CHECK(r.call({"PTTL", "fleet-a:quota:openai"}).integer <= 5000);

    // Expiry really removes it: PEXPIRE 1, then reads until one finds it
    // gone (a read of an expired key deletes it), for at most 2 s.
    REQUIRE(r.call({"PEXPIRE", "fleet-a:quota:openai", "1"}).integer == 1);
    const auto give_up = std::chrono::steady_clock::now() + 2s;
    RedisResult exists;
    do {
        exists = r.call({"EXISTS", "fleet-a:quota:openai"});
    } while (exists.integer == 1 && std::chrono::steady_clock::now() < give_up);
    CHECK(exists.integer == 0);
}

TEST_CASE("quota: after SCRIPT FLUSH the next call loads the script again and still counts", "[redis][quota]") {
    RedisServer server;
    boost::asio::io_context io{1};
    Replica r(io, server);
    const QuotaLimits limits{.requests_per_minute = 2};
    REQUIRE(r.reserve("f", limits, 1).outcome == Outcome::reserved);
    CHECK(r.call({"SCRIPT", "EXISTS", quota_script().sha1}).elements.at(0).integer == 1);
    REQUIRE(r.call({"SCRIPT", "FLUSH"}).ok());
    CHECK(r.call({"SCRIPT", "EXISTS", quota_script().sha1}).elements.at(0).integer == 0);
    CHECK(r.reserve("f", limits, 1).outcome == Outcome::reserved);
    CHECK(r.call({"SCRIPT", "EXISTS", quota_script().sha1}).elements.at(0).integer == 1);
    CHECK(r.reserve("f", limits, 1).outcome == Outcome::wait);
}

TEST_CASE("quota: with Redis down a reservation and a settlement fail at once with the reason", "[redis][quota]") {
    RedisServer server;
    boost::asio::io_context io{1};
    Replica r(io, server);
    server.stop();
    const QuotaReservation got = r.reserve("down", {.requests_per_minute = 5}, 1);
    CHECK(got.outcome == Outcome::failed);
    CHECK_THAT(got.error, Contains("cannot connect"));
    const QuotaSettlement settled = r.settle("down", 1700000000, 5);
    CHECK(settled.failed);
    CHECK_FALSE(settled.applied);
    CHECK_THAT(settled.error, Contains("cannot connect"));
}
