#include "support/fake_provider.hpp"

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <condition_variable>
#include <cstdio>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <type_traits>

namespace modelproxy::test {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;
using boost::system::error_code;
using namespace std::chrono_literals;

namespace {

constexpr auto use_tuple = net::as_tuple(net::use_awaitable);
constexpr auto tls_handshake_bound = 10s;
constexpr auto tls_shutdown_bound = 1s;
constexpr auto drain_bound = 2s;  // close(): how long to wait for the peer's FIN
constexpr auto stop_bound = 5s;

template <class Stream>
struct Connection {
    Connection(Stream s, std::uint64_t connection_id) : stream(std::move(s)), id(connection_id) {}
    tcp::socket& socket() { return boost::beast::get_lowest_layer(stream); }

    Stream stream;
    std::uint64_t id;
    boost::beast::flat_buffer buffer;
};

template <class Stream>
constexpr bool is_tls = !std::is_same_v<Stream, tcp::socket>;

// Arms `timer` to cancel the socket's pending operations after `bound`.
// Returns the flag the handler sets, shared so a late handler never touches
// a finished coroutine frame.
template <class Conn>
std::shared_ptr<bool> arm_cancel(net::steady_timer& timer, const std::shared_ptr<Conn>& c,
                                 std::chrono::steady_clock::duration bound) {
    auto fired = std::make_shared<bool>(false);
    timer.expires_after(bound);
    timer.async_wait([c, fired](error_code ec) {
        if (ec) return;
        *fired = true;
        error_code ignored;
        c->socket().cancel(ignored);
    });
    return fired;
}

}  // namespace

struct FakeProvider::Impl {
    explicit Impl(Options o) : options(std::move(o)) {}

    // ---- state shared with test threads (under mu) ----
    mutable std::mutex mu;
    mutable std::condition_variable cv;
    std::deque<Script> queue;
    Script default_script =
        Script::json(500, R"({"error":{"message":"no script","type":"fake_provider_error","code":500}})");
    std::vector<RequestRecord> records;
    std::size_t recorded = 0;  // == records.size() when options.keep_records
    std::shared_ptr<const Responder> responder;
    std::size_t accepted = 0;
    std::size_t open = 0;
    std::size_t tls_failures = 0;
    bool stopped = false;

    // ---- fixed after construction ----
    Options options;
    std::optional<ssl::context> ssl_ctx;  // outlives the io_context and its streams
    std::unique_ptr<net::io_context> ioc = std::make_unique<net::io_context>(1);
    std::optional<tcp::acceptor> acceptor;
    std::uint16_t port = 0;
    std::thread thread;

    // ---- io thread only ----
    bool stopping = false;
    std::uint64_t next_id = 1;
    std::map<std::uint64_t, std::function<void()>> closers;

    void start();
    void stop();
    net::awaitable<void> accept_loop();
    template <class Stream>
    net::awaitable<void> session(std::shared_ptr<Connection<Stream>> c);
    template <class Stream>
    net::awaitable<bool> run_script(std::shared_ptr<Connection<Stream>> c, const Script& script, std::size_t index);
    template <class Stream>
    net::awaitable<bool> wait_peer_close(std::shared_ptr<Connection<Stream>> c,
                                         std::optional<std::chrono::milliseconds> bound);
    template <class Stream>
    net::awaitable<void> close_cleanly(std::shared_ptr<Connection<Stream>> c, std::size_t index);
    template <class Stream>
    std::size_t record(Connection<Stream>& c, http::request<http::string_body>& req, std::size_t on_connection,
                       Script& script);
    Script next_script();
    void mark_peer_closed(std::size_t index);
};

void FakeProvider::Impl::start() {
    if (options.tls) {
        try {
            ssl_ctx.emplace(ssl::context::tls_server);
            ssl_ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                                 ssl::context::no_sslv3);
            ssl_ctx->use_certificate_chain_file(options.tls->cert_file.string());
            ssl_ctx->use_private_key_file(options.tls->key_file.string(), ssl::context::pem);
            if (!options.tls->client_ca_file.empty()) {
                ssl_ctx->load_verify_file(options.tls->client_ca_file.string());
                ssl_ctx->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
            }
            if (options.tls->tls12_only) SSL_CTX_set_max_proto_version(ssl_ctx->native_handle(), TLS1_2_VERSION);
            // Sessions are resumable (OpenSSL's default tickets), also with
            // client certificates, which need a session id context.
            static const unsigned char sid_context[] = "modelproxy-fake-provider";
            SSL_CTX_set_session_id_context(ssl_ctx->native_handle(), sid_context, sizeof sid_context - 1);
        } catch (const std::exception& e) {
            throw std::runtime_error(std::string("FakeProvider: TLS setup failed: ") + e.what());
        }
    }
    error_code ec;
    acceptor.emplace(*ioc);
    acceptor->open(tcp::v4(), ec);
    if (!ec) acceptor->bind({net::ip::make_address_v4("127.0.0.1"), 0}, ec);
    if (!ec) acceptor->listen(net::socket_base::max_listen_connections, ec);
    if (ec) throw std::runtime_error("FakeProvider: cannot listen on 127.0.0.1:0: " + ec.message());
    port = acceptor->local_endpoint().port();

