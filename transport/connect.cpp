// Making an upstream connection: the TLS context a route's connections
// share, and the resolve, connect and handshake of each new one. What is
// done on a connection once made is upstream.cpp's.
#include "transport/read_timer.hpp"
#include "transport/tls_io.hpp"
#include "transport/tls_sessions.hpp"
#include "transport/upstream.hpp"

#include <boost/asio/ip/address.hpp>
#include <boost/asio/this_coro.hpp>

#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include <charconv>
#include <ctime>
#include <tuple>
#include <utility>

namespace modelproxy::transport {

std::variant<TlsContext, std::string> make_tls_context(const config::Tls& tls) {
    auto ctx = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_client);
    boost::system::error_code ec;
    ctx->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                         asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                         asio::ssl::context::no_tlsv1_1,
                     ec);
    // Every upstream certificate is verified; there is no switch to turn it off.
    ctx->set_verify_mode(asio::ssl::verify_peer, ec);
    if (tls.ca_file.empty()) {
        ctx->set_default_verify_paths(ec);
        if (ec) return "cannot load the system trust store: " + ec.message();
    } else {
        ctx->load_verify_file(tls.ca_file, ec);
        if (ec) return "cannot load tls.ca_file " + tls.ca_file + ": " + ec.message();
    }
    if (!tls.cert_file.empty()) {
        ctx->use_certificate_chain_file(tls.cert_file, ec);
        if (ec) return "cannot load tls.cert_file " + tls.cert_file + ": " + ec.message();
        ctx->use_private_key_file(tls.key_file, asio::ssl::context::pem, ec);
        if (ec) return "cannot load tls.key_file " + tls.key_file + ": " + ec.message();
    }
    // Without it every new connection is a full handshake, as before.
    tls::keep_sessions(ctx->native_handle());
    return TlsContext{std::move(ctx)};
}

Task<ConnectResult> connect(const Target& target, Clock::time_point deadline) {
    auto executor = co_await asio::this_coro::executor;
    const config::Upstream& up = *target.upstream;
    const auto connect_limit = Clock::now() + target.connect_timeout;
    const auto limit = std::min(connect_limit, deadline);
    const Fault timeout_fault = deadline < connect_limit ? Fault::deadline : Fault::connect_timeout;

    ConnectResult result;
    Resolver resolver(executor);
    char port[8];
    auto [p, _] = std::to_chars(port, port + sizeof port, up.port);
    auto [rec, endpoints] =
        co_await resolver.async_resolve(up.host, std::string_view(port, p - port), use_tuple);
    if (rec) {
        result.fault = Fault::dns_failed;
        result.detail = "cannot resolve " + up.host + ": " + rec.message();
        co_return result;
    }

    TcpStream stream(executor);
    stream.expires_at(limit);
    auto [cec, ep] = co_await stream.async_connect(endpoints, use_tuple);
    if (cec) {
        result.fault = cec == beast::error::timeout              ? timeout_fault
                       : cec == asio::error::connection_refused ? Fault::connect_refused
                                                                 : Fault::connect_reset;
        result.detail = "cannot connect to " + up.host + ":" + std::to_string(up.port) + ": " + cec.message();
        co_return result;
    }
    stream.socket().set_option(tcp::no_delay(true));
    // The bare socket from here on: its reads and writes are bounded by the
    // connection's ReadTimer, not Beast's per-operation timer.
    stream.expires_never();
    Socket socket = stream.release_socket();
    socket.non_blocking(true);  // for write_now and OpenSSL's own reads and writes; async ops are unaffected

    if (!target.tls) {
        result.connection = std::make_unique<Connection>(std::move(socket), nullptr);
        co_return result;
    }

    auto input = std::make_unique<tls::Input>();
    tls::SslPtr ssl = tls::make_client(target.tls->native_handle(), socket, input.get());
    if (!ssl) {
        result.fault = Fault::connect_reset;
        result.detail = "cannot make a TLS connection to " + up.host;
        co_return result;
    }
    boost::system::error_code aec;
    asio::ip::make_address(up.host, aec);
    if (aec) {
        // A name: send it as SNI and require it in the certificate.
        SSL_set_tlsext_host_name(ssl.get(), up.host.c_str());
        X509_VERIFY_PARAM_set1_host(SSL_get0_param(ssl.get()), up.host.c_str(), 0);
    } else {
        // An IP literal: no SNI (RFC 6066 forbids it); require an IP SAN.
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl.get()), up.host.c_str());
    }
    // A session an earlier connection to this host and port was given, for
    // the provider to resume (tls_sessions.hpp).
    tls::offer_session(ssl.get(), up.host + ":" + std::string(port, p - port), std::time(nullptr));
    // The handshake, bounded by what is left of the connect limit.
    boost::system::error_code hec;
    bool cut = false;
    {
        ReadTimer bound(socket);
        bound.arm_at(limit);
        for (;;) {
            const tls::Step step = tls::handshake(ssl.get(), hec);
            if (step == tls::Step::done || step == tls::Step::failed) break;
            // OpenSSL reads the Input: want_read is a read into it (tls_io.hpp).
            boost::system::error_code wait_ec;
            if (step == tls::Step::want_read) {
                auto [read_ec, n] = co_await socket.async_read_some(input->room(), use_tuple);
                wait_ec = input->took(read_ec, n);
            } else {
                std::tie(wait_ec) = co_await socket.async_wait(Socket::wait_write, use_tuple);
            }
            if (wait_ec) {
                hec = wait_ec;
                break;
            }
        }
        cut = bound.disarm();
    }
    if (hec) {
        const long verify = SSL_get_verify_result(ssl.get());
        if (cut && hec == asio::error::operation_aborted) {
            result.fault = timeout_fault;
        } else if (verify != X509_V_OK) {
            result.fault = Fault::tls_verify_failed;
            result.detail = "TLS verification of " + up.host + " failed: " + X509_verify_cert_error_string(verify);
            co_return result;
        } else {
            result.fault = Fault::connect_reset;
        }
        result.detail = "TLS handshake with " + up.host + " failed: " + hec.message();
        co_return result;
    }
    result.connection = std::make_unique<Connection>(std::move(socket), std::move(ssl), std::move(input));
    co_return result;
}

}  // namespace modelproxy::transport
