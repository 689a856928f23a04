// request/admission.hpp: what a request's head alone decides, before any body
// byte is read (docs/behaviour.md sections 4 and 12). One row per case.
#include "request/admission.hpp"

#include <catch2/catch.hpp>

#include <deque>
#include <optional>
#include <string>
#include <vector>

using namespace modelproxy::request;

namespace {

const std::vector<std::string> tokens{"tok-alpha", "tok-beta"};

// A head as the session describes it: HTTP/1.1, one Host, keep-alive asked,
// a body of `length` bytes (0: none).
HeadFacts head(std::string method, std::string target, std::uint64_t length = 0) {
    static std::deque<std::string> kept;  // the views below outlive the call, and do not move
    kept.push_back(std::move(method));
    const std::string_view m = kept.back();
    kept.push_back(std::move(target));
    HeadFacts h;
    h.target = kept.back();
    h.framing.method = m;
    if (length) h.framing.content_length = length;
    return h;
}

HeadFacts with_bearer(HeadFacts h, std::string_view token) {
    static std::deque<std::string> kept;
    kept.push_back("Bearer " + std::string(token));
    h.authorization = kept.back();
    return h;
}

}  // namespace

TEST_CASE("admit: refusals on the head, first matching row", "[admission]") {
    using E = ClientError;
    struct Row {
        HeadFacts head;
        std::optional<ClientError> refusal;
        bool with_id;
        bool keep_alive;
    };
    HeadFacts lower = head("post", "/v1/chat/completions", 10);
    HeadFacts no_host = head("GET", "/healthz");
    no_host.framing.host_fields = 0;
    HeadFacts huge = head("POST", "/v1/chat/completions", 33554433);
    HeadFacts gzip = head("POST", "/v1/chat/completions", 10);
    gzip.framing.content_encoding = "gzip";
    HeadFacts chunked = head("POST", "/v1/chat/completions");
    chunked.framing.transfer_encoding = chunked.framing.chunked = true;
    HeadFacts close = head("GET", "/v1/models");
    close.keep_alive = false;
    const std::vector<Row> rows{
        // Strict framing and limits: the connection ends.
        {lower, E::bad_request, false, false},
        {no_host, E::bad_request, false, false},
        {huge, E::payload_too_large, false, false},
        {gzip, E::unsupported_content_encoding, false, false},
        // Routing refusals keep a bodiless request's connection, not one
        // whose body is left unread.
        {head("GET", "/v1/../x"), E::invalid_path, false, true},
        {head("POST", "/v1/%2e%2e/x", 10), E::invalid_path, false, false},
        {head("GET", "/nothing"), E::not_found, false, true},
        {head("POST", "/nothing", 10), E::not_found, false, false},
        {head("POST", "/healthz"), E::method_not_allowed, false, true},
        // No token: 401 with the request id, before any body byte.
        {head("GET", "/v1/models"), E::unauthorized, true, true},
        {head("POST", "/v1/chat/completions", 31457280), E::unauthorized, true, false},
        {chunked, E::unauthorized, true, false},
        {with_bearer(head("POST", "/v1/chat/completions", 10), "tok-gamma"), E::unauthorized, true, false},
        {close, E::unauthorized, true, false},
        // Admitted.
        {with_bearer(head("POST", "/v1/chat/completions", 10), "tok-beta"), std::nullopt, false, true},
        {head("GET", "/healthz"), std::nullopt, false, true},
        {head("GET", "/metrics"), std::nullopt, false, true},
    };
    for (const Row& row : rows) {
        CAPTURE(row.head.framing.method, row.head.target, row.head.framing.content_length.value_or(0));
        const Admission a = admit(row.head, tokens, 33554432);
        CHECK(a.refusal == row.refusal);
        CHECK(a.with_id == row.with_id);
        CHECK(a.keep_alive == row.keep_alive);
        CHECK_FALSE(a.send_continue);
    }
}

TEST_CASE("admit: an unauthenticated upload is refused before 100 Continue", "[admission]") {
    HeadFacts upload = head("POST", "/v1/audio/transcriptions", 31457280);
    upload.framing.expect = "100-continue";
    const Admission stranger = admit(upload, tokens, 33554432);
    CHECK(stranger.refusal == ClientError::unauthorized);
    CHECK_FALSE(stranger.send_continue);
    CHECK_FALSE(stranger.keep_alive);

    const Admission client = admit(with_bearer(upload, "tok-alpha"), tokens, 33554432);
    CHECK_FALSE(client.refusal);
    CHECK(client.send_continue);
    CHECK(client.auth == ClientAuth::bearer);
    CHECK(client.dispatch == Dispatch::forward);
}

TEST_CASE("admit: without tokens configured every path under /v1/ is open", "[admission]") {
    const Admission a = admit(head("POST", "/v1/chat/completions", 10), {}, 1000);
    CHECK_FALSE(a.refusal);
    CHECK(a.auth == ClientAuth::open);
}

TEST_CASE("admit: over max_connections only a bodiless health probe is answered", "[admission]") {
    auto [method, target, length, answered] = GENERATE(table<std::string, std::string, std::uint64_t, bool>({
        {"GET", "/healthz", 0, true},
        {"HEAD", "/healthz", 0, true},
        {"GET", "/readyz", 0, true},
        {"GET", "/metrics", 0, true},
        {"GET", "/healthz", 5, false},  // no body is read over the limit
        {"POST", "/healthz", 0, false},
        {"get", "/healthz", 0, false},
        {"GET", "/healthz/../healthz", 0, false},
        {"GET", "/v1/models", 0, false},
        {"POST", "/v1/chat/completions", 10, false},
        {"GET", "/nothing", 0, false},
    }));
    HeadFacts h = head(method, target, length);
    h.over_limit = true;
    h = with_bearer(h, "tok-alpha");
    CAPTURE(method, target, length);
    const Admission a = admit(h, tokens, 1000);
    CHECK(a.refusal == (answered ? std::nullopt : std::optional<ClientError>(ClientError::too_many_connections)));
    CHECK_FALSE(a.keep_alive);  // closed after its one answer
    CHECK_FALSE(a.send_continue);
}
