// The soak's fault table: for every failure class of docs/behaviour.md sections 5, 7 and 8,
// and for cut streams on a route that continues them (section 16),
// what the fake provider answers on each upstream request of a turn, and the
// outcome docs/behaviour.md predicts the client sees (sections 7, 9 and 16). Pure: scripts
// and expectations are values; nothing here does I/O.
//
// Every byte a turn's answer carries is derived from its turn id, so a
// response holding another turn's id is cross-talk, and a success must equal
// the bytes built here exactly.
#pragma once

#include "support/script.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace modelproxy::soak {

// The proxy config's retry bounds: small so bound cases end fast; the
// expectations below use the same numbers.
struct Bounds {
    int max_attempts = 4;
    int throttled_max_attempts = 6;
};

// "soak-t" + 8 digits: the request's model and the answer's identity.
std::string turn_id(std::uint64_t turn);
// The turn number in the first "soak-t<8 digits>" of `text`, if any.
bool parse_turn_id(std::string_view text, std::uint64_t& turn);
constexpr std::string_view turn_id_prefix = "soak-t";

// The client's request body (chat completions, stream or not); `model`
// empty: the turn id is the model (the "*" route serves it). `deterministic`
// adds "temperature":0, which a route with resume's only_deterministic
// needs before it continues a cut stream (docs/behaviour.md section 16).
std::string request_body(const std::string& id, bool stream, std::string_view model = {},
                         bool deterministic = false);

// The successful answers for a turn: a JSON completion or an SSE stream. Size
// varies with the turn number so buffers of every size are crossed.
std::string success_json(const std::string& id, std::uint64_t turn);
std::vector<std::string> success_stream(const std::string& id, std::uint64_t turn);
test::Script success_script(const std::string& id, std::uint64_t turn, bool stream);

enum class Shape {
    ok,              // 200 with exactly the success bytes
    passed_on,       // the upstream's non-2xx status and body, with the failure headers (section 9)
    envelope,        // the proxy's own JSON error envelope (sections 8, 9)
    stream_closing,  // 200 stream: exactly `body` published, then one closing error event (section 7)
    stream_exact,    // 200 stream holding exactly `body` (an upstream error event, section 7)
    resumed,         // 200 stream cut and continued by a resume (section 16): exactly `body`, the
                     // uncut answer under the first stream's ids
};

struct Expectation {
    Shape shape = Shape::ok;
    unsigned status = 200;
    std::string body;         // ok / passed_on / stream_exact: the whole body; stream_closing: its prefix
    std::string error_class;  // passed_on header / envelope "class"; "" = not checked
    std::string decision;     // "" = not checked
    std::string bound;        // passed_on / envelope; "-" = none, "" = not checked
    std::string code;         // envelope "code" / closing event "type"; "" = not checked
    int attempts = -1;        // x-modelproxy-attempts; -1 = upstream requests less free resends
    int requests = -1;        // upstream requests the turn must cause; -1 = not checked
    // Upstream requests sent after the stream's head went out (a resume's,
    // section 16): x-modelproxy-attempts was written before them, the
    // closing event's attempts and the records count them.
    int unheaded = 0;
    // resumed: the whole answer text, and the raw JSON tokens of the id,
    // created and system_fingerprint every chunk must carry (the first stream's).
    std::string text;
    std::string first_id, first_created, first_fingerprint;
    // The records (section 16): the code points published when the stream
    // was cut, which the attempt with decision `resume` and the resume's
    // attempt carry as resume_offset (-1: no attempt has one), and the turn
    // record's resumed.
    std::int64_t resume_offset = -1;
    int resumed = 0;
};

enum class Kinds { both, plain, stream };

struct FaultCase {
    std::string name;
    Kinds kinds = Kinds::both;
    bool transient = false;      // k (1 or 2) faulty requests, then the success
    bool refused_route = false;  // sent to a route whose upstream port refuses connections
    // The script for request `n` (1-based, free resends included) of a turn.
    std::function<test::Script(const std::string& id, std::uint64_t turn, bool stream, int n)> script;
    // What the client must see (`k`: the faulty requests of a transient case).
    std::function<Expectation(const std::string& id, std::uint64_t turn, bool stream, int k)> expect;
    // A case on the resume route (docs/behaviour.md section 16): the result
    // modelproxy_resumes_total counts once for each of its turns; "" for
    // cases on the other routes, which never count a resume.
    std::string resume;
};

// Every case, in the order the summary prints them.
std::vector<FaultCase> fault_cases(const Bounds& bounds);

// A turn without a fault, or the success after a transient fault.
Expectation expect_success(const std::string& id, std::uint64_t turn, bool stream, int requests);

// The model of the refused route's turns (its requests never reach the fake).
constexpr std::string_view refused_model = "soak-refused";

// The model and route of the resume cases' turns: resume enabled, so the
// cut cases on the "*" route keep section 7's closing event.
constexpr std::string_view resume_model = "soak-resume";
constexpr std::string_view resume_route = "soak-resume";
// The results of modelproxy_resumes_total, in the order the summary prints them.
inline constexpr std::string_view resume_results[] = {"continued", "diverged", "broken", "skipped"};

// The request a turn of `fault` (null: no fault) sends: its route's model,
// and temperature 0 on the resume route unless the case is the one a
// non-deterministic request rules out.
std::string turn_request(const FaultCase* fault, const std::string& id, bool stream);

}  // namespace modelproxy::soak
