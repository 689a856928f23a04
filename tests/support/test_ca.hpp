// A certificate authority made at test time with the OpenSSL 3 API (EC P-256
// keys, SHA-256 signatures), and leaf certificates it signs, written as PEM
// files into the CA's own temporary directory (removed with the object).
// Two TestCa objects are unrelated: a chain from one never verifies
// against the other.
#pragma once

#include "support/temp_dir.hpp"

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace modelproxy::test {

struct CertFiles {
    std::filesystem::path cert;  // PEM certificate (the leaf only)
    std::filesystem::path key;   // PEM private key (PKCS#8, unencrypted)
};

class TestCa {
public:
    struct Leaf {
        std::string common_name = "localhost";
        // subjectAltName entries in OpenSSL's syntax.
        std::vector<std::string> sans = {"DNS:localhost", "IP:127.0.0.1"};
        bool client = false;   // extendedKeyUsage clientAuth instead of serverAuth
        bool expired = false;  // valid from 2 days ago to 1 day ago
        long valid_for_seconds = 7L * 86400;  // from now, when not expired
    };

    // Throws std::runtime_error with OpenSSL's error text on failure.
    explicit TestCa(std::string common_name = "modelproxy test CA");
    ~TestCa();
    TestCa(const TestCa&) = delete;
    TestCa& operator=(const TestCa&) = delete;

    const std::filesystem::path& cert_file() const;  // the CA certificate (a trust root)
    const std::filesystem::path& key_file() const;
    std::string cert_pem() const;

    CertFiles issue(const Leaf& leaf);
    // A server certificate for localhost / 127.0.0.1 (or the given SANs).
    CertFiles issue_server(std::vector<std::string> sans = {"DNS:localhost", "IP:127.0.0.1"});
    // A client certificate (clientAuth) with the given common name.
    CertFiles issue_client(std::string common_name);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace modelproxy::test
