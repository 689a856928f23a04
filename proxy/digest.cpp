#include "proxy/digest.hpp"

#include <openssl/evp.h>

#include <memory>

namespace modelproxy::proxy {

std::string payload_digest(std::string_view method, std::string_view target, std::string_view body) {
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    // A length-free separator cannot be forged by a target ending in "\n":
    // the method and target never contain a newline (the HTTP parser refuses it).
    EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
    EVP_DigestUpdate(ctx.get(), method.data(), method.size());
    EVP_DigestUpdate(ctx.get(), "\n", 1);
    EVP_DigestUpdate(ctx.get(), target.data(), target.size());
    EVP_DigestUpdate(ctx.get(), "\n", 1);
    EVP_DigestUpdate(ctx.get(), body.data(), body.size());
    EVP_DigestFinal_ex(ctx.get(), md, &len);
    static constexpr char hex[] = "0123456789abcdef";
    std::string out = "sha256:";
    out.reserve(7 + 2 * len);
    for (unsigned i = 0; i < len; ++i) {
        out.push_back(hex[md[i] >> 4]);
        out.push_back(hex[md[i] & 15]);
    }
    return out;
}

bool replay_matches(std::string_view first_digest, std::string_view method, std::string_view target,
                    std::string_view body) {
    return payload_digest(method, target, body) == first_digest;
}

}  // namespace modelproxy::proxy
