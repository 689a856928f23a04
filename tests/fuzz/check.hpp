// What the fuzz targets hold the Inspector to: the promises of
// sse/inspect.hpp about one DataInfo, checked against an independent JSON
// checker (strict_json.hpp). A failed check prints itself and abort()s, which
// libFuzzer reports as a crash and saves the input.
#pragma once

#include "policy/endpoint.hpp"
#include "sse/inspect.hpp"

#include <array>
#include <string_view>

namespace modelproxy::fuzz {

[[noreturn]] void fail(const char* what, const char* file, int line);

#define MP_FUZZ_CHECK(cond) ((cond) ? void(0) : ::modelproxy::fuzz::fail(#cond, __FILE__, __LINE__))
// The same, saying what broke in words.
#define MP_FUZZ_CHECK_THAT(cond, what) ((cond) ? void(0) : ::modelproxy::fuzz::fail(what, __FILE__, __LINE__))

inline constexpr std::array<policy::Endpoint, 7> all_endpoints = {
    policy::Endpoint::chat_completions, policy::Endpoint::completions, policy::Endpoint::responses,
    policy::Endpoint::messages,         policy::Endpoint::embeddings,  policy::Endpoint::moderations,
    policy::Endpoint::other,
};

// Every field equal (views compared by content).
bool same_info(const sse::DataInfo& a, const sse::DataInfo& b);

// info is what Inspector::inspect said about `data` for this endpoint
// (with any event name); fails unless it keeps every promise of sse/inspect.hpp that can
// be checked from outside: kind json exactly when the line is one JSON value
// (except where strict_json.hpp lists a deliberate refusal), the fields of a
// non-JSON line empty, answer text and end markers by the endpoint's rules,
// and never answer text in a structured error event.
void check_info(const sse::DataInfo& info, std::string_view data, policy::Endpoint endpoint);

}  // namespace modelproxy::fuzz
