// request/client_auth.hpp: the client token check.
#include "request/client_auth.hpp"

#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

using namespace modelproxy;
using namespace modelproxy::request;

TEST_CASE("authorize_client", "[client_auth]") {
    using Opt = std::optional<std::string>;
    using Tokens = std::vector<std::string>;
    const Tokens two = {"tok-a", "tok-b"};
    auto [authorization, api_key, tokens, expected] = GENERATE_COPY(table<Opt, Opt, Tokens, ClientAuth>({
        {std::nullopt, std::nullopt, Tokens{}, ClientAuth::open},
        {Opt("Bearer anything"), std::nullopt, Tokens{}, ClientAuth::open},
        {Opt("Bearer tok-a"), std::nullopt, two, ClientAuth::bearer},
        {Opt("Bearer tok-b"), std::nullopt, two, ClientAuth::bearer},
        {Opt("bearer tok-b"), std::nullopt, two, ClientAuth::bearer},
        {Opt("BEARER   tok-a  "), std::nullopt, two, ClientAuth::bearer},
        {std::nullopt, Opt("tok-a"), two, ClientAuth::api_key},
        {std::nullopt, Opt(" tok-b "), two, ClientAuth::api_key},
        {Opt("Bearer wrong"), Opt("tok-a"), two, ClientAuth::api_key},
        {Opt("Bearer tok-a"), Opt("wrong"), two, ClientAuth::bearer},
        {Opt("Bearer tok-c"), std::nullopt, two, ClientAuth::refused},
        {Opt("Bearer tok-"), std::nullopt, two, ClientAuth::refused},
        {Opt("Bearer tok-aa"), std::nullopt, two, ClientAuth::refused},
        {Opt("Bearer TOK-A"), std::nullopt, two, ClientAuth::refused},
        {Opt("tok-a"), std::nullopt, two, ClientAuth::refused},
        {Opt("Basic tok-a"), std::nullopt, two, ClientAuth::refused},
        {Opt("Bearer"), std::nullopt, two, ClientAuth::refused},
        {Opt("Bearer "), std::nullopt, Tokens{""}, ClientAuth::refused},
        {std::nullopt, Opt(""), Tokens{""}, ClientAuth::refused},
        {std::nullopt, std::nullopt, two, ClientAuth::refused},
        {std::nullopt, Opt("Bearer tok-a"), two, ClientAuth::refused},
    }));
    CAPTURE(authorization, api_key);
    const auto auth = authorize_client(authorization ? std::optional<std::string_view>(*authorization) : std::nullopt,
                                       api_key ? std::optional<std::string_view>(*api_key) : std::nullopt, tokens);
    CHECK(auth == expected);
    CHECK(client_authorized(authorization ? std::optional<std::string_view>(*authorization) : std::nullopt,
                            api_key ? std::optional<std::string_view>(*api_key) : std::nullopt,
                            tokens) == (expected != ClientAuth::refused));
}

TEST_CASE("token_header names the header that carried the token", "[client_auth]") {
    CHECK(token_header(ClientAuth::bearer) == "authorization");
    CHECK(token_header(ClientAuth::api_key) == "x-api-key");
    CHECK(token_header(ClientAuth::open).empty());
    CHECK(token_header(ClientAuth::refused).empty());
}

TEST_CASE("carries_client_token finds a token anywhere in a value", "[client_auth]") {
    auto [value, carries] = GENERATE(table<std::string, bool>({
        {"tok-alpha", true},
        {"Bearer tok-beta", true},
        {"  tok-alpha  ", true},
        {"Basic dXNlcjp0b2s=, tok-alpha", true},
        {"tok-alph", false},
        {"TOK-ALPHA", false},  // tokens are compared byte for byte
        {"sk-provider-key", false},
        {"", false},
    }));
    CAPTURE(value);
    CHECK(carries_client_token(value, {"tok-alpha", "tok-beta"}) == carries);
    CHECK_FALSE(carries_client_token(value, {}));
    CHECK_FALSE(carries_client_token(value, {""}));
}
