// The payload digest of docs/behaviour.md section 6: SHA-256 over what an attempt sends
// (method, target, body), as "sha256:<hex>". Every replay recomputes it over
// the bytes it is about to send and refuses to send on a mismatch.
#pragma once

#include <string>
#include <string_view>

namespace modelproxy::request {

std::string payload_digest(std::string_view method, std::string_view target, std::string_view body);
// The same digest written into `out` (its capacity reused).
void payload_digest(std::string& out, std::string_view method, std::string_view target, std::string_view body);

// The replay guard: true when what a replay is about to send has the first
// attempt's digest. The turn refuses to send otherwise (500
// replay_digest_mismatch).
bool replay_matches(std::string_view first_digest, std::string_view method, std::string_view target,
                    std::string_view body);

}  // namespace modelproxy::request
