// request/headers.hpp: which header fields pass the proxy, each way.
#include "request/headers.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <tuple>
#include <vector>

using namespace modelproxy;
using namespace modelproxy::request;

TEST_CASE("is_hop_by_hop", "[headers]") {
    auto [name, hop] = GENERATE(table<std::string, bool>({
        {"Connection", true},
        {"CONNECTION", true},
        {"keep-alive", true},
        {"Keep-Alive", true},
        {"Proxy-Authorization", true},
        {"proxy-connection", true},
        {"Proxy-Authenticate", true},
        {"TE", true},
        {"Trailer", true},
        {"Transfer-Encoding", true},
        {"upgrade", true},
        // proxy-* names of each length the rule switches on (2, 7, 10, 17)
        {"Proxy-A", true},
        {"proxy-auth", true},
        {"proxy-connection2", true},
        {"Trailers", false},
        {"tE2", false},
        {"upgrad", false},
        {"connectio", false},
        {"keep_alive", false},
        {"transfer-encodin", false},
        {"proxy", false},
        {"x-proxy-id", false},
        {"Content-Type", false},
        {"Authorization", false},
    }));
    CAPTURE(name);
    CHECK(is_hop_by_hop(name) == hop);
}

TEST_CASE("connection_lists finds each token of a value, whatever its case or spacing", "[headers]") {
    CHECK(connection_lists("keep-alive, X-Foo", "keep-alive") == ConnectionListed::yes);
    CHECK(connection_lists("keep-alive, X-Foo", "x-foo") == ConnectionListed::yes);
    CHECK(connection_lists("keep-alive, X-Foo", "keep-alive, X-Foo") == ConnectionListed::no);
    CHECK(connection_lists(" close ", "close") == ConnectionListed::yes);
    CHECK(connection_lists(",,a,, B ,", "a") == ConnectionListed::yes);
    CHECK(connection_lists(",,a,, B ,", "b") == ConnectionListed::yes);
    CHECK(connection_lists("", "close") == ConnectionListed::no);
}

TEST_CASE("connection_lists reads the tokens in place, case-insensitively", "[headers]") {
    auto [value, name, listed] = GENERATE(table<std::string, std::string, ConnectionListed>({
        {"keep-alive, X-Foo", "x-foo", ConnectionListed::yes},
        {"keep-alive, X-Foo", "X-FOO", ConnectionListed::yes},
        {"keep-alive, X-Foo", "Keep-Alive", ConnectionListed::yes},
        {" close ", "close", ConnectionListed::yes},
        {",,a,, B ,", "b", ConnectionListed::yes},
        {"a\t,\tb", "b", ConnectionListed::yes},
        {"x-foo2", "x-foo", ConnectionListed::no},
        {"x-fo", "x-foo", ConnectionListed::no},
        {"x-foo x-bar", "x-foo", ConnectionListed::no},
        {"", "", ConnectionListed::no},
        {", ,", "", ConnectionListed::no},
        {"", "close", ConnectionListed::no},
    }));
    CAPTURE(value, name);
    CHECK(connection_lists(value, name) == listed);
}

TEST_CASE("ConnectionTokens answers as connection_lists for every value and name", "[headers]") {
    // The usual values (keep-alive, close) take the short way; each answer
    // must still be connection_lists' own, for names of every length.
    const std::string values[] = {"",           "keep-alive", "Keep-Alive",        " close ",  "close, keep-alive",
                                  ", ,",        "x-foo",      "keep-alive, X-Foo", "closer",   "keep-alive, close, te",
                                  "keep-alive2"};
    const std::string names[] = {"close",  "Close", "keep-alive", "KEEP-ALIVE", "x-foo", "closer", "te",
                                 "content-type", "", "x-foo-bar", "Keep-Alive2"};
    for (const auto& value : values) {
        const ConnectionTokens tokens(value);
        for (const auto& name : names) {
            CAPTURE(value, name);
            CHECK(tokens.lists(name) == connection_lists(value, name));
        }
    }
    CHECK(ConnectionTokens("keep-alive, close").lists("Close") == ConnectionListed::yes);
    CHECK(ConnectionTokens("keep-alive").lists("x-foo") == ConnectionListed::no);
    CHECK(ConnectionTokens("keep-alive, X-Foo").lists("x-foo") == ConnectionListed::yes);
}

