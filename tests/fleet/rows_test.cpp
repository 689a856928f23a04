#include "fleet/rows.hpp"

#include <catch2/catch.hpp>

using namespace modelproxy::fleet;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("each row's config differs from the others only in section 15's keys", "[fleet]") {
    struct Case {
        RowKind row;
        std::vector<std::string> present, absent;
    };
    const std::vector<Case> cases{
        {RowKind::per_replica, {"    quota: { requests_per_minute: 120 }\n"}, {"fleet:", "tokens_per_minute"}},
        {RowKind::shared,
         {"fleet:\n  redis: redis://127.0.0.1:6390/0\n",
          "    quota: { requests_per_minute: 6000, tokens_per_minute: 1200000 }\n"},
         {}},
        {RowKind::killed,
         {"fleet:\n  redis: redis://127.0.0.1:6390/0\n",
          "    quota: { requests_per_minute: 6000, tokens_per_minute: 1200000 }\n"},
         {}},
    };
    const RowSettings settings{.provider_port = 4321, .redis_url = "redis://127.0.0.1:6390/0"};
    for (const auto& c : cases) {
        CAPTURE(to_string(c.row));
        const std::string y = row_config(c.row, settings);
        CHECK(has(y, "    upstream: http://127.0.0.1:4321/v1\n    timeout_ms: 60000\n    models: [gpt-4o]\n"));
        for (const char* defaulted : {"retry:", "admission:", "workers", "listen"}) CHECK_FALSE(has(y, defaulted));
        for (const auto& p : c.present) CHECK(has(y, p));
        for (const auto& a : c.absent) CHECK_FALSE(has(y, a));
    }
    // The killed row's config is the shared row's; only the comment line names the row.
    const auto body = [&](RowKind r) {
        const std::string y = row_config(r, settings);
        return y.substr(y.find('\n'));
    };
    CHECK(body(RowKind::shared) == body(RowKind::killed));
}

TEST_CASE("a replica's share of the quota is rounded down, at least 1", "[fleet]") {
    CHECK(replica_share(6000, 50) == 120);
    CHECK(replica_share(6000, 7) == 857);
    CHECK(replica_share(10, 50) == 1);
    CHECK(replica_share(6000, 1) == 6000);
}
