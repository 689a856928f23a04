// The request layer (request/) as proxy/ uses it: its headers, and its names
// usable unqualified in namespace proxy, where the sessions, the turn and the
// relay all apply its rules and write its answers. An alias header, as
// Beast's examples have for namespaces; request/ knows nothing of proxy/.
#pragma once

#include "request/admission.hpp"
#include "request/body.hpp"
#include "request/client_auth.hpp"
#include "request/digest.hpp"
#include "request/head.hpp"
#include "request/headers.hpp"
#include "request/json_body.hpp"
#include "request/local_answers.hpp"
#include "request/routing.hpp"
#include "request/target.hpp"

namespace modelproxy::proxy {

using namespace modelproxy::request;

}  // namespace modelproxy::proxy
