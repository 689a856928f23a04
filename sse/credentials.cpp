#include "sse/credentials.hpp"

#include "sse/credentials_engine.hpp"
#include "sse/json_unescape.hpp"

#include <hs/hs.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdlib>
#include <memory>
#include <utility>

namespace modelproxy::sse {

using detail::CompiledSecrets;
using detail::MatchContext;
using detail::on_match;
using detail::scan_decoded;
using detail::scan_failure_rule;
using detail::scan_stream;
using detail::scan_whole;
using detail::thread_scratch;

namespace {

constexpr unsigned pattern_flags = HS_FLAG_SINGLEMATCH;

// Section 8's whole token: the start of the text, or a byte outside
// [A-Za-z0-9_-], or (in raw JSON) an escape that decodes to a separator.
constexpr std::string_view token_start = R"((?:^|[^A-Za-z0-9_\-]|\\[bfnrt]|\\u[0-9A-Fa-f]{4}))";

// [0-9A-Z] without one capital letter.
std::string class_without(char letter) {
    std::string out = "[0-9";
    if (letter > 'A') out += std::string("A-") + static_cast<char>(letter - 1);
    if (letter < 'Z') out += std::string(1, static_cast<char>(letter + 1)) + "-Z";
    return out + "]";
}

// `n` characters of [0-9A-Z] that do not end in `word` (n >= word.size()):
// any run of n - |word| characters, then a run of |word| that differs from
// word at its first differing position i.
std::string run_not_ending(std::size_t n, std::string_view word) {
    std::string out = "[0-9A-Z]{" + std::to_string(n - word.size()) + "}(?:";
    for (std::size_t i = 0; i < word.size(); ++i) {
        if (i) out += '|';
        out += std::string(word.substr(0, i)) + class_without(word[i]);
        if (const std::size_t rest = word.size() - i - 1) out += "[0-9A-Z]{" + std::to_string(rest) + "}";
    }
    return out + ")";
}

struct Shape {
    std::string_view label;
    std::string body;  // after token_start
};

std::vector<Shape> default_shapes() {
    return {
        {"default sk- key", "sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\\-]{40,}"},
        // The documentation example AKIAIOSFODNN7EXAMPLE is not a secret.
        {"default AWS access key", "AKIA" + run_not_ending(16, "EXAMPLE")},
        // At least 64 base64 characters after the header, line breaks
        // allowed between them: as bytes, or in raw JSON as `\n` / `\r`
        // escapes (and `/` as `\/`), so the raw channel finds a key block
        // split across reads and events too.
        {"default private key block",
         R"(-----BEGIN [A-Z ]*PRIVATE KEY-----(?:(?:[\r\n]|\\[rn])*(?:[A-Za-z0-9+/=]|\\/)){64})"},
        {"default GitHub token", "ghp_[A-Za-z0-9]{36}"},
        {"default NVIDIA API key", "nvapi-[A-Za-z0-9_\\-]{40,}"},
    };
}

// Every byte but [A-Za-z0-9] as \xHH: a literal, whatever it holds.
std::string literal_pattern(std::string_view bytes) {
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 4);
    for (unsigned char c : bytes) {
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
            out += static_cast<char>(c);
        } else {
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    return out;
}

// The key as the body of a JSON string; `/` written `\/` when asked.
std::string json_escaped(std::string_view key, bool escape_slash) {
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    for (unsigned char c : key) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            case '/':
                out += escape_slash ? "\\/" : "/";
                break;
            default:
                if (c < 0x20) {
                    out += "\\u00";
                    out += hex[c >> 4];
                    out += hex[c & 15];
                } else {
                    out += static_cast<char>(c);
                }
        }
    }
    return out;
}

std::string take_message(hs_compile_error_t* error) {
    std::string message = error && error->message ? error->message : "unknown error";
    if (error) hs_free_compile_error(error);
    return message;
}

