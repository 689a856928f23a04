#include "sse/identity.hpp"

#include <algorithm>
#include <utility>

namespace modelproxy::sse {

namespace {

bool digits(std::string_view s) {
    for (char c : s)
        if (c < '0' || c > '9') return false;
    return true;
}

int two_digits(std::string_view s) { return (s[0] - '0') * 10 + (s[1] - '0'); }

bool month_day(std::string_view mm, std::string_view dd) {
    const int m = two_digits(mm);
    const int d = two_digits(dd);
    return m >= 1 && m <= 12 && d >= 1 && d <= 31;
}

// `-YYYY-MM-DD`, `-YYYYMMDD` or `-MMDD`, the whole of s.
bool date_suffix(std::string_view s) {
    if (s.empty() || s[0] != '-') return false;
    s.remove_prefix(1);
    if (s.size() == 10 && s[4] == '-' && s[7] == '-') {
        return digits(s.substr(0, 4)) && digits(s.substr(5, 2)) && digits(s.substr(8, 2)) &&
               month_day(s.substr(5, 2), s.substr(8, 2));
    }
    if (s.size() == 8) return digits(s) && month_day(s.substr(4, 2), s.substr(6, 2));
    if (s.size() == 4) return digits(s) && month_day(s.substr(0, 2), s.substr(2, 2));
    return false;
}

}  // namespace

bool glob_match(std::string_view pattern, std::string_view text) {
    // The usual accept globs first, each one compare: a name
    // without a `*`, and a prefix ending in the only one ("gpt-4o-2024-*").
    const std::size_t first_star = pattern.find('*');
    if (first_star == std::string_view::npos) return pattern == text;
    if (first_star + 1 == pattern.size()) return text.starts_with(pattern.substr(0, first_star));
    // Greedy with one backtrack point: a later `*` supersedes an earlier one,
    // so the cost is O(pattern * text) at worst, no recursion.
    std::size_t p = 0, t = 0;
    std::size_t star = std::string_view::npos, resume = 0;
    while (t < text.size()) {
        if (p < pattern.size() && pattern[p] == '*') {
            star = p++;
            resume = t;
        } else if (p < pattern.size() && pattern[p] == text[t]) {
            ++p;
            ++t;
        } else if (star != std::string_view::npos) {
            p = star + 1;
            t = ++resume;
        } else {
            return false;
        }
    }
    while (p < pattern.size() && pattern[p] == '*') ++p;
    return p == pattern.size();
}

bool wildcard_accepts(std::string_view requested, std::string_view identity) {
    if (identity.empty()) return false;
    if (identity == requested) return true;
    constexpr std::string_view latest = "-latest";
    std::string_view base = requested;
    if (base.ends_with(latest)) base.remove_suffix(latest.size());
    return identity.size() > base.size() && identity.starts_with(base) &&
           date_suffix(identity.substr(base.size()));
}

IdentityRule IdentityRule::from_accept(std::vector<std::string> globs) {
    IdentityRule rule;
    rule.kind = Kind::accept_globs;
    rule.globs = std::move(globs);
    return rule;
}

IdentityRule IdentityRule::wildcard_for(std::string requested) {
    IdentityRule rule;
    rule.kind = Kind::wildcard;
    rule.requested = std::move(requested);
    return rule;
}

bool IdentityRule::accepts(std::string_view identity) const {
    if (identity.empty()) return false;
    if (kind == Kind::wildcard) return wildcard_accepts(requested, identity);
    for (const std::string& glob : globs)
        if (glob_match(glob, identity)) return true;
    return false;
}

IdentityVerdict check_body_identity(const BodyIdentity& body, const IdentityRule& rule, std::string_view* foreign) {
    if (!body.json_object) return IdentityVerdict::not_an_object;
    bool named = false;
    for (const std::string& model : body.models) {
        if (model.empty()) continue;
        if (!rule.accepts(model)) {
            if (foreign) *foreign = model;
            return IdentityVerdict::foreign_model;
        }
        named = true;
    }
    return named ? IdentityVerdict::ok : IdentityVerdict::no_model;
}

void bounded_name(std::string_view name, std::string& out) {
    constexpr std::size_t most = IdentityRefusal::max_name_bytes;
    out.clear();
    for (std::size_t i = 0; i < name.size() && i < most; ++i) {
        const char c = name[i];
        out += c >= 0x20 && c < 0x7f ? c : '?';
    }
    if (name.size() > most) out += "...";
}

void describe_refusal(IdentityVerdict verdict, std::string_view answered, const IdentityRule& rule,
                      IdentityRefusal& out) {
    bounded_name(verdict == IdentityVerdict::foreign_model ? answered : std::string_view{}, out.answered);
    out.accepted.clear();
    const auto accept = [&](std::string_view name, std::string_view suffix = {}) {
        std::string& entry = out.accepted.emplace_back();
        bounded_name(name, entry);
        entry += suffix;
    };
    if (rule.kind == IdentityRule::Kind::wildcard) {
        constexpr std::string_view latest = "-latest";
        std::string_view base = rule.requested;
        if (base.ends_with(latest)) base.remove_suffix(latest.size());
        accept(rule.requested);
        for (std::string_view suffix : {"-YYYY-MM-DD", "-YYYYMMDD", "-MMDD"}) accept(base, suffix);
    } else {
        const std::size_t shown = std::min(rule.globs.size(), IdentityRefusal::max_accepted);
        for (std::size_t i = 0; i < shown; ++i) accept(rule.globs[i]);
        if (rule.globs.size() > shown)
            out.accepted.push_back("(" + std::to_string(rule.globs.size() - shown) + " more)");
    }

    std::string& m = out.message;
    switch (verdict) {
        case IdentityVerdict::foreign_model:
            m = "the upstream answered with model \"" + out.answered + "\", which this route does not accept";
            break;
        case IdentityVerdict::answer_before_model:
            m = "the upstream stream sent answer text before naming an accepted model";
            break;
        case IdentityVerdict::no_model: m = "the upstream answer never named its model"; break;
        case IdentityVerdict::not_an_object: m = "the upstream answered 200 with a body that is not a JSON object"; break;
        case IdentityVerdict::ok: m = "the upstream answer's model is accepted"; break;
    }
    m += " (accepted: ";
    for (std::size_t i = 0; i < out.accepted.size(); ++i) {
        if (i > 0) m += ", ";
        m += out.accepted[i];
    }
    m += ")";
}

bool StreamIdentity::accepted(std::string_view model) {
    if (model == last_accepted_) return true;
    if (!rule_->accepts(model)) return false;
    last_accepted_.assign(model);
    return true;
}

IdentityVerdict StreamIdentity::on_line(const DataInfo& line) {
    if (refused(verdict_)) return verdict_;

    const bool after_done = done_seen_;
    if (line.kind == DataKind::done && !after_done) {
        done_seen_ = true;  // the closing marker: neither error nor other line
        return verdict_;
    }
    const bool error_line = line.kind == DataKind::json && line.structured_error;
    if (!error_line || after_done) needs_identity_ = true;

    bool foreign = false;
    for (std::string_view model : line.models()) {
        if (model.empty()) continue;
        if (accepted(model)) {
            named_ = true;
        } else {
            if (!deferred_foreign_ && !foreign) bounded_name(model, foreign_);
            foreign = true;
        }
    }
    if (foreign) deferred_foreign_ = true;

    if (needs_identity_ && deferred_foreign_) {
        verdict_ = IdentityVerdict::foreign_model;
    } else if (line.answer_text && !named_) {
        verdict_ = IdentityVerdict::answer_before_model;
    }
    return verdict_;
}

IdentityVerdict StreamIdentity::finish() const {
    if (refused(verdict_)) return verdict_;
    if (needs_identity_ && !named_) return IdentityVerdict::no_model;
    return IdentityVerdict::ok;
}

void StreamIdentity::reset() {
    verdict_ = IdentityVerdict::ok;
    named_ = false;
    needs_identity_ = false;
    done_seen_ = false;
    deferred_foreign_ = false;
    last_accepted_.clear();
    foreign_.clear();
}

}  // namespace modelproxy::sse
