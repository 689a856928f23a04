// Which kept TLS session a new upstream connection may offer for
// resumption (docs/behaviour.md section 4). Pure: the session's times and
// "now" are inputs; transport/tls_sessions.cpp reads them from OpenSSL and
// applies the answer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace modelproxy::policy {

// At most this many sessions are kept per route, host and port; the oldest
// goes first.
inline constexpr std::size_t tls_sessions_per_peer = 64;

// A kept session's times, in seconds since the Unix epoch.
struct TlsSessionTimes {
    std::int64_t issued = 0;    // when the connection was given it
    std::int64_t lifetime = 0;  // the provider's lifetime for it (the ticket's), seconds
    // The notAfter of the certificate that verified it; nullopt when there
    // was none to keep (a resumed connection is not verified again, so a
    // session never outlives the certificate).
    std::optional<std::int64_t> cert_not_after;
};

// Whether the session may still be offered at `now`: within its lifetime
// and before its certificate's notAfter.
constexpr bool tls_session_offerable(const TlsSessionTimes& s, std::int64_t now) {
    if (now >= s.issued + s.lifetime) return false;
    return !s.cert_not_after || now < *s.cert_not_after;
}

// What a new connection takes from the `kept` offerable sessions: the
// newest itself while another stays (RFC 8446 asks TLS 1.3 clients to use a
// ticket once), a copy of the last one rather than none (a TLS 1.2 session,
// which a resumption does not renew, stays usable), or nothing.
enum class TlsSessionTake { none, newest, copy_of_newest };
constexpr TlsSessionTake tls_session_take(std::size_t kept) {
    return kept > 1 ? TlsSessionTake::newest : kept == 1 ? TlsSessionTake::copy_of_newest : TlsSessionTake::none;
}

}  // namespace modelproxy::policy
