// transport/stale.hpp: which failures of a reused upstream connection are the
// free resend of docs/behaviour.md section 4, as a table over what the
// exchange saw.
#include "transport/stale.hpp"

#include <catch2/catch.hpp>

#include <chrono>

using modelproxy::transport::EarlyFailure;
using modelproxy::transport::is_stale;
using namespace std::chrono_literals;

namespace {

struct Row {
    const char* what;
    EarlyFailure seen;
    bool stale;
};

}  // namespace

TEST_CASE("a reused connection's failure is a free resend only when the provider had already closed it", "[stale]") {
    // clang-format off
    const Row rows[] = {
        {"new connection, write failed",                 {.reused = false, .written = false}, false},
        {"new connection, closed at once",               {.reused = false, .written = true, .since_written = 1ms, .endpoint_replayed = true}, false},
        {"reused, write failed",                         {.reused = true, .written = false}, true},
        {"reused, write failed, endpoint not replayed",  {.reused = true, .written = false, .endpoint_replayed = false}, true},
        {"reused, closed at once",                       {.reused = true, .written = true, .since_written = 0ms, .endpoint_replayed = true}, true},
        {"reused, closed after 99 ms",                   {.reused = true, .written = true, .since_written = 99ms, .endpoint_replayed = true}, true},
        {"reused, closed after exactly 100 ms",          {.reused = true, .written = true, .since_written = 100ms, .endpoint_replayed = true}, true},
        {"reused, closed 1 us after the window",         {.reused = true, .written = true, .since_written = 100ms + 1us, .endpoint_replayed = true}, false},
        {"reused, silent 300 ms then closed",            {.reused = true, .written = true, .since_written = 300ms, .endpoint_replayed = true}, false},
        {"reused, silent 15 s then closed",              {.reused = true, .written = true, .since_written = 15s, .endpoint_replayed = true}, false},
        {"reused, silent 120 s then closed",             {.reused = true, .written = true, .since_written = 120s, .endpoint_replayed = true}, false},
        {"reused, closed at once, endpoint not replayed", {.reused = true, .written = true, .since_written = 1ms, .endpoint_replayed = false}, false},
        {"reused, answer bytes then closed at once",     {.reused = true, .written = true, .answer_bytes = true, .since_written = 1ms, .endpoint_replayed = true}, false},
        {"reused, 100 Continue then closed",             {.reused = true, .written = true, .answer_bytes = true, .since_written = 50ms, .endpoint_replayed = true}, false},
    };
    // clang-format on
    for (const Row& row : rows) {
        CAPTURE(row.what);
        CHECK(is_stale(row.seen) == row.stale);
    }
}
