// A stream read as proxy/stream_events.cpp relays it, for the credential
// scan's property test (credentials_decoded_test.cpp) and its fuzz target
// (tests/fuzz/credentials_fuzz.cpp): in reads that end at `cuts` (ascending
// offsets) and at its end, feed_read per read, event_passed per event,
// check_decoded_line and the answer text of each data line, settle after
// each read, finish at the end. True when the scan refused.
#pragma once

#include "policy/endpoint.hpp"
#include "sse/credentials.hpp"
#include "sse/inspect.hpp"
#include "sse/reader.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace modelproxy::sse::test {

inline bool relay_refuses(const CredentialScanner& scanner, std::string_view stream,
                          const std::vector<std::size_t>& cuts) {
    static Inspector inspector;  // one for every run: its parsers are costly to make
    Reader reader;
    LineMemo memo;
    StreamScan scan = scanner.stream_scan();
    std::uint32_t ordinal = 0;
    std::size_t at = 0;
    for (std::size_t k = 0; k <= cuts.size(); ++k) {
        const std::size_t end = k < cuts.size() ? cuts[k] : stream.size();
        const std::string_view piece = stream.substr(at, end - at);
        at = end;
        scan.feed_read(piece);
        reader.feed(piece);
        if (k == cuts.size()) reader.finish();
        while (const Event* e = reader.next()) {
            if (scan.event_passed(e->raw.size(), e->terminated) != CredentialVerdict::clean) return true;
            if (!e->terminated) continue;
            for (std::size_t i = 0; i < e->data.size(); ++i) {
                if (scan.check_decoded_line(e->data[i]) != CredentialVerdict::clean) return true;
                scan.note_answer_text(
                    ordinal++, inspector.inspect(*e, i, policy::Endpoint::chat_completions, memo).answer_fragments);
            }
        }
        if (scan.settle()) return true;
    }
    return scan.finish() == CredentialVerdict::credential_in_response;
}

}  // namespace modelproxy::sse::test
