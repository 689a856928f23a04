#include "support/script.hpp"

namespace modelproxy::test {

namespace {

void add_if_absent(Headers& headers, std::string_view name, std::string value) {
    if (!find_header(headers, name)) headers.push_back({std::string(name), std::move(value)});
}

}  // namespace

Script& Script::write(std::string bytes) {
    steps_.push_back({Step::Kind::write, std::move(bytes), {}});
    return *this;
}

Script& Script::sleep(std::chrono::milliseconds duration) {
    steps_.push_back({Step::Kind::sleep, {}, duration});
    return *this;
}

Script& Script::chunk(std::string_view data) { return write(format_chunk(data)); }

Script& Script::last_chunk() { return write(format_chunk({})); }

Script& Script::close() {
    steps_.push_back({Step::Kind::close, {}, {}});
    return *this;
}

Script& Script::write_raw(std::string bytes) {
    steps_.push_back({Step::Kind::write_raw, std::move(bytes), {}});
    return *this;
}

Script& Script::reset() {
    steps_.push_back({Step::Kind::reset, {}, {}});
    return *this;
}

Script& Script::hang() {
    steps_.push_back({Step::Kind::hang, {}, {}});
    return *this;
}

Script& Script::expect_close(std::chrono::milliseconds bound) {
    steps_.push_back({Step::Kind::expect_close, {}, bound});
    return *this;
}

Script& Script::then(const Script& more) {
    steps_.insert(steps_.end(), more.steps_.begin(), more.steps_.end());
    return *this;
}

Script Script::response(unsigned status, Headers headers, std::string body) {
    add_if_absent(headers, "Content-Length", std::to_string(body.size()));
    Script s;
    s.write(format_response_head(status, headers) + body);
    return s;
}

Script Script::json(unsigned status, std::string body, Headers extra_headers) {
    add_if_absent(extra_headers, "Content-Type", "application/json");
    return response(status, std::move(extra_headers), std::move(body));
}

Script Script::chunked(unsigned status, Headers headers, std::vector<std::string> chunks,
                       std::chrono::milliseconds delay) {
    add_if_absent(headers, "Transfer-Encoding", "chunked");
    Script s;
    s.write(format_response_head(status, headers));
    for (std::size_t i = 0; i < chunks.size(); ++i) {
        if (i > 0 && delay.count() > 0) s.sleep(delay);
        s.chunk(chunks[i]);
    }
    s.last_chunk();
    return s;
}

Script Script::sse(std::vector<std::string> chunks, SseOptions options) {
    Headers headers = std::move(options.headers);
    add_if_absent(headers, "Content-Type", "text/event-stream");
    add_if_absent(headers, "Cache-Control", "no-cache");
    const bool chunked = options.framing == SseFraming::chunked;
    if (chunked)
        add_if_absent(headers, "Transfer-Encoding", "chunked");
    else
        add_if_absent(headers, "Connection", "close");

    Script s;
    if (options.first_delay.count() > 0) s.sleep(options.first_delay);
    s.write(format_response_head(options.status, headers));
    for (std::size_t i = 0; i < chunks.size(); ++i) {
        if (i > 0 && options.delay.count() > 0) s.sleep(options.delay);
        if (chunked)
            s.chunk(chunks[i]);
        else
            s.write(chunks[i]);
    }
    switch (options.end) {
    case SseEnd::finish:
        if (chunked)
            s.last_chunk();
        else
            s.close();
        break;
    case SseEnd::close: s.close(); break;
    case SseEnd::reset: s.reset(); break;
    case SseEnd::hang: s.hang(); break;
    }
    return s;
}

Script Script::refuse_head_then_close() {
    Script s;
    s.close();
    return s;
}

Script Script::reset_mid_body(std::string bytes_first) {
    Script s;
    s.write(std::move(bytes_first)).reset();
    return s;
}

}  // namespace modelproxy::test
