#include "sse/end_rule.hpp"

#include <catch2/catch.hpp>

using modelproxy::policy::Endpoint;
using modelproxy::sse::stream_complete;
using modelproxy::sse::StreamEnds;

TEST_CASE("which clean stream ends are complete, per endpoint", "[end-rule]") {
    auto [endpoint, rules, done, marker, finish, complete] =
        GENERATE(table<Endpoint, bool, bool, bool, bool, bool>({
            {Endpoint::chat_completions, true, true, false, false, true},    // [DONE]
            {Endpoint::chat_completions, true, false, false, true, true},    // finish_reason then clean end
            {Endpoint::chat_completions, true, false, false, false, false},  // neither: stream-incomplete
            {Endpoint::completions, true, false, false, true, true},
            {Endpoint::responses, true, false, true, false, true},           // response.completed
            {Endpoint::responses, true, false, false, true, false},          // a finish_reason ends nothing here
            {Endpoint::messages, true, false, true, false, true},            // message_stop
            {Endpoint::messages, true, false, false, false, false},
            {Endpoint::messages, false, false, false, false, true},          // generic dialect: no end rule
        }));
    CAPTURE(static_cast<int>(endpoint), rules, done, marker, finish);
    CHECK(stream_complete(endpoint, rules, StreamEnds{done, marker, finish}) == complete);
}
