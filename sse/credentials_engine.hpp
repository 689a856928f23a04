// The Vectorscan half the credential scans share (internal to sse/):
// credentials.cpp builds the rules and scans whole bodies, stream_scan.cpp
// scans streams (StreamScan). Declared here so the two can live apart.
#pragma once

#include <hs/hs.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace modelproxy::sse::detail {

// The immutable half, shared by the scanner and every scan made from it.
struct CompiledSecrets {
    hs_database_t* block = nullptr;   // HS_MODE_BLOCK: whole bodies
    hs_database_t* stream = nullptr;  // HS_MODE_STREAM: SSE streams
    // The upstream keys' patterns alone (heads, non-2xx bodies); their ids
    // are the same as in the databases above, so `labels` name them too.
    hs_database_t* keys_block = nullptr;
    hs_database_t* keys_stream = nullptr;  // for a text beyond block mode's length type
    std::vector<std::string> labels;  // by pattern id
    // Unique per build, increasing: what the per-thread scratch and spare
    // streams were made for (an address could be reused by a later build).
    std::uint64_t generation = next_generation();

    CompiledSecrets() = default;
    CompiledSecrets(const CompiledSecrets&) = delete;
    CompiledSecrets& operator=(const CompiledSecrets&) = delete;
    ~CompiledSecrets() {
        for (hs_database_t* db : {block, stream, keys_block, keys_stream})
            if (db) hs_free_database(db);
    }

    static std::uint64_t next_generation() {
        static std::atomic<std::uint64_t> last{0};
        return last.fetch_add(1, std::memory_order_relaxed) + 1;
    }
};

inline constexpr std::string_view scan_failure_rule = "scan failure (refused to be safe)";

struct MatchContext {
    const CompiledSecrets* compiled;
    std::string_view rule;
    unsigned long long to = 0;  // the match's end, as an offset into the stream
};

// Vectorscan's match callback (context: a MatchContext): records the first
// match and stops the scan.
int on_match(unsigned int id, unsigned long long from, unsigned long long to, unsigned int flags, void* context);

// The calling thread's scratch, sized for `compiled` (credentials.cpp's
// ThreadScratch); null when Vectorscan cannot allocate it.
hs_scratch_t* thread_scratch(const CompiledSecrets& compiled);

// The rule that matched in `text` scanned as one whole text with `block`
// (or, beyond block mode's length type, `stream`, the same rules), empty
// when none; scan_failure_rule on an engine error.
std::string_view scan_whole(const hs_database_t* block, const hs_database_t* stream, std::string_view text,
                            hs_scratch_t* scratch, const CompiledSecrets* compiled);

// scan_whole over `text` with its JSON escapes decoded (json_unescape.hpp),
// in the calling thread's decode buffer; empty at once when `text` holds no
// backslash.
std::string_view scan_decoded(const hs_database_t* block, const hs_database_t* stream, std::string_view text,
                              hs_scratch_t* scratch, const CompiledSecrets* compiled);

// Feeds bytes to an open stream in pieces Vectorscan's length type can take.
// The matched rule, empty when none; scan_failure_rule on an engine error.
// `match_end`, when given, receives the match's end offset in the stream.
std::string_view scan_stream(hs_stream_t* stream, std::string_view bytes, hs_scratch_t* scratch,
                             const CompiledSecrets* compiled, unsigned long long* match_end = nullptr);

}  // namespace modelproxy::sse::detail