    net::co_spawn(*ioc, accept_loop(), [](std::exception_ptr e) {
        if (!e) return;
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& x) {
            std::fprintf(stderr, "FakeProvider: accept loop failed: %s\n", x.what());
        }
    });
    thread = std::thread([this] { ioc->run(); });
}

void FakeProvider::Impl::stop() {
    {
        std::lock_guard lock(mu);
        if (stopped) return;
        stopped = true;
    }
    if (thread.joinable()) {
        auto closed = std::make_shared<std::promise<void>>();
        auto done = closed->get_future();
        net::post(*ioc, [this, closed] {
            stopping = true;
            error_code ignored;
            acceptor->close(ignored);
            for (auto& [id, close] : closers) close();
            closed->set_value();
        });
        done.wait_for(stop_bound);
        ioc->stop();
        thread.join();
    }
    // Destroying the io_context destroys the suspended sessions (and their
    // sockets) while the members they refer to are still alive.
    acceptor.reset();
    ioc.reset();
    {
        std::lock_guard lock(mu);
        open = 0;
    }
    cv.notify_all();
}

net::awaitable<void> FakeProvider::Impl::accept_loop() {
    for (;;) {
        auto [ec, socket] = co_await acceptor->async_accept(use_tuple);
        if (stopping || ec == net::error::operation_aborted) co_return;
        if (ec) {
            // EMFILE and the like: retry after a short pause instead of spinning.
            net::steady_timer pause(*ioc, 50ms);
            co_await pause.async_wait(use_tuple);
            continue;
        }
        const std::uint64_t id = next_id++;
        {
            std::lock_guard lock(mu);
            ++accepted;
            ++open;
        }
        cv.notify_all();
        error_code ignored;
        socket.set_option(tcp::no_delay(true), ignored);
        auto report = [](std::exception_ptr e) {
            if (!e) return;
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& x) {
                std::fprintf(stderr, "FakeProvider: session failed: %s\n", x.what());
            }
        };
        if (ssl_ctx) {
            using Stream = ssl::stream<tcp::socket>;
            auto c = std::make_shared<Connection<Stream>>(Stream(std::move(socket), *ssl_ctx), id);
            net::co_spawn(*ioc, session(std::move(c)), report);
        } else {
            auto c = std::make_shared<Connection<tcp::socket>>(std::move(socket), id);
            net::co_spawn(*ioc, session(std::move(c)), report);
        }
    }
}

template <class Stream>
net::awaitable<void> FakeProvider::Impl::session(std::shared_ptr<Connection<Stream>> c) {
    closers[c->id] = [w = std::weak_ptr(c)] {
        if (auto c = w.lock()) {
            error_code ignored;
            c->socket().close(ignored);
        }
    };
    bool usable = true;
    if constexpr (is_tls<Stream>) {
        net::steady_timer timer(*ioc);
        arm_cancel(timer, c, tls_handshake_bound);
        auto [ec] = co_await c->stream.async_handshake(ssl::stream_base::server, use_tuple);
        timer.cancel();
        if (ec) {
            usable = false;
            std::lock_guard lock(mu);
            ++tls_failures;
        }
    }
    std::optional<std::size_t> last_index;
    std::size_t on_connection = 0;
    while (usable && !stopping) {
        http::request_parser<http::string_body> parser;
        parser.body_limit(options.body_limit);
        parser.header_limit(1u << 20);
        auto [ec, n] = co_await http::async_read(c->stream, c->buffer, parser, use_tuple);
        if (ec) {
            // The client closed an idle keep-alive connection (or sent garbage).
            if (!stopping && last_index && ec != net::error::operation_aborted) mark_peer_closed(*last_index);
            break;
        }
        Script script;
        const std::size_t index = record(*c, parser.get(), ++on_connection, script);
        last_index = index;
        if (!co_await run_script(c, script, index)) break;
    }
    error_code ignored;
    c->socket().close(ignored);
    closers.erase(c->id);
    {
        std::lock_guard lock(mu);
        --open;
    }
    cv.notify_all();
}

