// Making an upstream connection: the TLS context a route's connections
// share, and the resolve, connect and handshake of each new one. What is
// done on a connection once made is upstream.cpp's.
#include "transport/reactor_flag.hpp"
#include "transport/upstream.hpp"

#include <boost/asio/ip/address.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/beast/ssl.hpp>

#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include <charconv>
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

    if (!target.tls) {
        stream.expires_never();
        stream.socket().non_blocking(true);  // for write_now; async ops are unaffected
        // Each answer read then says whether it left the socket empty
        // (Exchange::read_head, reactor_flag.hpp).
        reactor_flag::report_rest(stream.socket());
        result.connection = std::make_unique<Connection>(std::move(stream));
        co_return result;
    }

    Connection::Secure secure(std::move(stream), *target.tls);
    SSL* ssl = secure.native_handle();
    boost::system::error_code aec;
    asio::ip::make_address(up.host, aec);
    if (aec) {
        // A name: send it as SNI and require it in the certificate.
        SSL_set_tlsext_host_name(ssl, up.host.c_str());
        X509_VERIFY_PARAM_set1_host(SSL_get0_param(ssl), up.host.c_str(), 0);
    } else {
        // An IP literal: no SNI (RFC 6066 forbids it); require an IP SAN.
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), up.host.c_str());
    }
    beast::get_lowest_layer(secure).expires_at(limit);
    auto [hec] = co_await secure.async_handshake(asio::ssl::stream_base::client, use_tuple);
    if (hec) {
        long verify = SSL_get_verify_result(ssl);
        if (hec == beast::error::timeout) {
            result.fault = timeout_fault;
        } else if (verify != X509_V_OK) {
            result.fault = Fault::tls_verify_failed;
            result.detail = "TLS verification of " + up.host + " failed: " +
                            X509_verify_cert_error_string(verify);
            co_return result;
        } else {
            result.fault = Fault::connect_reset;
        }
        result.detail = "TLS handshake with " + up.host + " failed: " + hec.message();
        co_return result;
    }
    beast::get_lowest_layer(secure).expires_never();
    result.connection = std::make_unique<Connection>(std::move(secure));
    co_return result;
}

}  // namespace modelproxy::transport