// Why a secret pattern cannot be used, or empty when it can.
std::string pattern_problem(const std::string& pattern) {
    hs_expr_info_t* info = nullptr;
    hs_compile_error_t* error = nullptr;
    if (hs_expression_info(pattern.c_str(), pattern_flags, &info, &error) != HS_SUCCESS)
        return "invalid regular expression: " + take_message(error);
    const bool empty_match = info->min_width == 0;
    std::free(info);
    if (empty_match) return "matches the empty string, so it would refuse every body";
    hs_database_t* db = nullptr;
    if (hs_compile(pattern.c_str(), pattern_flags, HS_MODE_STREAM, nullptr, &db, &error) != HS_SUCCESS)
        return "cannot be compiled: " + take_message(error);
    hs_free_database(db);
    return {};
}

// One Vectorscan scratch per thread, shared by every scan the thread runs:
// a scan uses it only for the length of one Vectorscan call, and a thread
// makes one call at a time. Allocated once and grown (never shrunk) by
// hs_alloc_scratch for each compiled rule set the thread meets, so a
// reloaded config's larger databases get room and the old ones keep theirs.
// hs_alloc_scratch allocates a sizing block even when the scratch is large
// enough, so it runs only for a rule set not seen lately (no allocation
// per body or stream).
class ThreadScratch {
public:
    ThreadScratch() = default;
    ThreadScratch(const ThreadScratch&) = delete;
    ThreadScratch& operator=(const ThreadScratch&) = delete;
    ~ThreadScratch() {
        if (scratch_) hs_free_scratch(scratch_);
    }

    // Null when Vectorscan cannot allocate it (the scan then refuses).
    hs_scratch_t* for_rules(const CompiledSecrets& compiled) {
        if (std::find(sized_for_.begin(), sized_for_.end(), compiled.generation) != sized_for_.end())
            return scratch_;
        for (const hs_database_t* db : {compiled.block, compiled.stream, compiled.keys_block, compiled.keys_stream}) {
            if (db && hs_alloc_scratch(db, &scratch_) != HS_SUCCESS) {
                // A failed grow may have freed it: start over next time.
                if (scratch_) hs_free_scratch(scratch_);
                scratch_ = nullptr;
                sized_for_.fill(0);
                return nullptr;
            }
        }
        sized_for_[next_] = compiled.generation;
        next_ = (next_ + 1) % sized_for_.size();
        return scratch_;
    }

private:
    hs_scratch_t* scratch_ = nullptr;
    // The last rule sets it was sized for (0: none). It only grows, so it
    // stays large enough for each of them; a few are kept so that a reload's
    // old streams and new requests on one thread do not resize it in turn.
    std::array<std::uint64_t, 4> sized_for_{};
    std::size_t next_ = 0;
};

// Where the decoded pass writes, one per thread, kept from text to text
// (a text decodes to at most its own length). A buffer a large body grew
// past `kept_bytes` is released after its scan: a thread does not keep tens
// of MiB for the next rare large body.
class DecodeBuffer {
public:
    static constexpr std::size_t kept_bytes = 1u << 20;

    std::string_view decode(std::string_view text) {
        if (text.size() > capacity_) {
            data_ = std::make_unique_for_overwrite<char[]>(text.size());
            capacity_ = text.size();
        }
        char* end = unescape_json(text, data_.get());
        return std::string_view(data_.get(), static_cast<std::size_t>(end - data_.get()));
    }
    void trim() {
        if (capacity_ > kept_bytes) {
            data_.reset();
            capacity_ = 0;
        }
    }

private:
    std::unique_ptr<char[]> data_;
    std::size_t capacity_ = 0;
};

}  // namespace

