// The per-thread simdjson state every reader of a JSON request body shares
// (json_body.cpp's check and routing walk, token_estimate.cpp's count): one
// on-demand parser and one padded copy of the body, grown to the largest
// body the thread has seen and reused, so a second walk of a body costs no
// second set of buffers. A walk must be done with them before the next one
// starts on the same thread. Internal to request/.
#pragma once

#include <simdjson.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace modelproxy::request::detail {

struct JsonScratch {
    simdjson::ondemand::parser parser;
    std::string padded;
};

JsonScratch& json_scratch();

// The body as simdjson reads it: in place when the caller's buffer has
// SIMDJSON_PADDING readable bytes past it (`readable` counts from
// body.data()), else a padded copy in the scratch. Sets `text` and `room`.
void padded_body(JsonScratch& scratch, std::string_view body, std::size_t readable, const char*& text,
                 std::size_t& room);

}  // namespace modelproxy::request::detail
