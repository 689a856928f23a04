// A scripted model provider: a real HTTP/1.1 server (optionally TLS) on
// 127.0.0.1, port 0, on its own thread and io_context, inside the test
// process (STYLE.md point 9, after Envoy's fake upstreams).
//
// Each request received pops the next Script pushed by the test (FIFO, in
// the order requests finish arriving); with the queue empty the default
// script answers (500 {"error":"no script"} unless set_default changed it).
// A responder, when set, picks the script instead, from the request itself:
// under many concurrent clients FIFO order cannot tie a script to a request.
// Every request is recorded before its script runs (counted only, when
// Options::keep_records is false: a long soak must not grow without bound).
//
// Threading: every public member may be called from any thread while the
// server runs. Waits are bounded by the caller's timeout and report whether
// the condition was met; none of them throws on timeout.
#pragma once

#include "support/http_text.hpp"
#include "support/script.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace modelproxy::test {

struct RequestRecord {
    std::size_t index = 0;               // 0-based, in the order recorded
    std::uint64_t connection_id = 0;     // 1-based, in accept order
    std::size_t connection_request = 1;  // 1-based: this request's place on its connection
    std::string method;
    std::string target;                  // as received (origin-form normally)
    unsigned version = 11;               // 10 or 11
    Headers headers;                     // original case and order
    std::string body;                    // de-chunked body bytes
    std::chrono::steady_clock::time_point received_at;  // when the whole request was read
    std::string tls_server_name;         // SNI the client sent ("" for plain or none)
    std::string client_cert_subject;     // one-line subject of a verified client cert, or ""
    bool tls_resumed = false;            // its connection's TLS handshake resumed an earlier session
    // When a step (hang, expect_close, close, or a failed write) saw the
    // client close this request's connection.
    std::optional<std::chrono::steady_clock::time_point> peer_closed_at;

    std::optional<std::string> header(std::string_view name) const { return find_header(headers, name); }
};

class FakeProvider {
public:
    struct Tls {
        std::filesystem::path cert_file;       // server chain PEM
        std::filesystem::path key_file;        // server key PEM
        std::filesystem::path client_ca_file;  // non-empty: require a client cert verified by it
        bool tls12_only = false;               // at most TLS 1.2 (sessions resumed by session tickets
                                               // of TLS 1.2's kind, one per full handshake)
    };
    struct Options {
        std::optional<Tls> tls;
        std::size_t body_limit = 64u << 20;    // bigger request bodies end the connection
        bool keep_records = true;              // false: request_count() counts, requests() stays empty
                                               // (and wait_for_peer_close never sees a close)
    };
    // Options serving TLS with the given server chain and key (and, when
    // `client_ca_file` is non-empty, requiring client certificates it verifies).
    static Options tls_options(std::filesystem::path cert_file, std::filesystem::path key_file,
                               std::filesystem::path client_ca_file = {});

    // Binds 127.0.0.1:0 and starts serving before returning. Throws
    // std::runtime_error when it cannot listen or the TLS files do not load.
    FakeProvider();
    explicit FakeProvider(Options options);
    ~FakeProvider();  // stop()
    FakeProvider(const FakeProvider&) = delete;
    FakeProvider& operator=(const FakeProvider&) = delete;

    std::uint16_t port() const;
    bool tls() const;
    // "http://127.0.0.1:PORT" or "https://localhost:PORT" (the name a test
    // certificate carries), plus `path` (e.g. "/v1").
    std::string base_url(std::string_view path = {}) const;

    void push(Script script);
    void push(Script script, std::size_t copies);
    void set_default(Script script);
    std::size_t scripts_pending() const;
    // Called on the provider's thread for every request while set (the queue
    // and the default are then unused); it must not block. Empty: unset.
    using Responder = std::function<Script(const RequestRecord&)>;
    void set_responder(Responder responder);

    std::vector<RequestRecord> requests() const;  // snapshot
    std::size_t request_count() const;
    // True once at least n requests were recorded; false when `timeout` passed first.
    bool wait_for_requests(std::size_t n, std::chrono::milliseconds timeout) const;
    // True once request `index` has its peer_closed_at set.
    bool wait_for_peer_close(std::size_t index, std::chrono::milliseconds timeout) const;

    std::size_t connections_accepted() const;  // TCP accepts, TLS handshake failures included
    std::size_t connections_open() const;
    bool wait_for_connections(std::size_t n, std::chrono::milliseconds timeout) const;
    std::size_t tls_handshake_failures() const;

    // Closes the listener and every connection, stops the thread. Idempotent;
    // bounded (a few seconds at most). Records stay readable afterwards.
    void stop();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace modelproxy::test
