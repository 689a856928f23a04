// What a provider's error body (non-2xx) or a structured SSE error event
// declared, already extracted from JSON by sse/ (simdjson) so that policy/
// can classify it as plain values. The message is never read (docs/behaviour.md section 7).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace modelproxy::policy {

struct ProviderError {
    std::optional<std::int64_t> code_int;   // integer error.code (a declared status in a stream)
    std::string code;                       // string error.code ("content_filter", ...)
    std::string type;                       // error.type ("server_error", "overloaded_error", ...)
    std::string inner_code;                 // error.innererror.code (Azure: "ResponsibleAIPolicyViolation")
};

}  // namespace modelproxy::policy
