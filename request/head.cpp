#include "request/head.hpp"

#include "request/text.hpp"

namespace modelproxy::request {

bool acceptable_request_encoding(std::string_view content_encoding) {
    content_encoding = trim_ows(content_encoding);
    return content_encoding.empty() || iequals(content_encoding, "identity");
}

bool valid_method(std::string_view method) {
    if (method.empty()) return false;
    for (const char c : method)
        if (!((c >= 'A' && c <= 'Z') || c == '-' || c == '_')) return false;
    return true;
}

HeadCheck check_request_head(const RequestHead& head, std::uint64_t max_body_bytes) {
    if (!valid_method(head.method)) return {ClientError::bad_request};
    if (head.host_fields > 1 || (head.version >= 11 && head.host_fields == 0)) return {ClientError::bad_request};
    if (head.transfer_encoding && (!head.chunked || head.version < 11)) return {ClientError::bad_request};
    if (head.content_length && *head.content_length > max_body_bytes) return {ClientError::payload_too_large};
    if (!acceptable_request_encoding(head.content_encoding)) return {ClientError::unsupported_content_encoding};
    return {std::nullopt, head.version >= 11 && iequals(head.expect, "100-continue")};
}

}  // namespace modelproxy::request
