#include "check.hpp"

#include "strict_json.hpp"

#include <cstdio>
#include <cstdlib>

namespace modelproxy::fuzz {

using policy::Endpoint;
using sse::DataInfo;
using sse::DataKind;

void fail(const char* what, const char* file, int line) {
    std::fprintf(stderr, "\n%s:%d: check failed: %s\n", file, line, what);
    std::abort();
}

namespace {

bool same_error(const policy::ProviderError& a, const policy::ProviderError& b) {
    return a.code_int == b.code_int && a.code == b.code && a.type == b.type && a.inner_code == b.inner_code;
}

bool error_empty(const policy::ProviderError& e) {
    return !e.code_int && e.code.empty() && e.type.empty() && e.inner_code.empty();
}

bool same_models(const DataInfo& a, const DataInfo& b) {
    if (a.models().size() != b.models().size()) return false;
    for (std::size_t i = 0; i < a.models().size(); ++i)
        if (a.models()[i] != b.models()[i]) return false;
    return true;
}

bool same_usage(const sse::Usage& a, const sse::Usage& b) {
    return a.input_tokens == b.input_tokens && a.output_tokens == b.output_tokens &&
           a.total_tokens == b.total_tokens;
}

}  // namespace

bool same_info(const DataInfo& a, const DataInfo& b) {
    return a.kind == b.kind && a.object == b.object && a.answer_text == b.answer_text &&
           a.end_marker == b.end_marker && a.finish_reason == b.finish_reason && a.type == b.type &&
           same_models(a, b) && a.structured_error == b.structured_error && same_error(a.error, b.error) &&
           same_usage(a.usage, b.usage);
}

void check_info(const DataInfo& info, std::string_view data, Endpoint endpoint) {
    const bool chat_like = endpoint == Endpoint::chat_completions || endpoint == Endpoint::completions;
    MP_FUZZ_CHECK((info.kind == DataKind::done) == (data == "[DONE]"));

    const StrictJson strict = check_strict_json(data);
    if (info.kind == DataKind::json)
        MP_FUZZ_CHECK_THAT(strict.valid, "kind json, but the line is not one JSON value");
    if (strict.valid && !strict.too_deep && !strict.unrepresentable_root_number && !strict.lone_surrogate)
        MP_FUZZ_CHECK_THAT(info.kind == DataKind::json, "the line is one JSON value, but kind is not json");

    if (info.kind != DataKind::json) {
        MP_FUZZ_CHECK(!info.object && !info.answer_text && !info.structured_error);
        MP_FUZZ_CHECK(info.end_marker == (info.kind == DataKind::done && chat_like));
        MP_FUZZ_CHECK(!info.finish_reason && info.type.empty() && info.models().empty());
        MP_FUZZ_CHECK(!info.usage.present() && error_empty(info.error));
        return;
    }

    MP_FUZZ_CHECK(info.model_count <= info.model_slots.size());
    for (std::string_view model : info.models()) MP_FUZZ_CHECK(!model.empty());
    if (info.finish_reason) MP_FUZZ_CHECK(chat_like);
    if (!info.object) {
        MP_FUZZ_CHECK(info.type.empty() && info.models().empty() && !info.finish_reason);
        MP_FUZZ_CHECK(!info.usage.present() && !info.structured_error);
    }
    if (endpoint == Endpoint::responses && (info.type == "error" || info.type == "response.failed"))
        MP_FUZZ_CHECK(info.structured_error);

    if (info.structured_error) {
        MP_FUZZ_CHECK(info.object && !info.answer_text);
        return;
    }
    MP_FUZZ_CHECK(error_empty(info.error));
    switch (endpoint) {
        case Endpoint::chat_completions:
        case Endpoint::completions:
            MP_FUZZ_CHECK(!info.end_marker);
            break;
        case Endpoint::responses:
            if (info.answer_text)
                MP_FUZZ_CHECK(info.type.starts_with("response.") && info.type.ends_with(".delta"));
            MP_FUZZ_CHECK(info.end_marker ==
                          (info.type == "response.completed" || info.type == "response.incomplete"));
            break;
        case Endpoint::messages:
            MP_FUZZ_CHECK(info.answer_text == (info.type == "content_block_delta"));
            MP_FUZZ_CHECK(info.end_marker == (info.type == "message_stop"));
            break;
        case Endpoint::embeddings:
        case Endpoint::moderations:
        case Endpoint::other:
            MP_FUZZ_CHECK(info.answer_text && !info.end_marker);
            break;
    }
}

}  // namespace modelproxy::fuzz
