#include "request/admission.hpp"

namespace modelproxy::request {

namespace {

bool is_health(Dispatch dispatch) {
    return dispatch == Dispatch::healthz || dispatch == Dispatch::readyz || dispatch == Dispatch::metrics;
}

}  // namespace

Admission admit(const HeadFacts& head, const std::vector<std::string>& tokens, std::uint64_t max_body_bytes) {
    Admission out;
    const HeadCheck check = check_request_head(head.framing, max_body_bytes);
    out.target = check_path(head.target);
    if (out.target.status == TargetStatus::ok) out.dispatch = dispatch(head.framing.method, out.target.path);
    out.keep_alive = head.keep_alive && !head.over_limit;
    const bool body = head.framing.has_body();

    if (head.over_limit) {
        // Section 12: a probe still gets its answer; nothing else is served,
        // and no body is read on such a connection.
        if (check.refusal || out.target.status != TargetStatus::ok || !is_health(out.dispatch) || body)
            out.refusal = ClientError::too_many_connections;
        return out;
    }
    if (check.refusal) {
        out.refusal = check.refusal;
        out.keep_alive = false;
        return out;
    }
    // A routing refusal leaves the connection usable when no body is left unread.
    const auto refuse = [&](ClientError error, bool with_id) {
        out.refusal = error;
        out.with_id = with_id;
        out.keep_alive = out.keep_alive && !body;
        return out;
    };
    if (out.target.status != TargetStatus::ok) return refuse(ClientError::invalid_path, false);
    if (out.dispatch == Dispatch::not_found) return refuse(ClientError::not_found, false);
    if (out.dispatch == Dispatch::method_not_allowed) return refuse(ClientError::method_not_allowed, false);
    if (needs_client_token(out.dispatch)) {
        out.auth = authorize_client(head.authorization, head.x_api_key, tokens);
        if (out.auth == ClientAuth::refused) return refuse(ClientError::unauthorized, true);
    }
    out.send_continue = check.send_continue;
    return out;
}

}  // namespace modelproxy::request
