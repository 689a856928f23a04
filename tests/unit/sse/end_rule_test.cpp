#include "sse/end_rule.hpp"

#include <catch2/catch.hpp>

using modelproxy::policy::Endpoint;
using modelproxy::sse::event_counts;
using modelproxy::sse::Event;
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

TEST_CASE("an unterminated last event is judged only after a clean end", "[end-rule]") {
    const std::string_view line = R"({"id":"c1","obj)";
    auto [terminated, has_data, read_broke, counts] = GENERATE(table<bool, bool, bool, bool>({
        {true, true, false, true},    // a whole event
        {true, true, true, true},     // a whole event before the break still counts
        {false, true, false, true},   // clean end without the blank line: its data is judged
        {false, true, true, false},   // cut off by the break: part of the break
        {false, false, false, false}, // nothing but a stray line
    }));
    Event event;
    event.terminated = terminated;
    if (has_data) event.data = std::span<const std::string_view>(&line, 1);
    CAPTURE(terminated, has_data, read_broke);
    CHECK(event_counts(event, read_broke) == counts);
}
