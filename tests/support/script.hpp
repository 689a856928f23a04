// What FakeProvider does with one request: a list of steps over raw bytes.
// The builders below only produce steps; the test owns every byte, so it can
// script malformed heads, wrong framing and breaks at any point.
//
// A script runs after the request (head and body) has been read and recorded.
// When it ends without a closing step the connection stays open and the next
// request on it pops the next script (keep-alive). close(), reset(), hang()
// and expect_close() end the connection; steps after them are never run.
#pragma once

#include "support/http_text.hpp"

#include <chrono>
#include <string>
#include <vector>

namespace modelproxy::test {

struct Step {
    enum class Kind {
        write,         // the bytes, as one write call
        write_raw,     // the bytes straight onto the TCP socket, beneath TLS (as write on plain HTTP)
        sleep,         // pause for `duration`
        close,         // clean close: TLS close_notify, FIN, drain until the peer closes (bounded)
        reset,         // SO_LINGER 0 then close: the peer sees a connection reset
        hang,          // write nothing more; keep the socket until the peer closes or stop()
        expect_close,  // wait up to `duration` for the peer to close, then close (FIN)
    };
    Kind kind;
    std::string bytes;
    std::chrono::milliseconds duration{0};
};

// How an sse() stream is framed and how it ends.
enum class SseFraming { chunked, close_delimited };
enum class SseEnd {
    finish,  // chunked: last chunk "0\r\n\r\n" (connection stays open); close-delimited: FIN
    close,   // FIN without the last chunk (chunked: a truncated body; close-delimited: same as finish)
    reset,   // RST after the chunks
    hang,    // nothing more, connection held open (idle-timeout tests)
};

struct SseOptions {
    unsigned status = 200;
    Headers headers;                          // extra; Content-Type etc. added only when absent
    std::chrono::milliseconds first_delay{0}; // before the head
    std::chrono::milliseconds delay{0};       // between chunks (none before the first)
    SseFraming framing = SseFraming::chunked;
    SseEnd end = SseEnd::finish;
};

class Script {
public:
    Script() = default;

    // Steps, in order. Each returns *this for chaining.
    Script& write(std::string bytes);
    // Beneath TLS: bytes the client's TLS layer reads as a record, e.g. one
    // it cannot decrypt (a protocol failure, with a fatal alert).
    Script& write_raw(std::string bytes);
    Script& sleep(std::chrono::milliseconds duration);
    Script& chunk(std::string_view data);  // write(format_chunk(data))
    Script& last_chunk();                  // write("0\r\n\r\n")
    Script& close();
    Script& reset();
    Script& hang();
    Script& expect_close(std::chrono::milliseconds bound);
    Script& then(const Script& more);      // append another script's steps

    const std::vector<Step>& steps() const { return steps_; }

    // Builders. Headers given by the test come first, in its order and case;
    // a builder adds its own (Content-Type, Content-Length, Transfer-Encoding,
    // Connection) only when the test did not give that name, so a test can
    // also lie (a wrong Content-Length) on purpose.

    // A complete response with Content-Length; no Content-Type added.
    static Script response(unsigned status, Headers headers, std::string body);
    // response() with Content-Type: application/json.
    static Script json(unsigned status, std::string body, Headers extra_headers = {});
    // Transfer-Encoding: chunked, one HTTP chunk per element written by its
    // own write step, `delay` between them, then the last chunk. (An empty
    // element is itself a last chunk: it ends the body early.)
    static Script chunked(unsigned status, Headers headers, std::vector<std::string> chunks,
                          std::chrono::milliseconds delay = std::chrono::milliseconds{0});
    // A text/event-stream response. `chunks` are raw SSE bytes; each is one
    // write (and, when chunked, one HTTP chunk), so the test chooses where
    // the reader's boundaries fall: mid-line, mid-CRLF, mid-UTF-8. The
    // stream stays open (keep-alive) after SseEnd::finish when chunked.
    static Script sse(std::vector<std::string> chunks, SseOptions options = {});
    // The request is read, then a clean close before any response byte.
    static Script refuse_head_then_close();
    // `bytes_first` (typically a head and part of a body), then a reset.
    static Script reset_mid_body(std::string bytes_first);

private:
    std::vector<Step> steps_;
};

}  // namespace modelproxy::test
