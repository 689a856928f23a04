#include "transport/field_scan.hpp"

#include "policy/ascii.hpp"

#include <boost/beast/http/field.hpp>
#include <boost/beast/http/rfc7230.hpp>

namespace modelproxy::transport {

namespace {

namespace http = boost::beast::http;

// The first of several fields of one name is the one kept (find()'s answer).
void keep_first(FieldValue& slot, std::string_view value) {
    if (!slot) slot = value;
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
                break;
            case http::field::unknown: {
                // Names kept as field::unknown (a unit test checks each is).
                const std::string_view name = field.name_string();
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

bool keep_alive(unsigned version, FieldValue connection) {
    // Beast's own rule (basic_fields::get_keep_alive_impl), with the tokens
    // compared by policy::iequals rather than beast::iequals (see ascii.hpp).
    const auto lists = [&](std::string_view token) {
        for (const auto& t : http::token_list{*connection})
            if (policy::iequals({t.data(), t.size()}, token)) return true;
        return false;
    };
    if (version < 11) return connection && lists("keep-alive");
    return !connection || !lists("close");
}

}  // namespace modelproxy::transport
