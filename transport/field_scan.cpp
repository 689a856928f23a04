#include "transport/field_scan.hpp"

#include "policy/ascii.hpp"

#include <boost/beast/http/field.hpp>

#include <algorithm>

namespace modelproxy::transport {

namespace {

namespace http = boost::beast::http;

// The first of several fields of one name is the one kept (find()'s answer).
void keep_first(FieldValue& slot, std::string_view value) {
    if (!slot) slot = value;
}

// Whether a Connection value lists "close": comma-separated tokens, with
// optional whitespace around each (RFC 9110 section 7.6.1).
bool lists_close(std::string_view value) {
    while (!value.empty()) {
        const std::size_t comma = std::min(value.find(','), value.size());
        std::string_view token = value.substr(0, comma);
        while (!token.empty() && (token.front() == ' ' || token.front() == '\t')) token.remove_prefix(1);
        while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) token.remove_suffix(1);
        if (policy::iequals(token, "close")) return true;
        value.remove_prefix(std::min(comma + 1, value.size()));
    }
    return false;
}

}  // namespace

RequestFields scan_request(const FlatFields& fields) {
    RequestFields out;
    for (const auto& field : fields) {
        switch (field.name()) {
            case http::field::content_type: keep_first(out.content_type, field.value()); break;
            case http::field::content_encoding: keep_first(out.content_encoding, field.value()); break;
            case http::field::expect: keep_first(out.expect, field.value()); break;
            case http::field::authorization: keep_first(out.authorization, field.value()); break;
            case http::field::transfer_encoding: out.transfer_encoding = true; break;
            case http::field::connection:
                if (out.connection) out.connection_repeated = true;
                keep_first(out.connection, field.value());
                if (lists_close(field.value())) out.connection_close = true;
                break;
            case http::field::unknown: {
                // Names kept as field::unknown (a unit test checks each is).
                const std::string_view name = field.name_string();
                if (name.size() == 4 && policy::iequals(name, "host")) {
                    if (out.host_fields < 2) ++out.host_fields;
                    break;
                }
                if (name.size() < 9 || (name[0] != 'x' && name[0] != 'X')) break;
                if (policy::iequals(name, "x-request-id")) keep_first(out.x_request_id, field.value());
                else if (policy::iequals(name, "x-api-key")) keep_first(out.x_api_key, field.value());
                else if (policy::iequals(name, "x-modelproxy-timeout-ms"))
                    keep_first(out.x_modelproxy_timeout_ms, field.value());
                else if (policy::iequals(name, "x-stainless-timeout"))
                    keep_first(out.x_stainless_timeout, field.value());
                else if (policy::iequals(name, "x-stainless-read-timeout"))
                    keep_first(out.x_stainless_read_timeout, field.value());
                break;
            }
            default: break;
        }
    }
    return out;
}

ResponseFields scan_response(const AnswerHead& head) {
    ResponseFields out;
    for (const auto& field : head) {
        switch (field.name()) {
            case http::field::content_type: keep_first(out.content_type, field.value()); break;
            case http::field::content_encoding: keep_first(out.content_encoding, field.value()); break;
            case http::field::connection: keep_first(out.connection, field.value()); break;
            case http::field::retry_after: keep_first(out.retry_after, field.value()); break;
            case http::field::unknown:
                if (policy::iequals(field.name_string(), "retry-after-ms"))
                    keep_first(out.retry_after_ms, field.value());
                break;
            default: break;
        }
    }
    return out;
}

bool keep_alive(unsigned version, const RequestFields& fields) { return version >= 11 && !fields.connection_close; }

}  // namespace modelproxy::transport
