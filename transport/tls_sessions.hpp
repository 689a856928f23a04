// Resuming TLS sessions with upstreams (docs/behaviour.md section 4). A new
// connection to a provider costs a full handshake: a round trip more than a
// resumed one and the certificate's public-key operations at both ends. The
// sessions (TLS 1.3 tickets, TLS 1.2 sessions) an upstream gives are kept,
// per route's TLS context and per host and port, and a later connection to
// the same host and port offers one; the provider decides whether to resume.
//
// What is kept, and for how long (the rules themselves, table-tested, are
// policy/tls_session.hpp's; this file holds the sessions and applies them):
// - Sessions live in the route's SSL_CTX, so they follow its trust roots
//   and client certificate: a route never resumes another route's session,
//   and a configuration reload (a new context) starts without any.
// - Each session is offered once while another is kept; the last one is
//   copied instead. At most policy::tls_sessions_per_peer are kept per host
//   and port, the newest; OpenSSL's server sends two after a full handshake
//   and one after a resumption, so a pool refilled at once after a burst
//   finds enough.
// - A session is not offered past its own timeout (the provider's ticket
//   lifetime) nor past its certificate's notAfter: a resumed connection is
//   not verified again, so it must not outlive what verified it.
//
// Threading: a context is shared by every worker; its sessions are behind
// one mutex, taken once per new connection and per session received. The
// shelf holds copies (SSL_SESSION_dup) of the sessions connections were
// given, and a connection offers a session no other holds: no session
// object is used on two threads.
#pragma once

#include <openssl/ssl.h>

#include <ctime>
#include <string_view>

namespace modelproxy::transport::tls {

// Makes `context` keep the sessions its connections are given. Once, when
// the context is made, before any connection. False when OpenSSL could not
// (the context then works as before, with full handshakes).
bool keep_sessions(SSL_CTX* context);

// Before the handshake of `ssl` (of a context keep_sessions prepared) to
// `peer` ("host:port"): offers the newest session kept for `peer` that is
// still good at `now`, and has the sessions this connection is given kept
// for `peer`. Does nothing on a context that keeps none.
void offer_session(SSL* ssl, std::string_view peer, std::time_t now);

// `ssl` failed at the TLS layer (a fatal alert sent or received): its
// session is not offered again (RFC 5246 section 7.2.2).
void forget_session(SSL* ssl);

}  // namespace modelproxy::transport::tls
