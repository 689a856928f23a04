#include "transport/tls_sessions.hpp"

#include "policy/tls_session.hpp"

#include <openssl/asn1.h>
#include <openssl/x509.h>

#include <cstdint>
#include <cstring>
#include <ctime>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace modelproxy::transport::tls {
namespace {

// The sessions kept for one host and port, oldest first, each holding one
// reference.
struct Peer {
    std::vector<SSL_SESSION*> sessions;
};

// A context's sessions. Peers are never erased: there is one per upstream
// host and port the route's connections went to.
struct Shelf {
    std::mutex mutex;
    std::unordered_map<std::string, Peer> peers;
    ~Shelf() {
        for (auto& [name, peer] : peers)
            for (SSL_SESSION* s : peer.sessions) SSL_SESSION_free(s);
    }
};

// The context's Shelf, freed with the context (its last SSL gone too: each
// SSL holds a reference to its context).
void free_shelf(void*, void* ptr, CRYPTO_EX_DATA*, int, long, void*) { delete static_cast<Shelf*>(ptr); }

int shelf_index() {
    static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, free_shelf);
    return index;
}
// A connection's Peer (in its context's Shelf), set by offer_session.
int peer_index() {
    static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
    return index;
}

Shelf* shelf_of(SSL_CTX* context) {
    const int index = shelf_index();
    return index < 0 ? nullptr : static_cast<Shelf*>(SSL_CTX_get_ex_data(context, index));
}

// Takes `session`'s reference; the oldest goes when the peer has its fill.
void keep(Peer& peer, SSL_SESSION* session) {
    if (peer.sessions.size() >= policy::tls_sessions_per_peer) {
        SSL_SESSION_free(peer.sessions.front());
        peer.sessions.erase(peer.sessions.begin());
    }
    peer.sessions.push_back(session);
}

// The policy's view of a session at `now` (policy/tls_session.hpp): not
// resumable, or a certificate time OpenSSL cannot read, is never offered.
bool good_at(SSL_SESSION* session, std::time_t now) {
    if (SSL_SESSION_is_resumable(session) != 1) return false;
    policy::TlsSessionTimes times{.issued = static_cast<std::int64_t>(SSL_SESSION_get_time(session)),
                                  .lifetime = static_cast<std::int64_t>(SSL_SESSION_get_timeout(session)),
                                  .cert_not_after = std::nullopt};
    if (X509* cert = SSL_SESSION_get0_peer(session)) {
        std::tm tm{};
        if (ASN1_TIME_to_tm(X509_get0_notAfter(cert), &tm) != 1) return false;
        times.cert_not_after = static_cast<std::int64_t>(timegm(&tm));
    }
    return policy::tls_session_offerable(times, static_cast<std::int64_t>(now));
}

Peer* peer_of(SSL* ssl) {
    const int index = peer_index();
    return index < 0 ? nullptr : static_cast<Peer*>(SSL_get_ex_data(ssl, index));
}

// OpenSSL's new-session callback: a session this connection was given. A
// copy is kept, never the connection's own object: OpenSSL marks that one
// not resumable when the connection ends without close_notify (as the
// proxy's closes of cut or idle connections do), which is no reason to
// give up the session, and it would write to it on the connection's thread
// while another worker reads the shelf.
int on_new_session(SSL* ssl, SSL_SESSION* session) {
    Peer* peer = peer_of(ssl);
    Shelf* shelf = shelf_of(SSL_get_SSL_CTX(ssl));
    if (peer == nullptr || shelf == nullptr || SSL_SESSION_is_resumable(session) != 1) return 0;
    SSL_SESSION* copy = SSL_SESSION_dup(session);
    if (copy == nullptr) return 0;
    std::lock_guard lock(shelf->mutex);
    keep(*peer, copy);
    return 0;  // OpenSSL keeps its own reference to `session`
}

}  // namespace

bool keep_sessions(SSL_CTX* context) {
    const int index = shelf_index();
    if (index < 0 || peer_index() < 0) return false;
    auto* shelf = new Shelf;
    if (SSL_CTX_set_ex_data(context, index, shelf) != 1) {
        delete shelf;
        return false;
    }
    // The client side of OpenSSL's cache calls the callback only; the
    // internal store is a server's (lookups by session id).
    SSL_CTX_set_session_cache_mode(context, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(context, on_new_session);
    return true;
}

void offer_session(SSL* ssl, std::string_view peer_name, std::time_t now) {
    Shelf* shelf = shelf_of(SSL_get_SSL_CTX(ssl));
    if (shelf == nullptr) return;
    SSL_SESSION* offer = nullptr;
    std::vector<SSL_SESSION*> stale;
    {
        std::lock_guard lock(shelf->mutex);
        Peer& peer = shelf->peers.try_emplace(std::string(peer_name)).first->second;
        SSL_set_ex_data(ssl, peer_index(), &peer);
        while (!peer.sessions.empty() && !good_at(peer.sessions.back(), now)) {
            stale.push_back(peer.sessions.back());
            peer.sessions.pop_back();
        }
        switch (policy::tls_session_take(peer.sessions.size())) {
            case policy::TlsSessionTake::none: break;
            case policy::TlsSessionTake::newest:
                offer = peer.sessions.back();  // its reference moves to `offer`
                peer.sessions.pop_back();
                break;
            case policy::TlsSessionTake::copy_of_newest:
                offer = SSL_SESSION_dup(peer.sessions.back());  // the last stays; the connection gets its own
                break;
        }
    }
    for (SSL_SESSION* s : stale) SSL_SESSION_free(s);
    if (offer != nullptr) {
        SSL_set_session(ssl, offer);  // takes its own reference
        SSL_SESSION_free(offer);
    }
}

void forget_session(SSL* ssl) {
    Peer* peer = peer_of(ssl);
    Shelf* shelf = shelf_of(SSL_get_SSL_CTX(ssl));
    const SSL_SESSION* own = SSL_get_session(ssl);
    if (peer == nullptr || shelf == nullptr || own == nullptr) return;
    unsigned int length = 0;
    const unsigned char* id = SSL_SESSION_get_id(own, &length);
    if (length == 0) return;
    std::vector<SSL_SESSION*> gone;
    {
        std::lock_guard lock(shelf->mutex);
        std::erase_if(peer->sessions, [&](SSL_SESSION* s) {
            unsigned int n = 0;
            const unsigned char* other = SSL_SESSION_get_id(s, &n);
            const bool same = n == length && std::memcmp(other, id, n) == 0;
            if (same) gone.push_back(s);
            return same;
        });
    }
    for (SSL_SESSION* s : gone) SSL_SESSION_free(s);
}

}  // namespace modelproxy::transport::tls