template <class Stream>
std::size_t FakeProvider::Impl::record(Connection<Stream>& c, http::request<http::string_body>& req,
                                      std::size_t on_connection, Script& script) {
    RequestRecord r;
    r.connection_id = c.id;
    r.connection_request = on_connection;
    r.method = std::string(req.method_string());
    r.target = std::string(req.target());
    r.version = req.version();
    for (const auto& field : req) r.headers.push_back({std::string(field.name_string()), std::string(field.value())});
    r.body = std::move(req.body());
    r.received_at = std::chrono::steady_clock::now();
    if constexpr (is_tls<Stream>) {
        SSL* ssl_handle = c.stream.native_handle();
        if (const char* sni = SSL_get_servername(ssl_handle, TLSEXT_NAMETYPE_host_name)) r.tls_server_name = sni;
        r.tls_resumed = SSL_session_reused(ssl_handle) == 1;
        if (X509* peer = SSL_get0_peer_certificate(ssl_handle)) {
            char line[512];
            X509_NAME_oneline(X509_get_subject_name(peer), line, sizeof line);
            r.client_cert_subject = line;
        }
    }
    std::shared_ptr<const Responder> respond;
    {
        std::lock_guard lock(mu);
        r.index = recorded;
        respond = responder;
    }
    // Outside the lock: the responder may take its own locks. Only this
    // thread records, so the index stays the record's place.
    script = respond ? (*respond)(r) : next_script();
    const std::size_t index = r.index;
    {
        std::lock_guard lock(mu);
        ++recorded;
        if (options.keep_records) records.push_back(std::move(r));
    }
    cv.notify_all();
    return index;
}

Script FakeProvider::Impl::next_script() {
    std::lock_guard lock(mu);
    if (queue.empty()) return default_script;
    Script s = std::move(queue.front());
    queue.pop_front();
    return s;
}

void FakeProvider::Impl::mark_peer_closed(std::size_t index) {
    {
        std::lock_guard lock(mu);
        if (index < records.size() && !records[index].peer_closed_at)
            records[index].peer_closed_at = std::chrono::steady_clock::now();
    }
    cv.notify_all();
}

// Returns true when the connection may serve another request.
template <class Stream>
net::awaitable<bool> FakeProvider::Impl::run_script(std::shared_ptr<Connection<Stream>> c, const Script& script,
                                                    std::size_t index) {
    for (const Step& step : script.steps()) {
        if (stopping) co_return false;
        switch (step.kind) {
        case Step::Kind::write: {
            auto [ec, n] = co_await net::async_write(c->stream, net::buffer(step.bytes), use_tuple);
            if (ec) {
                if (!stopping) mark_peer_closed(index);
                co_return false;
            }
            break;
        }
        case Step::Kind::write_raw: {
            auto [ec, n] = co_await net::async_write(c->socket(), net::buffer(step.bytes), use_tuple);
            if (ec) {
                if (!stopping) mark_peer_closed(index);
                co_return false;
            }
            break;
        }
        case Step::Kind::sleep: {
            net::steady_timer timer(*ioc, step.duration);
            co_await timer.async_wait(use_tuple);
            break;
        }
        case Step::Kind::close:
            co_await close_cleanly(c, index);
            co_return false;
        case Step::Kind::reset: {
            error_code ignored;
            c->socket().set_option(net::socket_base::linger(true, 0), ignored);
            c->socket().close(ignored);
            co_return false;
        }
        case Step::Kind::hang:
            if (co_await wait_peer_close(c, std::nullopt)) mark_peer_closed(index);
            co_return false;
        case Step::Kind::expect_close:
            if (co_await wait_peer_close(c, step.duration)) mark_peer_closed(index);
            co_return false;
        }
    }
    co_return true;
}

// Reads and discards until the peer closes (true), `bound` passes or the
// provider stops (false). Reads the TCP socket directly: after this nothing
// is written on the connection, so TLS records need no decoding.
template <class Stream>
net::awaitable<bool> FakeProvider::Impl::wait_peer_close(std::shared_ptr<Connection<Stream>> c,
                                                         std::optional<std::chrono::milliseconds> bound) {
    net::steady_timer timer(*ioc);
    std::shared_ptr<bool> fired = std::make_shared<bool>(false);
    if (bound) fired = arm_cancel(timer, c, *bound);
    char sink[4096];
    for (;;) {
        auto [ec, n] = co_await c->socket().async_read_some(net::buffer(sink), use_tuple);
        if (!ec) continue;
        timer.cancel();
        co_return !*fired && !stopping;
    }
}

