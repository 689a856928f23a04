// The connection timers of docs/behaviour.md section 3 that other files do not cover:
// limits.idle_timeout_ms on the client side and connect_timeout_ms (TCP plus
// TLS handshake) on the upstream side.
#include "support/fake_provider.hpp"
#include "support/http_client.hpp"
#include "support/ports.hpp"
#include "support/proxy_process.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <thread>

using namespace modelproxy::test;
using namespace std::chrono_literals;

namespace {

std::string chat_request(std::string_view model) {
    return std::string(R"({"model":")") + std::string(model) + R"(","messages":[]})";
}

}  // namespace

TEST_CASE("an idle keep-alive client connection is closed after idle_timeout_ms", "[timeouts]") {
    ProxyProcess proxy({.config_yaml = "limits: {idle_timeout_ms: 200}\n"
                                       "routes:\n  - name: r\n    upstream: http://127.0.0.1:9/v1\n    models: [m]\n"});
    proxy.start();
    HttpClient client = proxy.client();
    const Response first = client.get("/healthz");
    REQUIRE(first.ok());
    CHECK(first.status == 200);
    // Still open well inside the idle limit, closed by the proxy after it.
    CHECK(client.is_closed_by_peer(3s));
}

TEST_CASE("a keep-alive connection in use is not closed by the idle timer", "[timeouts]") {
    ProxyProcess proxy({.config_yaml = "limits: {idle_timeout_ms: 400}\n"
                                       "routes:\n  - name: r\n    upstream: http://127.0.0.1:9/v1\n    models: [m]\n"});
    proxy.start();
    HttpClient client = proxy.client();
    for (int i = 0; i < 4; ++i) {
        const Response r = client.get("/healthz");
        REQUIRE(r.ok());
        std::this_thread::sleep_for(150ms);  // each gap well inside the limit
    }
    CHECK(client.is_open());
}

TEST_CASE("a TLS handshake that never finishes ends at connect_timeout_ms as a network failure", "[timeouts]") {
    SilentListener silent;  // accepts TCP, never speaks TLS
    ProxyProcess proxy({.config_yaml = "routes:\n  - name: r\n    upstream: https://127.0.0.1:" +
                                       std::to_string(silent.port()) +
                                       "/v1\n    connect_timeout_ms: 200\n    retry: {max_attempts: 2, base_delay_ms: 10, "
                                       "min_attempt_ms: 10}\n    models: [m]\n"});
    proxy.start();
    HttpClient client = proxy.client({.timeout = 10s});
    const auto started = std::chrono::steady_clock::now();
    const Response r = client.post_json("/v1/chat/completions", chat_request("m"));
    const auto took = std::chrono::steady_clock::now() - started;
    REQUIRE(r.ok());
    CHECK(r.status == 502);
    CHECK(r.header("x-modelproxy-error-class") == "network");
    CHECK(r.header("x-modelproxy-attempts") == "2");  // a connect timeout is replayed
    CHECK(r.body.find(R"("code":"connect_failed")") != std::string::npos);
    CHECK(took < 5s);  // two 200 ms handshakes and a 10 ms wait, not the 300 s deadline
}
