// Whether a reused upstream connection that failed before its answer's head
// was one the provider had already closed (docs/behaviour.md section 4): only
// then is the request re-sent once, at once, on a new connection, without
// counting an attempt. Any other failure is an attempt like any other, so
// that a provider that kept a request for seconds and then closed is never
// sent it again for free, and `x-modelproxy-attempts` undercounts what the
// provider received by at most that one stale send.
//
// A pure function of what the exchange saw; the caller reads the clock.
#pragma once

#include <chrono>

namespace modelproxy::transport {

// How soon after the request's last byte was written a reused connection
// may end, with no answer byte, and still count as closed by the provider
// before the request reached it (docs/behaviour.md section 4). Only on an
// endpoint marked replayed: elsewhere a close after a whole request is no
// proof the provider did not act on it.
inline constexpr std::chrono::milliseconds stale_close_window{100};

// What an exchange saw before it failed without an answer head.
struct EarlyFailure {
    bool reused = false;             // the connection came from the pool
    bool written = false;            // every byte of the request was written
    bool answer_bytes = false;       // any byte of an answer was read (a 1xx answer's included)
    std::chrono::steady_clock::duration since_written{};  // from the write's completion to the
                                                          // failure; read only when `written`
    bool endpoint_replayed = false;  // the request's endpoint replays every retryable class
};

// True when the failure is a stale connection: reused, and either the
// request could not be fully written, or, on an endpoint marked replayed,
// the connection ended with no answer byte within stale_close_window of the
// request being written.
constexpr bool is_stale(const EarlyFailure& f) {
    if (!f.reused || f.answer_bytes) return false;
    if (!f.written) return true;
    return f.endpoint_replayed && f.since_written <= stale_close_window;
}

}  // namespace modelproxy::transport
