#include "request/digest.hpp"

#include <openssl/evp.h>

#include <algorithm>

namespace modelproxy::request {

namespace {

// One fetched SHA-256 and one context per thread, reused by every digest:
// a new context and the implicit fetch behind EVP_sha256() cost four heap
// allocations per turn; a reused one costs OpenSSL's one.
struct Sha256 {
    EVP_MD* fetched = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    Sha256() = default;
    Sha256(const Sha256&) = delete;
    Sha256& operator=(const Sha256&) = delete;
    ~Sha256() {
        EVP_MD_CTX_free(ctx);
        EVP_MD_free(fetched);
    }
    const EVP_MD* md() const { return fetched ? fetched : EVP_sha256(); }
};

}  // namespace

void payload_digest(std::string& out, std::string_view method, std::string_view target, std::string_view body) {
    thread_local Sha256 sha;
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    // A length-free separator cannot be forged by a target ending in "\n":
    // the method and target never contain a newline (the HTTP parser refuses it).
    // Method and target go in as one update when they fit a small buffer:
    // each EVP_DigestUpdate passes through the provider's dispatch.
    EVP_DigestInit_ex2(sha.ctx, sha.md(), nullptr);
    char line[512];
    if (method.size() + target.size() + 2 <= sizeof line) {
        char* p = std::copy(method.begin(), method.end(), line);
        *p++ = '\n';
        p = std::copy(target.begin(), target.end(), p);
        *p++ = '\n';
        EVP_DigestUpdate(sha.ctx, line, static_cast<std::size_t>(p - line));
    } else {
        EVP_DigestUpdate(sha.ctx, method.data(), method.size());
        EVP_DigestUpdate(sha.ctx, "\n", 1);
        EVP_DigestUpdate(sha.ctx, target.data(), target.size());
        EVP_DigestUpdate(sha.ctx, "\n", 1);
    }
    EVP_DigestUpdate(sha.ctx, body.data(), body.size());
    EVP_DigestFinal_ex(sha.ctx, md, &len);
    static constexpr char hex[] = "0123456789abcdef";
    char text[7 + 2 * EVP_MAX_MD_SIZE] = {'s', 'h', 'a', '2', '5', '6', ':'};
    for (unsigned i = 0; i < len; ++i) {
        text[7 + 2 * i] = hex[md[i] >> 4];
        text[8 + 2 * i] = hex[md[i] & 15];
    }
    out.assign(text, 7 + 2 * len);
}

std::string payload_digest(std::string_view method, std::string_view target, std::string_view body) {
    std::string out;
    out.reserve(7 + 2 * 32);
    payload_digest(out, method, target, body);
    return out;
}

bool replay_matches(std::string_view first_digest, std::string_view method, std::string_view target,
                    std::string_view body) {
    thread_local std::string digest;
    payload_digest(digest, method, target, body);
    return digest == first_digest;
}

}  // namespace modelproxy::request
