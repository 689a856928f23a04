// Content codings for scripted upstream bodies (docs/behaviour.md section 4: a gzip or
// deflate response is decoded by the proxy). zlib, one shot.
#pragma once

#include <string>
#include <string_view>

namespace modelproxy::test {

std::string gzip_compress(std::string_view data);     // Content-Encoding: gzip
std::string deflate_compress(std::string_view data);  // Content-Encoding: deflate (zlib format, RFC 9110)
// Decodes gzip or zlib data (auto-detected); throws std::runtime_error when invalid.
std::string decompress(std::string_view data);

}  // namespace modelproxy::test
