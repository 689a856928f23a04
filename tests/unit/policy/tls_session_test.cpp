#include "policy/tls_session.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>

using namespace modelproxy::policy;

TEST_CASE("a kept TLS session is offered within its lifetime and before its certificate expires", "[tls_session]") {
    constexpr std::int64_t t = 1'800'000'000;
    struct Row {
        TlsSessionTimes times;
        std::int64_t now;
        bool offerable;
    };
    const Row rows[] = {
        {{t, 300, t + 86400}, t, true},              // just given
        {{t, 300, t + 86400}, t + 299, true},        // the last second of its lifetime
        {{t, 300, t + 86400}, t + 300, false},       // its lifetime is over
        {{t, 300, t + 100}, t + 99, true},           // the certificate's last second
        {{t, 300, t + 100}, t + 100, false},         // the certificate expired first
        {{t, 300, t - 1}, t, false},                 // a certificate already expired
        {{t, 300, std::nullopt}, t + 299, true},     // no certificate kept: the lifetime alone
        {{t, 0, t + 86400}, t, false},               // a lifetime of 0: never
        {{t, 7 * 86400, t + 86400}, t + 86400, false},  // a week's ticket, a day's certificate
    };
    for (const Row& r : rows) {
        CAPTURE(r.times.issued, r.times.lifetime, r.times.cert_not_after.value_or(-1), r.now);
        CHECK(tls_session_offerable(r.times, r.now) == r.offerable);
    }
}

TEST_CASE("a new connection takes the newest session while another stays, else a copy of the last", "[tls_session]") {
    CHECK(tls_session_take(0) == TlsSessionTake::none);
    CHECK(tls_session_take(1) == TlsSessionTake::copy_of_newest);
    CHECK(tls_session_take(2) == TlsSessionTake::newest);
    CHECK(tls_session_take(tls_sessions_per_peer) == TlsSessionTake::newest);
}
