// The JSON strings the proxy writes itself: record values and the
// upstream_model rewrite of a request body.
#pragma once

#include <string>
#include <string_view>

namespace modelproxy::proxy {

// Appends `text` as a quoted JSON string. Boost.JSON's serializer does the
// escaping; text with nothing to escape (printable ASCII without `"` or `\`,
// nearly every value) is copied as is, without the serializer's set-up.
void append_json_string(std::string& out, std::string_view text);

}  // namespace modelproxy::proxy