namespace detail {

int on_match(unsigned int id, unsigned long long, unsigned long long to, unsigned int, void* context) {
    auto* ctx = static_cast<MatchContext*>(context);
    ctx->to = to;
    ctx->rule = id < ctx->compiled->labels.size() ? std::string_view(ctx->compiled->labels[id])
                                                  : std::string_view("unknown rule");
    return 1;  // the first match decides: stop scanning
}

hs_scratch_t* thread_scratch(const CompiledSecrets& compiled) {
    thread_local ThreadScratch scratch;
    return scratch.for_rules(compiled);
}

std::string_view scan_whole(const hs_database_t* block, const hs_database_t* stream, std::string_view text,
                            hs_scratch_t* scratch, const CompiledSecrets* compiled) {
    if (!block) return {};  // nothing to look for
    if (!scratch) return scan_failure_rule;
    if (text.size() <= UINT_MAX) {
        MatchContext ctx{compiled, {}};
        const hs_error_t rc =
            hs_scan(block, text.data(), static_cast<unsigned>(text.size()), 0, scratch, on_match, &ctx);
        if (rc == HS_SUCCESS) return {};
        return rc == HS_SCAN_TERMINATED && !ctx.rule.empty() ? ctx.rule : scan_failure_rule;
    }
    // Beyond block mode's length type: the same rules as one stream.
    hs_stream_t* open = nullptr;
    if (!stream || hs_open_stream(stream, 0, &open) != HS_SUCCESS) return scan_failure_rule;
    std::string_view rule = scan_stream(open, text, scratch, compiled);
    MatchContext ctx{compiled, {}};
    const hs_error_t rc = hs_close_stream(open, scratch, on_match, &ctx);
    if (rule.empty() && !ctx.rule.empty()) rule = ctx.rule;
    if (rule.empty() && rc != HS_SUCCESS && rc != HS_SCAN_TERMINATED) rule = scan_failure_rule;
    return rule;
}

std::string_view scan_decoded(const hs_database_t* block, const hs_database_t* stream, std::string_view text,
                              hs_scratch_t* scratch, const CompiledSecrets* compiled) {
    if (!block || !holds_escape(text)) return {};
    thread_local DecodeBuffer buffer;
    const std::string_view rule = scan_whole(block, stream, buffer.decode(text), scratch, compiled);
    buffer.trim();
    return rule;
}

std::string_view scan_stream(hs_stream_t* stream, std::string_view bytes, hs_scratch_t* scratch,
                             const CompiledSecrets* compiled, unsigned long long* match_end) {
    MatchContext ctx{compiled, {}};
    while (!bytes.empty()) {
        const std::size_t n = std::min<std::size_t>(bytes.size(), UINT_MAX);
        const hs_error_t rc =
            hs_scan_stream(stream, bytes.data(), static_cast<unsigned>(n), 0, scratch, on_match, &ctx);
        if (rc == HS_SCAN_TERMINATED) {
            if (match_end && !ctx.rule.empty()) *match_end = ctx.to;
            return ctx.rule.empty() ? scan_failure_rule : ctx.rule;
        }
        if (rc != HS_SUCCESS) return scan_failure_rule;
        bytes.remove_prefix(n);
    }
    return {};
}

}  // namespace detail

// ---- CredentialScanner ---------------------------------------------------------

