// The skeleton the simulations' fake providers share (outage/upstream.hpp,
// load/provider.hpp, fleet/provider.hpp): an HTTP/1.1 server on 127.0.0.1,
// port 0, running on the caller's io_context, that accepts every connection
// and reads its requests one after another (body up to 64 MiB), handing each
// request, read whole, to the provider's handler; the handler answers it (or
// not) and says whether to read the next request on that connection. Also
// the pieces of an OpenAI-compatible answer the providers build alike.
//
// An accept that fails (e.g. too many open files) is skipped, so that the
// proxy sees a refused or dropped connect; the loop ends when the acceptor
// closes. Threading: everything runs on the io_context's thread; the
// io_context's end destroys the coroutines and their sockets.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace modelproxy::outage {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
using HttpAnswer = boost::beast::http::response<boost::beast::http::string_body>;

// Handles one request read whole on `socket`; returns whether to read the
// next request on it (false: the connection is done; closing it is left to
// the coroutine's end unless the handler did it).
using HttpHandler =
    std::function<boost::asio::awaitable<bool>(boost::asio::ip::tcp::socket& socket, const HttpRequest& req)>;

class HttpServer {
public:
    // Listens at once; serving starts when the io_context runs. The handler
    // (and what it holds) lives as long as a connection does. Throws when it
    // cannot listen.
    HttpServer(boost::asio::io_context& io, HttpHandler handler);
    ~HttpServer();
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    std::uint16_t port() const { return port_; }

    struct State;  // the acceptor and the handler, shared with the coroutines

private:
    std::uint16_t port_ = 0;
    std::shared_ptr<State> state_;
};

// Writes `res` with the request's keep-alive; returns whether the connection
// stays open (written, and the request kept it alive). `written` (when
// given) says whether the write succeeded.
boost::asio::awaitable<bool> write_answer(boost::asio::ip::tcp::socket& socket, const HttpRequest& req,
                                          HttpAnswer& res, bool* written = nullptr);

// The value of the request body's top-level string "model" (the simulations'
// own bodies: one "model" key, no escapes), or "unknown".
std::string requested_model(const std::string& body);

// Whether the body asks for a stream (`"stream":true`, with or without a space).
bool wants_stream(const std::string& body);

// A 200 chat completion from `id` naming `model` with `usage_json` (the
// `"usage":{...}` member): an SSE stream of two chunks ending in `[DONE]`
// when `stream`, else one JSON object.
HttpAnswer completion_answer(const std::string& id, const std::string& model, bool stream, unsigned version,
                             const std::string& usage_json);

// OpenAI's 429 for a request rate: the rate_limit_exceeded body and
// `Retry-After: 1` (the rate-limit headers are the caller's).
HttpAnswer rate_limit_answer(unsigned version);

// An answer of `status` with a JSON body.
HttpAnswer json_answer(boost::beast::http::status status, const std::string& body, unsigned version);

}  // namespace modelproxy::outage