TEST_CASE("is_client_credential and is_modelproxy_header", "[headers]") {
    CHECK(is_client_credential("Authorization"));
    CHECK(is_client_credential("X-Api-Key"));
    CHECK(is_client_credential("api-key"));
    CHECK_FALSE(is_client_credential("x-api-key-id"));
    CHECK_FALSE(is_client_credential("anthropic-version"));
    CHECK(is_modelproxy_header("x-modelproxy-timeout-ms"));
    CHECK(is_modelproxy_header("X-ModelProxy-Anything"));
    CHECK_FALSE(is_modelproxy_header("x-modelproxy"));
    CHECK_FALSE(is_modelproxy_header("x-request-id"));
}

TEST_CASE("forward_request_header", "[headers]") {
    const CredentialRule pass_through{};
    const CredentialRule injected{"authorization", ""};
    const CredentialRule injected_custom{"x-goog-api-key", ""};
    const CredentialRule client_token{"", "authorization"};
    auto [name, rule, forwarded] = GENERATE_COPY(table<std::string, CredentialRule, bool>({
        {"Content-Type", pass_through, true},
        {"Accept", pass_through, true},
        {"OpenAI-Beta", pass_through, true},
        {"x-request-id", pass_through, true},
        {"x-stainless-timeout", pass_through, true},
        {"Authorization", pass_through, true},
        {"x-api-key", pass_through, true},
        {"api-key", pass_through, true},
        {"Host", pass_through, false},
        {"Content-Length", pass_through, false},
        {"Expect", pass_through, false},
        {"Accept-Encoding", pass_through, false},
        {"Connection", pass_through, false},
        {"Keep-Alive", pass_through, false},
        {"Transfer-Encoding", pass_through, false},
        {"TE", pass_through, false},
        {"Upgrade", pass_through, false},
        {"Proxy-Authorization", pass_through, false},
        {"X-Named", pass_through, false},
        {"x-modelproxy-timeout-ms", pass_through, false},
        // names of the lengths of host, expect, content-length and
        // accept-encoding that are none of them, some still withheld
        {"hOsT", pass_through, false},
        {"hose", pass_through, true},
        {"expecT", pass_through, false},
        {"expert", pass_through, true},
        {"x-modelproxy-a", pass_through, false},
        {"x-modelproxy-ab", pass_through, false},
        {"content-lengths", pass_through, true},
        {"Proxy-Ab", pass_through, false},
        {"Authorization", injected, false},
        {"X-API-Key", injected, false},
        {"api-key", injected, false},
        {"Content-Type", injected, true},
        {"x-goog-api-key", injected_custom, false},
        {"Authorization", injected_custom, false},
        {"x-goog-api-key", pass_through, true},
        {"Authorization", client_token, false},
        {"x-api-key", client_token, true},
    }));
    CAPTURE(name, rule.injected_key_header, rule.client_token_header);
    CHECK(forward_request_header(name, connection_lists("X-Named, keep-alive", name), rule) == forwarded);
}

TEST_CASE("forward_response_header", "[headers]") {
    auto [name, forwarded] = GENERATE(table<std::string, bool>({
        {"Content-Type", true},
        {"Retry-After", true},
        {"x-request-id", true},
        {"openai-processing-ms", true},
        {"x-should-retry", true},
        {"Set-Cookie", true},
        {"Content-Length", false},
        {"Content-Encoding", false},
        {"Transfer-Encoding", false},
        {"Connection", false},
        {"Keep-Alive", false},
        {"x-named", false},
        {"X-ModelProxy-Attempts", false},
        {"Proxy-Authenticate", false},
        // names as long as content-length (14) and content-encoding (16)
        {"x-modelproxy-a", false},
        {"x-modelproxy-abc", false},
        {"content-lengtH", false},
        {"content-lengthy", true},
        {"content-encodinG", false},
        {"x-ratelimit-abc", true},
        {"Proxy-A", false},
    }));
    CAPTURE(name);
    CHECK(forward_response_header(name, connection_lists("x-Named", name)) == forwarded);
}