// TLS close_notify (bounded), FIN, then wait (bounded) for the peer's FIN
// before closing, so unread bytes from the peer do not turn the FIN into a
// reset.
template <class Stream>
net::awaitable<void> FakeProvider::Impl::close_cleanly(std::shared_ptr<Connection<Stream>> c, std::size_t index) {
    if constexpr (is_tls<Stream>) {
        net::steady_timer timer(*ioc);
        arm_cancel(timer, c, tls_shutdown_bound);
        co_await c->stream.async_shutdown(use_tuple);
        timer.cancel();
    }
    error_code ignored;
    c->socket().shutdown(tcp::socket::shutdown_send, ignored);
    if (co_await wait_peer_close(c, std::chrono::duration_cast<std::chrono::milliseconds>(drain_bound)))
        mark_peer_closed(index);
    c->socket().close(ignored);
}

// ---------------------------------------------------------------------------

FakeProvider::Options FakeProvider::tls_options(std::filesystem::path cert_file, std::filesystem::path key_file,
                                                std::filesystem::path client_ca_file) {
    Options options;
    options.tls = Tls{std::move(cert_file), std::move(key_file), std::move(client_ca_file)};
    return options;
}

FakeProvider::FakeProvider() : FakeProvider(Options{}) {}

FakeProvider::FakeProvider(Options options) : impl_(std::make_unique<Impl>(std::move(options))) { impl_->start(); }

FakeProvider::~FakeProvider() { stop(); }

std::uint16_t FakeProvider::port() const { return impl_->port; }

bool FakeProvider::tls() const { return impl_->options.tls.has_value(); }

std::string FakeProvider::base_url(std::string_view path) const {
    std::string url = tls() ? "https://localhost:" : "http://127.0.0.1:";
    url += std::to_string(port());
    url += path;
    return url;
}

void FakeProvider::push(Script script) {
    std::lock_guard lock(impl_->mu);
    impl_->queue.push_back(std::move(script));
}

void FakeProvider::push(Script script, std::size_t copies) {
    std::lock_guard lock(impl_->mu);
    for (std::size_t i = 0; i < copies; ++i) impl_->queue.push_back(script);
}

void FakeProvider::set_default(Script script) {
    std::lock_guard lock(impl_->mu);
    impl_->default_script = std::move(script);
}

void FakeProvider::set_responder(Responder responder) {
    std::lock_guard lock(impl_->mu);
    if (responder)
        impl_->responder = std::make_shared<const Responder>(std::move(responder));
    else
        impl_->responder.reset();
}

std::size_t FakeProvider::scripts_pending() const {
    std::lock_guard lock(impl_->mu);
    return impl_->queue.size();
}

std::vector<RequestRecord> FakeProvider::requests() const {
    std::lock_guard lock(impl_->mu);
    return impl_->records;
}

std::size_t FakeProvider::request_count() const {
    std::lock_guard lock(impl_->mu);
    return impl_->recorded;
}

bool FakeProvider::wait_for_requests(std::size_t n, std::chrono::milliseconds timeout) const {
    std::unique_lock lock(impl_->mu);
    return impl_->cv.wait_for(lock, timeout, [&] { return impl_->recorded >= n; });
}

bool FakeProvider::wait_for_peer_close(std::size_t index, std::chrono::milliseconds timeout) const {
    std::unique_lock lock(impl_->mu);
    return impl_->cv.wait_for(lock, timeout, [&] {
        return index < impl_->records.size() && impl_->records[index].peer_closed_at.has_value();
    });
}

std::size_t FakeProvider::connections_accepted() const {
    std::lock_guard lock(impl_->mu);
    return impl_->accepted;
}

std::size_t FakeProvider::connections_open() const {
    std::lock_guard lock(impl_->mu);
    return impl_->open;
}

bool FakeProvider::wait_for_connections(std::size_t n, std::chrono::milliseconds timeout) const {
    std::unique_lock lock(impl_->mu);
    return impl_->cv.wait_for(lock, timeout, [&] { return impl_->accepted >= n; });
}

std::size_t FakeProvider::tls_handshake_failures() const {
    std::lock_guard lock(impl_->mu);
    return impl_->tls_failures;
}

void FakeProvider::stop() { impl_->stop(); }

}  // namespace modelproxy::test
