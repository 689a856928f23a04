#include "support/test_ca.hpp"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <stdexcept>

namespace modelproxy::test {

namespace {

struct KeyFree {
    void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct CertFree {
    void operator()(X509* c) const { X509_free(c); }
};
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyFree>;
using CertPtr = std::unique_ptr<X509, CertFree>;

[[noreturn]] void fail(const std::string& what) {
    std::string detail;
    while (unsigned long e = ERR_get_error()) {
        char buf[256];
        ERR_error_string_n(e, buf, sizeof buf);
        detail += std::string(detail.empty() ? "" : "; ") + buf;
    }
    throw std::runtime_error("TestCa: " + what + (detail.empty() ? "" : ": " + detail));
}

KeyPtr make_key() {
    KeyPtr key(EVP_EC_gen("P-256"));
    if (!key) fail("EC P-256 key generation failed");
    return key;
}

void add_ext(X509* cert, X509V3_CTX* ctx, int nid, const std::string& value) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, ctx, nid, value.c_str());
    if (!ext) fail("extension " + std::string(OBJ_nid2sn(nid)) + "=" + value);
    const int ok = X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
    if (!ok) fail("X509_add_ext");
}

void set_random_serial(X509* cert) {
    unsigned char bytes[16];
    if (RAND_bytes(bytes, sizeof bytes) != 1) fail("RAND_bytes");
    bytes[0] &= 0x7f;  // positive
    BIGNUM* bn = BN_bin2bn(bytes, sizeof bytes, nullptr);
    const bool ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert));
    BN_free(bn);
    if (!ok) fail("serial number");
}

struct Validity {
    long from_seconds;  // relative to now
    long to_seconds;
};

// A certificate for `key`'s public half, signed by issuer_key. A null
// `issuer` makes it self-signed (the CA).
CertPtr make_cert(const std::string& common_name, EVP_PKEY* key, X509* issuer, EVP_PKEY* issuer_key,
                  Validity validity, const std::vector<std::pair<int, std::string>>& extensions) {
    CertPtr cert(X509_new());
    if (!cert || !X509_set_version(cert.get(), X509_VERSION_3)) fail("X509_new");
    set_random_serial(cert.get());
    X509_gmtime_adj(X509_getm_notBefore(cert.get()), validity.from_seconds);
    X509_gmtime_adj(X509_getm_notAfter(cert.get()), validity.to_seconds);
    if (!X509_set_pubkey(cert.get(), key)) fail("X509_set_pubkey");
    X509_NAME* name = X509_get_subject_name(cert.get());
    if (!X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8,
                                    reinterpret_cast<const unsigned char*>("modelproxy tests"), -1, -1, 0) ||
        !X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                    reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1, 0))
        fail("subject name");
    if (!X509_set_issuer_name(cert.get(), issuer ? X509_get_subject_name(issuer) : name)) fail("issuer name");
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer ? issuer : cert.get(), cert.get(), nullptr, nullptr, 0);
    for (const auto& [nid, value] : extensions) add_ext(cert.get(), &ctx, nid, value);
    if (X509_sign(cert.get(), issuer_key, EVP_sha256()) <= 0) fail("X509_sign");
    return cert;
}

std::string to_pem(X509* cert) {
    BIO* bio = BIO_new(BIO_s_mem());
    if (!bio || !PEM_write_bio_X509(bio, cert)) fail("PEM_write_bio_X509");
    char* data = nullptr;
    const long n = BIO_get_mem_data(bio, &data);
    std::string out(data, static_cast<std::size_t>(n));
    BIO_free(bio);
    return out;
}

std::string to_pem(EVP_PKEY* key) {
    BIO* bio = BIO_new(BIO_s_mem());
    if (!bio || !PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr))
        fail("PEM_write_bio_PrivateKey");
    char* data = nullptr;
    const long n = BIO_get_mem_data(bio, &data);
    std::string out(data, static_cast<std::size_t>(n));
    BIO_free(bio);
    return out;
}

std::string join_sans(const std::vector<std::string>& sans) {
    std::string out;
    for (const auto& s : sans) out += (out.empty() ? "" : ",") + s;
    return out;
}

}  // namespace

struct TestCa::Impl {
    TempDir dir{"ca"};
    KeyPtr key;
    CertPtr cert;
    std::string cert_pem;
    CertFiles files;
    int issued = 0;
};

TestCa::TestCa(std::string common_name) : impl_(std::make_unique<Impl>()) {
    impl_->key = make_key();
    impl_->cert = make_cert(common_name, impl_->key.get(), nullptr, impl_->key.get(), {-3600, 30L * 86400},
                            {{NID_basic_constraints, "critical,CA:TRUE"},
                             {NID_key_usage, "critical,keyCertSign,cRLSign"},
                             {NID_subject_key_identifier, "hash"}});
    impl_->cert_pem = to_pem(impl_->cert.get());
    impl_->files.cert = impl_->dir.write("ca.pem", impl_->cert_pem);
    impl_->files.key = impl_->dir.write("ca-key.pem", to_pem(impl_->key.get()));
}

TestCa::~TestCa() = default;

const std::filesystem::path& TestCa::cert_file() const { return impl_->files.cert; }
const std::filesystem::path& TestCa::key_file() const { return impl_->files.key; }
std::string TestCa::cert_pem() const { return impl_->cert_pem; }

CertFiles TestCa::issue(const Leaf& leaf) {
    KeyPtr key = make_key();
    std::vector<std::pair<int, std::string>> extensions{
        {NID_basic_constraints, "critical,CA:FALSE"},
        {NID_key_usage, "critical,digitalSignature"},
        {NID_ext_key_usage, leaf.client ? "clientAuth" : "serverAuth"},
        {NID_subject_key_identifier, "hash"},
        {NID_authority_key_identifier, "keyid:always"},
    };
    if (!leaf.sans.empty()) extensions.push_back({NID_subject_alt_name, join_sans(leaf.sans)});
    const Validity validity = leaf.expired ? Validity{-2 * 86400, -86400} : Validity{-3600, leaf.valid_for_seconds};
    CertPtr cert = make_cert(leaf.common_name, key.get(), impl_->cert.get(), impl_->key.get(), validity, extensions);
    const std::string stem = "leaf" + std::to_string(++impl_->issued);
    CertFiles out;
    out.cert = impl_->dir.write(stem + ".pem", to_pem(cert.get()));
    out.key = impl_->dir.write(stem + "-key.pem", to_pem(key.get()));
    return out;
}

CertFiles TestCa::issue_server(std::vector<std::string> sans) {
    Leaf leaf;
    leaf.sans = std::move(sans);
    return issue(leaf);
}

CertFiles TestCa::issue_client(std::string common_name) {
    Leaf leaf;
    leaf.common_name = std::move(common_name);
    leaf.sans = {};
    leaf.client = true;
    return issue(leaf);
}

}  // namespace modelproxy::test
