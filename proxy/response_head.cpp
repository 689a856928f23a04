#include "proxy/response_head.hpp"

#include "proxy/request.hpp"

#include <boost/beast/http/status.hpp>

namespace modelproxy::proxy {

namespace http = boost::beast::http;

ResponseHead::ResponseHead(unsigned status, std::string_view reason, std::string storage)
    : text_(std::move(storage)), status_(status) {
    text_.clear();
    text_.reserve(512);
    if (reason.empty()) reason = http::obsolete_reason(static_cast<http::status>(status));
    text_ += "HTTP/1.1 ";
    text_ += std::to_string(status);
    text_ += ' ';
    text_ += reason;
    text_ += "\r\n";
}

void ResponseHead::add(std::string_view name, std::string_view value) { append_field(text_, name, value); }

void ResponseHead::copy_upstream(const transport::Exchange& answer) {
    // The first Connection field, as the exchange's one walk of the head found
    // it (field_scan.hpp); its tokens are read in place, not collected.
    const ConnectionTokens connection(answer.fields().connection.value_or(""));
    for (const auto& field : answer.head()) {
        const std::string_view name = field.name_string();
        if (!forward_response_header(name, connection.lists(name))) continue;
        // The proxy is the one retry owner: a failure carries its own
        // x-should-retry: false (add_failure), never the upstream's.
        if ((status_ < 200 || status_ >= 300) && iequals(name, "x-should-retry")) continue;
        add(name, field.value());
    }
}

void ResponseHead::add_modelproxy(int attempts, std::string_view request_id, std::string_view model,
                                  std::string_view route) {
    add("x-modelproxy-attempts", std::to_string(attempts));
    add("x-modelproxy-request-id", request_id);
    if (!model.empty()) add("x-modelproxy-model", model);
    add("x-modelproxy-route", route);
}

void ResponseHead::add_failure(std::string_view error_class, std::string_view decision, std::string_view bound) {
    add("x-modelproxy-error-class", error_class);
    add("x-modelproxy-decision", decision);
    if (!bound.empty()) add("x-modelproxy-bound", bound);
    add("x-should-retry", "false");
}

void ResponseHead::content_length(std::size_t length) { add("content-length", std::to_string(length)); }

void ResponseHead::chunked() { add("transfer-encoding", "chunked"); }

std::string ResponseHead::finish() {
    text_ += "\r\n";
    return std::move(text_);
}

}  // namespace modelproxy::proxy
