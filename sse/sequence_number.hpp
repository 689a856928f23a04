// A Responses API stream event's `sequence_number` (docs/behaviour.md section 7: the
// proxy's closing error event on /responses carries the number after the
// last forwarded event's). Pure; no allocation.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace modelproxy::sse {

// The value of the first `"sequence_number"` member of a data line (a JSON
// object): a run of ASCII digits after the colon (JSON whitespace allowed
// around it). nullopt when there is none, the value is not such a number, or
// it does not fit 64 bits. Found by its key's bytes, without a parse: inside
// a JSON string every `"` is escaped, so those bytes followed by a colon are
// a member's key (the Responses events have it at top level only).
std::optional<std::uint64_t> sequence_number(std::string_view data);

}  // namespace modelproxy::sse
