#include "soak/registry.hpp"

namespace modelproxy::soak {

void Registry::open(const TurnPlan& plan) {
    std::lock_guard lock(mu_);
    turns_[plan.turn] = Open{plan, {}};
}

UpstreamCount Registry::close(std::uint64_t turn) {
    std::lock_guard lock(mu_);
    const auto it = turns_.find(turn);
    if (it == turns_.end()) return {};
    const UpstreamCount count = it->second.count;
    turns_.erase(it);
    return count;
}

test::Script Registry::respond(const test::RequestRecord& request) {
    std::uint64_t turn = 0;
    TurnPlan plan;
    int n = 0;
    {
        std::lock_guard lock(mu_);
        const auto it = parse_turn_id(request.body, turn) ? turns_.find(turn) : turns_.end();
        if (it == turns_.end()) {
            ++orphans_;
            return test::Script::json(500, R"({"error":{"message":"soak: no open turn","type":"server_error","code":500}})");
        }
        plan = it->second.plan;
        n = ++it->second.count.requests;
    }
    const std::string id = turn_id(turn);
    const bool faulty = plan.fault && (!plan.fault->transient || n <= plan.k);
    if (faulty) {
        test::Script script = plan.fault->script(id, turn, plan.stream, n);
        // A failure before any response byte on a reused connection is re-sent
        // at once on a new one and is not an attempt (docs/behaviour.md section 4).
        const auto& steps = script.steps();
        const bool before_any_byte = !steps.empty() && (steps.front().kind == test::Step::Kind::reset ||
                                                        steps.front().kind == test::Step::Kind::close);
        if (before_any_byte && request.connection_request > 1) {
            std::lock_guard lock(mu_);
            if (const auto it = turns_.find(turn); it != turns_.end()) ++it->second.count.free;
            ++free_;
        }
        return script;
    }
    if (crosstalk_self_test_ && !plan.fault && !plan.stream && turn > 20 && !injected_.exchange(true)) {
        // Another turn's id in the answer text only: the identity stays this
        // turn's, so the proxy's boundary passes it and the soak must see it.
        std::string body = success_json(id, turn);
        const std::string text = "answer for " + id;
        body.replace(body.find(text), text.size(), "answer for " + turn_id(turn - 1));
        return test::Script::json(200, body);
    }
    return success_script(id, turn, plan.stream);
}

}  // namespace modelproxy::soak
