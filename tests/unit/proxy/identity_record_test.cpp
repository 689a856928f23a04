// The attempt record of a model_identity_mismatch names the model the
// upstream answered with and the names accepted (docs/behaviour.md section 9).
#include "proxy/records.hpp"

#include <boost/json/parse.hpp>
#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace modelproxy::proxy;

TEST_CASE("an identity refusal's attempt record carries answered_model and accepted_models", "[records]") {
    const std::vector<std::string> accepted = {"gpt-4o", "gpt-4o-YYYY-MM-DD", "say \"hi\""};
    AttemptRecord r;
    r.request_id = "req-1";
    r.status = 200;
    r.error_class = "identity";
    r.code = "model_identity_mismatch";
    r.decision = "terminal";
    r.answered_model = "gpt-4o-mini-2024-07-18";
    r.accepted_models = &accepted;
    const std::string line = to_json_line(r);
    CHECK(line.find('\n') == line.size() - 1);
    const auto o = boost::json::parse(line).as_object();
    CHECK(o.at("answered_model") == "gpt-4o-mini-2024-07-18");
    const auto& list = o.at("accepted_models").as_array();
    REQUIRE(list.size() == 3);
    CHECK(list[0] == "gpt-4o");
    CHECK(list[2] == "say \"hi\"");
    CHECK(o.size() == 18);  // section 10's fields, resume_offset and the two of a refusal

    r.answered_model = {};  // the upstream named no model
    const auto none = boost::json::parse(to_json_line(r)).as_object();
    CHECK(none.at("answered_model").is_null());
}

TEST_CASE("other attempt records leave the identity keys out", "[records]") {
    AttemptRecord r;
    r.request_id = "req-2";
    r.decision = "ok";
    const auto o = boost::json::parse(to_json_line(r)).as_object();
    CHECK_FALSE(o.contains("answered_model"));
    CHECK_FALSE(o.contains("accepted_models"));
}
