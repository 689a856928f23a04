// The provider side of the soak: the turns in flight, and the responder that
// ties each upstream request to its turn by the id in the request body, so a
// fault script reaches exactly the turn it was drawn for however the proxy
// interleaves requests. Thread-safe: clients open and close turns, the
// FakeProvider's thread calls respond().
#pragma once

#include "soak/check.hpp"
#include "soak/faults.hpp"
#include "support/fake_provider.hpp"

#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace modelproxy::soak {

struct TurnPlan {
    std::uint64_t turn = 0;
    bool stream = false;
    const FaultCase* fault = nullptr;  // null: no fault
    int k = 0;                         // faulty requests of a transient case
};

class Registry {
public:
    // `crosstalk_self_test`: answer one fault-free non-stream turn with
    // another turn's success bytes, a deliberate mistake the soak must catch.
    explicit Registry(bool crosstalk_self_test) : crosstalk_self_test_(crosstalk_self_test) {}

    void open(const TurnPlan& plan);
    // Forgets the turn; returns what the provider saw of it.
    UpstreamCount close(std::uint64_t turn);
    test::Script respond(const test::RequestRecord& request);

    // Requests for no open turn (after their turn was answered, or without an
    // id): each one is a proxy fault (a replay after the answer, or a foreign body).
    std::uint64_t orphans() const { return orphans_.load(); }
    // Failures before a response byte on a reused connection (free resends).
    std::uint64_t free_resends() const { return free_.load(); }
    bool crosstalk_injected() const { return injected_.load(); }

private:
    struct Open {
        TurnPlan plan;
        UpstreamCount count;
    };
    mutable std::mutex mu_;
    std::unordered_map<std::uint64_t, Open> turns_;
    std::atomic<std::uint64_t> orphans_{0};
    std::atomic<std::uint64_t> free_{0};
    const bool crosstalk_self_test_;
    std::atomic<bool> injected_{false};
};

}  // namespace modelproxy::soak
