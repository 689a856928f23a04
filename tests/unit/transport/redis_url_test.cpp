// transport/redis_url: the `fleet.redis` address of docs/behaviour.md
// section 15, as tables of URLs taken (with what they mean) and refused
// (with the words the refusal must say). No refusal repeats the URL: a
// password written there by mistake must not reach a log.
#include "transport/redis_url.hpp"

#include <catch2/catch.hpp>

#include <string>

using modelproxy::transport::parse_redis_url;
using modelproxy::transport::RedisUrl;

TEST_CASE("Redis URLs that are taken, and what they mean", "[redis_url]") {
    struct Row {
        const char* text;
        RedisUrl url;
        const char* normal;  // to_string()
    };
    // clang-format off
    const Row rows[] = {
        {"redis://127.0.0.1:6379/0",        {.host = "127.0.0.1"},                                   "redis://127.0.0.1:6379/0"},
        {"redis://127.0.0.1",               {.host = "127.0.0.1"},                                   "redis://127.0.0.1:6379/0"},
        {"redis://127.0.0.1/",              {.host = "127.0.0.1"},                                   "redis://127.0.0.1:6379/0"},
        {"redis://127.0.0.1:6380",          {.host = "127.0.0.1", .port = 6380},                     "redis://127.0.0.1:6380/0"},
        {"redis://redis.internal:1/15",     {.host = "redis.internal", .port = 1, .db = 15},         "redis://redis.internal:1/15"},
        {"redis://cache-1_a.example:65535", {.host = "cache-1_a.example", .port = 65535},            "redis://cache-1_a.example:65535/0"},
        {"redis://h/2147483647",            {.host = "h", .db = 2147483647},                         "redis://h:6379/2147483647"},
        {"rediss://redis.example:6380/2",   {.tls = true, .host = "redis.example", .port = 6380, .db = 2}, "rediss://redis.example:6380/2"},
        {"REDISS://Redis.Example/1",        {.tls = true, .host = "Redis.Example", .db = 1},         "rediss://Redis.Example:6379/1"},
        {"Redis://h",                       {.host = "h"},                                           "redis://h:6379/0"},
        {"redis://[::1]:6379/3",            {.host = "::1", .db = 3},                                "redis://[::1]:6379/3"},
        {"redis://[::1]",                   {.host = "::1"},                                         "redis://[::1]:6379/0"},
        {"rediss://[2001:db8::7]/",         {.tls = true, .host = "2001:db8::7"},                    "rediss://[2001:db8::7]:6379/0"},
        {"redis://proxy@127.0.0.1:7000/1",  {.user = "proxy", .host = "127.0.0.1", .port = 7000, .db = 1}, "redis://proxy@127.0.0.1:7000/1"},
        {"redis://app.user-1~x@[::1]",      {.user = "app.user-1~x", .host = "::1"},                 "redis://app.user-1~x@[::1]:6379/0"},
    };
    // clang-format on
    for (const Row& row : rows) {
        CAPTURE(row.text);
        const auto parsed = parse_redis_url(row.text);
        REQUIRE(std::holds_alternative<RedisUrl>(parsed));
        const auto& url = std::get<RedisUrl>(parsed);
        CHECK(url == row.url);
        CHECK(url.to_string() == row.normal);
        // The normal form reads back as the same URL.
        const auto again = parse_redis_url(url.to_string());
        REQUIRE(std::holds_alternative<RedisUrl>(again));
        CHECK(std::get<RedisUrl>(again) == url);
    }
}

TEST_CASE("Redis URLs that are refused, each with a sentence saying why", "[redis_url]") {
    struct Row {
        const char* text;
        const char* says;
    };
    // clang-format off
    const Row rows[] = {
        {"",                                   "must start with redis:// or rediss://"},
        {"127.0.0.1:6379",                     "must start with redis:// or rediss://"},
        {"http://127.0.0.1:6379",              "must start with redis:// or rediss://"},
        {"redis:/127.0.0.1",                   "must start with redis:// or rediss://"},
        {"unix:///run/redis.sock",             "must start with redis:// or rediss://"},
        {"redis://",                           "has no host"},
        {"redis://:6379",                      "has no host"},
        {"redis:///0",                         "has no host"},
        {"redis://user:hunter2@127.0.0.1",     "must not hold a password"},
        {"redis://:hunter2@127.0.0.1",         "must not hold a password"},
        {"redis://@127.0.0.1",                 "empty user name"},
        {"redis://us%40er@127.0.0.1",          "percent-encoded"},
        {"redis://us er@127.0.0.1",            "user name has a character"},
        {"redis://a@b@127.0.0.1",              "user name has a character"},
        {"redis://127.0.0.1:0",                "port must be a number from 1 to 65535"},
        {"redis://127.0.0.1:65536",            "port must be a number from 1 to 65535"},
        {"redis://127.0.0.1:",                 "port must be a number from 1 to 65535"},
        {"redis://127.0.0.1:63x9",             "port must be a number from 1 to 65535"},
        {"redis://127.0.0.1:-1",               "port must be a number from 1 to 65535"},
        {"redis://127.0.0.1:6379/x",           "path must be a database number"},
        {"redis://127.0.0.1:6379/-1",          "path must be a database number"},
        {"redis://127.0.0.1:6379/2147483648",  "path must be a database number"},
        {"redis://127.0.0.1:6379/0/",          "path must be a database number"},
        {"redis://127.0.0.1:6379/0/extra",     "path must be a database number"},
        {"redis://127.0.0.1:6379//0",          "path must be a database number"},
        {"redis://127.0.0.1/0?password=x",     "must not have a query or a fragment"},
        {"redis://127.0.0.1/0#x",              "must not have a query or a fragment"},
        {"redis://::1",                        "IPv6 address must be in brackets"},
        {"redis://::1:6379/0",                 "IPv6 address must be in brackets"},
        {"redis://[::1",                       "no closing ']'"},
        {"redis://[]:6379",                    "not an IPv6 address"},
        {"redis://[127.0.0.1]",                "not an IPv6 address"},
        {"redis://[::g]",                      "not an IPv6 address"},
        {"redis://[::1]6379",                  "text after the IPv6 address"},
        {"redis://[::1]:",                     "port must be a number from 1 to 65535"},
        {"redis://red is/0",                   "host has a character"},
        {"redis://host,other:6379",            "host has a character"},
    };
    // clang-format on
    for (const Row& row : rows) {
        CAPTURE(row.text);
        const auto parsed = parse_redis_url(row.text);
        REQUIRE(std::holds_alternative<std::string>(parsed));
        const std::string& error = std::get<std::string>(parsed);
        CHECK_THAT(error, Catch::Matchers::Contains(row.says));
        CHECK_THAT(error, !Catch::Matchers::Contains("hunter2"));
    }
}