std::variant<CredentialScanner, std::string> CredentialScanner::build(
    std::span<const std::string> keys, std::span<const std::string> secret_patterns, bool default_patterns) {
    std::string problems;
    for (std::size_t i = 0; i < secret_patterns.size(); ++i) {
        if (std::string why = pattern_problem(secret_patterns[i]); !why.empty()) {
            if (!problems.empty()) problems += '\n';
            problems += "boundary.secret_patterns[" + std::to_string(i) + "]: " + why;
        }
    }
    if (!problems.empty()) return problems;

    auto compiled = std::make_shared<CompiledSecrets>();
    std::vector<std::string> patterns;
    // The keys' patterns come first: ids [0, key_patterns) are theirs.
    const auto add = [&](std::string pattern, std::string label) {
        if (std::find(patterns.begin(), patterns.end(), pattern) != patterns.end()) return;
        patterns.push_back(std::move(pattern));
        compiled->labels.push_back(std::move(label));
    };
    for (std::size_t i = 0; i < keys.size(); ++i) {
        if (keys[i].empty()) continue;
        const std::string label = "upstream key " + std::to_string(i);
        add(literal_pattern(keys[i]), label);
        add(literal_pattern(json_escaped(keys[i], false)), label + " (JSON-escaped)");
        add(literal_pattern(json_escaped(keys[i], true)), label + " (JSON-escaped)");
    }
    const std::size_t key_patterns = patterns.size();
    if (default_patterns)
        for (const Shape& shape : default_shapes()) add(std::string(token_start) + shape.body, std::string(shape.label));
    for (std::size_t i = 0; i < secret_patterns.size(); ++i)
        add(secret_patterns[i], "boundary.secret_patterns[" + std::to_string(i) + "]");

    if (patterns.empty()) return CredentialScanner(std::move(compiled));

    std::vector<const char*> expressions;
    std::vector<unsigned> flags(patterns.size(), pattern_flags);
    std::vector<unsigned> ids;
    for (std::size_t i = 0; i < patterns.size(); ++i) {
        expressions.push_back(patterns[i].c_str());
        ids.push_back(static_cast<unsigned>(i));
    }
    struct Database {
        unsigned mode;
        hs_database_t** db;
        std::size_t count;  // the first `count` patterns
    };
    for (const Database& d : {Database{HS_MODE_BLOCK, &compiled->block, patterns.size()},
                              Database{HS_MODE_STREAM, &compiled->stream, patterns.size()},
                              Database{HS_MODE_BLOCK, &compiled->keys_block, key_patterns},
                              Database{HS_MODE_STREAM, &compiled->keys_stream, key_patterns}}) {
        if (d.count == 0) continue;
        hs_compile_error_t* error = nullptr;
        if (hs_compile_multi(expressions.data(), flags.data(), ids.data(), static_cast<unsigned>(d.count), d.mode,
                             nullptr, d.db, &error) != HS_SUCCESS) {
            const int at = error ? error->expression : -1;
            const std::string where = at >= 0 && static_cast<std::size_t>(at) < compiled->labels.size()
                                          ? compiled->labels[at]
                                          : std::string("boundary");
            return where + ": the credential patterns cannot be compiled: " + take_message(error);
        }
    }
    // Scans use a per-thread scratch (thread_scratch); this one only checks,
    // at load time, that one can be made for these databases.
    hs_scratch_t* probe = nullptr;
    bool scratch_ok = true;
    for (const hs_database_t* db : {compiled->block, compiled->stream, compiled->keys_block, compiled->keys_stream})
        if (db && hs_alloc_scratch(db, &probe) != HS_SUCCESS) scratch_ok = false;
    if (probe) hs_free_scratch(probe);
    if (!scratch_ok) return std::string("boundary: cannot allocate Vectorscan scratch space");
    return CredentialScanner(std::move(compiled));
}

bool CredentialScanner::empty() const { return !compiled_ || !compiled_->block; }

bool CredentialScanner::contains_secret(std::string_view body) const { return body_scan().contains_secret(body); }

bool CredentialScanner::has_keys() const { return compiled_ && compiled_->keys_block; }

bool CredentialScanner::key_in_head(std::string_view head) const {
    if (!has_keys()) return false;
    const CompiledSecrets& c = *compiled_;
    return !scan_whole(c.keys_block, c.keys_stream, head, thread_scratch(c), &c).empty();
}

bool CredentialScanner::key_in_body(std::string_view body) const {
    if (!has_keys()) return false;
    const CompiledSecrets& c = *compiled_;
    hs_scratch_t* scratch = thread_scratch(c);
    return !scan_whole(c.keys_block, c.keys_stream, body, scratch, &c).empty() ||
           !scan_decoded(c.keys_block, c.keys_stream, body, scratch, &c).empty();
}

BodyScan CredentialScanner::body_scan() const { return BodyScan(*this); }

StreamScan CredentialScanner::stream_scan() const { return StreamScan(*this); }

// ---- BodyScan ------------------------------------------------------------------

BodyScan::BodyScan(const CredentialScanner& scanner) : compiled_(scanner.compiled_) {}

bool BodyScan::contains_secret(std::string_view body) {
    matched_rule_ = {};
    if (!compiled_ || !compiled_->block) return false;  // nothing to look for
    const CompiledSecrets& c = *compiled_;
    hs_scratch_t* scratch = thread_scratch(c);
    matched_rule_ = scan_whole(c.block, c.stream, body, scratch, &c);
    if (matched_rule_.empty()) matched_rule_ = scan_decoded(c.block, c.stream, body, scratch, &c);
    return !matched_rule_.empty();
}

}  // namespace modelproxy::sse
