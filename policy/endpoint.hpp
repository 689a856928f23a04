// The endpoint kinds of docs/behaviour.md section 4's per-endpoint table. Pure values.
#pragma once

#include <string_view>

namespace modelproxy::policy {

enum class Endpoint {
    chat_completions,   // /chat/completions
    completions,        // /completions
    responses,          // /responses (not background)
    messages,           // /messages
    embeddings,         // /embeddings
    moderations,        // /moderations
    other,              // any other path: not checked, replays only connect failures and 429
};

// path is the client path with its leading "/v1" removed and no query string,
// e.g. "/chat/completions". Exact match; anything else is Endpoint::other.
constexpr Endpoint endpoint_for_path(std::string_view path) {
    if (path == "/chat/completions") return Endpoint::chat_completions;
    if (path == "/completions") return Endpoint::completions;
    if (path == "/responses") return Endpoint::responses;
    if (path == "/messages") return Endpoint::messages;
    if (path == "/embeddings") return Endpoint::embeddings;
    if (path == "/moderations") return Endpoint::moderations;
    return Endpoint::other;
}

// Section 4's last column: replayed on every retryable class. Endpoint::other
// replays only connect failures and HTTP 429 (it may create jobs, files, runs).
constexpr bool replays_every_class(Endpoint e) { return e != Endpoint::other; }

// Identity and end-marker rules apply (section 4's table, before dialect: generic).
constexpr bool has_stream_rules(Endpoint e) {
    return e == Endpoint::chat_completions || e == Endpoint::completions ||
           e == Endpoint::responses || e == Endpoint::messages;
}

}  // namespace modelproxy::policy
