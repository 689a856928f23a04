// docs/behaviour.md section 16: the pieces of a one-choice stream's lines,
// the published answer, the seam search and the rewrite of the lines that
// follow it. One simdjson On-Demand walk serves reading and rewriting
// (sse/resume_walk.hpp): a rewrite copies every string and number as its raw
// JSON token (numbers and escapes as the provider wrote them; keys
// re-escaped, whitespace between tokens dropped) but for the values it
// replaces, so a forwarded line changes only where section 16 says. The walk
// visits and validates every value: a line that is not one JSON object reads
// as not JSON (json false), so it is never published as answer text nor goes
// out rewritten into something else.
#include "sse/resume.hpp"

#include "sse/resume_walk.hpp"

#include <algorithm>

namespace modelproxy::sse {

std::uint64_t code_points(std::string_view utf8) {
    std::uint64_t n = 0;
    for (const char c : utf8)
        if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
    return n;
}


ResumeReader::ResumeReader() : impl_(std::make_unique<Impl>()) {}
ResumeReader::~ResumeReader() = default;

const ResumeLine& ResumeReader::read(std::string_view data, policy::Endpoint endpoint) {
    Impl::Walk w(*impl_, endpoint);
    if (impl_->walk(data, w) != SUCCESS) {
        impl_->line.json = false;
        impl_->line.pieces.clear();
    }
    return impl_->line;
}

bool ResumeReader::rewrite(std::string_view data, policy::Endpoint endpoint, const LineCut& cut,
                           const ResumeIds& ids, std::string& out) {
    // A read first: which tool calls the client has, how many logprobs
    // tokens start in the published text.
    Impl::Walk first(*impl_, endpoint);
    if (impl_->walk(data, first) != SUCCESS) return false;
    Impl::Walk w(*impl_, endpoint);
    w.cut = cut;
    w.ids = &ids;
    const auto& pieces = impl_->line.pieces;
    if (cut.any()) {
        w.entry_published.assign(first.entries, 0);
        std::size_t dropped[3] = {0, 0, 0};  // content/text, refusal bytes the client has
        for (std::size_t p = 0; p < pieces.size() && p <= cut.published; ++p) {
            const ResumePiece& piece = pieces[p];
            const std::size_t bytes = p < cut.published ? piece.text.size() : std::min(cut.cut_bytes, piece.text.size());
            if (piece.kind == Kind::name && p < cut.published && impl_->piece_entry[p] >= 0)
                w.entry_published[static_cast<std::size_t>(impl_->piece_entry[p])] = 1;
            if (piece.kind != Kind::text) continue;
            if (piece.field == Field::content) dropped[0] += bytes;
            if (piece.field == Field::refusal) dropped[1] += bytes;
            if (piece.field == Field::text) dropped[2] += bytes;
        }
        for (int i = 0; i < static_cast<int>(Lp::count); ++i) {
            // The entries of tokens that start in the published text.
            std::size_t start = 0, k = 0;
            for (const std::size_t len : impl_->token_bytes[i]) {
                if (start >= dropped[i]) break;
                start += len;
                ++k;
            }
            w.skip[i] = k;
        }
    }
    const std::size_t size = out.size();
    w.out = &out;
    if (impl_->walk(data, w) != SUCCESS) {
        out.resize(size);
        return false;
    }
    return true;
}

void PublishedAnswer::clear() {
    runs_.clear();
    code_points_ = 0;
    one_choice_ = true;
    ids_ = {};
}

void PublishedAnswer::add(const ResumeLine& line) {
    if (!line.one_choice) one_choice_ = false;
    if (!line.id.empty()) ids_.id.assign(line.id);
    if (!line.created.empty()) ids_.created.assign(line.created);
    if (!line.system_fingerprint.empty()) ids_.system_fingerprint.assign(line.system_fingerprint);
    for (const ResumePiece& p : line.pieces) {
        if (p.kind == Kind::text) {
            code_points_ += sse::code_points(p.text);
            if (!runs_.empty()) {
                Run& last = runs_.back();
                if (last.kind == Kind::text && last.field == p.field && last.index == p.index && last.sub == p.sub) {
                    last.text.append(p.text);
                    continue;
                }
            }
        }
        runs_.push_back(Run{p.kind, p.field, p.index, p.sub, std::string(p.text)});
    }
}

bool Seam::reached() const { return !diverged_ && run_ >= published_->runs().size(); }

Seam::Verdict Seam::judge(const ResumeLine& line) {
    using Step = Seam::Step;
    if (diverged_) return {Step::diverged, {}};
    const auto& runs = published_->runs();
    if (reached()) return {Step::forward, {}};
    const auto diverge = [&] {
        diverged_ = true;
        return Verdict{Step::diverged, {}};
    };
    if (!line.one_choice) return diverge();
    for (std::size_t i = 0; i < line.pieces.size(); ++i) {
        if (run_ >= runs.size()) return {Step::cut, LineCut{i, 0}};
        const ResumePiece& piece = line.pieces[i];
        const PublishedAnswer::Run& r = runs[run_];
        if (piece.kind != r.kind || piece.field != r.field || piece.index != r.index || piece.sub != r.sub)
            return diverge();
        if (piece.kind != Kind::text) {
            if (offset_ != 0 || piece.text != r.text) return diverge();
            ++run_;
            continue;
        }
        const std::string_view remaining = std::string_view(r.text).substr(offset_);
        if (piece.text.size() <= remaining.size()) {
            if (remaining.compare(0, piece.text.size(), piece.text) != 0) return diverge();
            offset_ += piece.text.size();
            if (offset_ == r.text.size()) {
                ++run_;
                offset_ = 0;
            }
            continue;
        }
        // The piece runs past what the client has of this text: the seam is
        // inside it, when this was the last published run.
        if (piece.text.compare(0, remaining.size(), remaining) != 0 || run_ + 1 != runs.size()) return diverge();
        ++run_;
        offset_ = 0;
        return {Step::cut, LineCut{i, remaining.size()}};
    }
    return {Step::drop, {}};
}

}  // namespace modelproxy::sse
