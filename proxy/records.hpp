// The JSON-lines records of docs/behaviour.md section 10: one per attempt and one per turn,
// each written and flushed as one whole line when it happens, to stdout or the
// --log file. No record ever holds a key, an Authorization value or a body:
// the record structs have no field that could carry one.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace modelproxy::proxy {

struct AttemptRecord {
    std::string_view request_id;
    std::string_view route;
    std::string_view model;
    int attempt = 1;
    std::optional<int> status;            // null when no HTTP answer
    std::string_view error_class;         // "" -> null
    std::string_view code;                // "" -> null
    std::string_view timeout_source;      // "" -> null
    std::string_view rule;                // "" -> null
    std::string_view decision;            // retry|terminal|exhausted|deadline|cancelled|ok
    std::int64_t delay_ms = 0;
    std::int64_t remaining_ms = 0;
    std::string_view digest;              // "sha256:<hex>"
    int candidate = 0;                    // the index in the turn's candidate list (section 13)
    // Section 16, in Unicode code points: on an attempt whose cut stream a
    // resume continues (decision resume), the answer text published when it
    // broke; on a resume's attempt, the published text it had to reproduce.
    // null on every other attempt.
    std::optional<std::int64_t> resume_offset;
    // A model_identity_mismatch only (docs/behaviour.md section 9), else neither key is
    // written: "answered_model", the model the upstream answered with ("" ->
    // null: it named none), and "accepted_models", the names accepted.
    std::string_view answered_model;
    const std::vector<std::string>* accepted_models = nullptr;
};

struct TurnRecord {
    std::string_view request_id;
    std::string_view route;               // "" -> null (refused before routing)
    std::string_view model;               // "" -> null
    int attempts = 0;
    std::string_view outcome;             // ok|terminal|exhausted|deadline|cancelled|refused|rejected
    std::string_view error_class;
    std::string_view code;
    std::string_view bound;
    std::optional<int> status;            // what the client got
    bool stream = false;
    bool published = false;
    std::string_view fallback_from;
    std::int64_t duration_ms = 0;
    std::optional<std::int64_t> ttft_ms;
    int resumed = 0;                      // section 16: cut streams continued past their seam
};

// A breaker's change of state (docs/behaviour.md section 13).
struct BreakerRecord {
    std::string_view route;
    std::string_view model;
    std::string_view from;                // closed|open|half-open
    std::string_view to;
    std::string_view reason;              // consecutive|ratio|probe-ok|probe-failed|timer
    std::int64_t open_ms = 0;             // the open time in force
};

std::string to_json_line(const AttemptRecord& record);
std::string to_json_line(const BreakerRecord& record);
std::string to_json_line(const TurnRecord& record);

// Writes whole lines with one write(2) per call, so concurrent workers never
// interleave within a line. reopen() is for log rotation (SIGHUP).
class RecordLog {
public:
    RecordLog() = default;
    ~RecordLog();
    RecordLog(const RecordLog&) = delete;
    RecordLog& operator=(const RecordLog&) = delete;

    // path empty: stdout. Returns an error message on failure.
    std::optional<std::string> open(const std::string& path);
    std::optional<std::string> reopen();
    void write(std::string_view line);
    // Formats the record into a per-thread buffer and writes it: no heap
    // allocation per record once the buffer has grown.
    void write(const AttemptRecord& record);
    void write(const TurnRecord& record);
    void write(const BreakerRecord& record);
    // A turn's last attempt and the turn itself, when both end at the same
    // moment: two whole lines in one write(2), one syscall fewer per turn.
    void write(const AttemptRecord& attempt, const TurnRecord& turn);

private:
    std::mutex mutex_;  // guards fd_ against reopen only
    int fd_ = 1;
    std::string path_;
};

}  // namespace modelproxy::proxy
