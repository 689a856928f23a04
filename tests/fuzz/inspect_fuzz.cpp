// libFuzzer target: the whole input is one SSE data line (or one non-stream
// body) given to sse::Inspector. It must not crash, and what it says must keep
// sse/inspect.hpp's promises (check.hpp), the same whether the line is parsed
// in place (readable_end with simdjson's padding after it, filled with
// whitespace as a stream's next bytes would be) or copied; the member and the
// free body functions must agree with each other and with inspect().
#include "check.hpp"

#include "policy/endpoint.hpp"
#include "sse/inspect.hpp"

#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string_view>

namespace {

using modelproxy::fuzz::all_endpoints;
using modelproxy::fuzz::check_info;
using modelproxy::fuzz::same_info;
using modelproxy::policy::Endpoint;
using modelproxy::policy::ProviderError;
using modelproxy::sse::BodyIdentity;
using modelproxy::sse::DataInfo;
using modelproxy::sse::DataKind;
using modelproxy::sse::Inspector;

bool same_error(const std::optional<ProviderError>& a, const std::optional<ProviderError>& b) {
    if (a.has_value() != b.has_value()) return false;
    return !a || (a->code_int == b->code_int && a->code == b->code && a->type == b->type &&
                  a->inner_code == b->inner_code);
}

bool same_fragments(const DataInfo& a, const DataInfo& b) {
    if (a.answer_fragments.size() != b.answer_fragments.size()) return false;
    for (std::size_t i = 0; i < a.answer_fragments.size(); ++i) {
        if (!(a.answer_fragments[i].key == b.answer_fragments[i].key) ||
            a.answer_fragments[i].text != b.answer_fragments[i].text)
            return false;
    }
    return true;
}

bool same_identity(const BodyIdentity& a, const BodyIdentity& b) {
    return a.json_object == b.json_object && a.models == b.models;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
    // An exact-size copy, so ASan sees any read past the line, and a padded one.
    const std::size_t padding = simdjson::SIMDJSON_PADDING;
    const std::unique_ptr<char[]> exact(new char[size]);
    const std::unique_ptr<char[]> padded(new char[size + padding]);
    if (size != 0) std::memcpy(exact.get(), bytes, size);
    if (size != 0) std::memcpy(padded.get(), bytes, size);
    std::memset(padded.get() + size, '\n', padding);
    const std::string_view line(exact.get(), size);
    const std::string_view line_in_place(padded.get(), size);
    const char* readable_end = padded.get() + size + padding;

    Inspector copying;
    Inspector in_place;
    for (const Endpoint endpoint : all_endpoints) {
        for (const std::string_view event_name : {std::string_view(), std::string_view("error")}) {
            const auto& copied = copying.inspect(line, endpoint, event_name);
            check_info(copied, line, endpoint);
            const auto& direct = in_place.inspect(line_in_place, endpoint, event_name, readable_end);
            MP_FUZZ_CHECK_THAT(same_info(copied, direct), "parsed in place and copied, the line reads differently");
        }

        const auto& info = copying.inspect(line, endpoint);
        const bool json_object = info.kind == DataKind::json && info.object;
        const BodyIdentity identity = in_place.body_identity(line, endpoint);
        MP_FUZZ_CHECK(identity.json_object == json_object);
        if (json_object) {
            MP_FUZZ_CHECK(identity.models.size() == info.models().size());
            for (std::size_t i = 0; i < identity.models.size(); ++i)
                MP_FUZZ_CHECK(identity.models[i] == info.models()[i]);
        } else {
            MP_FUZZ_CHECK(identity.models.empty());
        }
        MP_FUZZ_CHECK(same_identity(identity, modelproxy::sse::body_identity(line, endpoint)));
    }

    const auto& as_other = copying.inspect(line, Endpoint::other);
    const bool json_object = as_other.kind == DataKind::json && as_other.object;
    const std::optional<ProviderError> declared = in_place.parse_error_body(line);
    if (declared) MP_FUZZ_CHECK(json_object);
    // On `other` a structured error event is exactly an object of `error`
    // (and `"type":"error"`): the error a body like it declares.
    if (as_other.structured_error) MP_FUZZ_CHECK(declared && same_error(declared, as_other.error));
    MP_FUZZ_CHECK(same_error(declared, modelproxy::sse::parse_error_body(line)));

    // With a newline (which no data line holds), the input is two lines of
    // one stream: the second, read after the first with the stream's memo,
    // which may take it as the first with only its answer text changed
    // (sse/repeated_shape.hpp), must read as a fresh On-Demand walk reads it,
    // fragments included.
    if (const void* newline = std::memchr(exact.get(), '\n', size)) {
        const std::size_t cut = static_cast<std::size_t>(static_cast<const char*>(newline) - exact.get());
        const std::string_view first = line.substr(0, cut);
        const std::string_view second = line.substr(cut + 1);
        Inspector after;
        Inspector fresh(false);
        for (const Endpoint endpoint : all_endpoints) {
            for (const std::string_view event_name : {std::string_view(), std::string_view("error")}) {
                modelproxy::sse::LineMemo memo;
                after.inspect(first, endpoint, event_name, nullptr, memo);
                const DataInfo& a = after.inspect(second, endpoint, event_name, nullptr, memo);
                const DataInfo& b = fresh.inspect(second, endpoint, event_name);
                MP_FUZZ_CHECK_THAT(same_info(a, b) && same_fragments(a, b),
                                   "a line read after another reads differently from the same line read alone");
            }
        }
    }
    return 0;
}
