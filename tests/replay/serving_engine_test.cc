// The serving emulation on tiny workloads whose TTFTs and C are worked out by hand.
#include "serving_engine.h"

#include <gtest/gtest.h>

namespace tempo {
namespace {

// Hand-checkable GPU: prefill 1 ms per new token, a decode step 10 ms, retrieval at
// 1000 B/s (1 ms per byte).
struct FixedCosts final : StepCosts {
  TimeNs prefill_time(uint64_t new_tokens, uint64_t) const override {
    return static_cast<TimeNs>(new_tokens) * kNsPerMs;
  }
  TimeNs decode_step_time(uint64_t, uint64_t) const override { return 10 * kNsPerMs; }
  TimeNs retrieval_time(uint64_t bytes) const override {
    return static_cast<TimeNs>(bytes) * kNsPerMs;
  }
};

// Device: 1000 B/s staging in 2 slots, no latency, demand reads at 100 B/s; 10 KB fast
// tier, 5 KB budget.
SimStackConfig stack() {
  SimStackConfig c;
  c.device = SimDeviceConfig{10'000, 1000.0, 2, 0, 100.0, "lru"};
  c.provider = ProviderConfig{5000, 1000.0, 1000.0, 2 * kNsPerSec, 0};
  return c;
}

// A request at `arrival` with `chunks` cached chunks of 10 tokens and 100 B each, keys from
// `first_key`, plus 5 uncached tokens; `out` output tokens.
ReplayRequest request(uint64_t id, TimeNs arrival, uint64_t first_key, int chunks, uint32_t out) {
  ReplayRequest r;
  r.id = id;
  r.arrival = arrival;
  r.chunk_tokens = 10;
  r.prompt_tokens = 10 * static_cast<uint64_t>(chunks) + 5;
  for (int i = 0; i < chunks; ++i) r.prefix_chunks.push_back({first_key + i, 100});
  r.output_tokens = out;
  return r;
}

RunResult run(const ReplayWorkload& w, const char* policy, SimStackConfig s = stack()) {
  FixedCosts costs;
  return run_serving(w, s, EngineConfig{policy, 4, 128}, costs);
}

ReplayWorkload one_request() {
  ReplayWorkload w;
  w.requests.push_back(request(1, 0, 1, 5, 3));
  for (ObjectKey k = 1; k <= 5; ++k) w.preloaded.push_back({k, 100});
  return w;
}

TEST(ServingEngine, OneRequestUnderDemand) {
  const RunResult r = run(one_request(), "demand");
  const RequestRecord& q = r.requests.at(0);
  // Admitted at 0: commit, stage 500 B at 1000 B/s (ready 0.5 s), retrieve 500 B (0.5 s),
  // prefill 5 tokens (5 ms): first token at 1.005 s. Then two decode steps.
  EXPECT_EQ(q.path, RetrievalPath::kStaged);
  EXPECT_EQ(q.claim.ready, 500 * kNsPerMs);
  EXPECT_EQ(q.timing.first_token, 1005 * kNsPerMs);
  EXPECT_EQ(q.timing.finish, 1025 * kNsPerMs);
  EXPECT_EQ(q.timing.output_tokens, 3u);
  // 500 B protected from 0 until the transfer ends at 1.0 s: 500 B*s over one request.
  EXPECT_DOUBLE_EQ(r.summary.c_gib_s_per_req, 500.0 / double(1ull << 30));
  EXPECT_DOUBLE_EQ(r.summary.p95_ttft_s, 1.005);
}

TEST(ServingEngine, OneRequestUnderDaxL1ReadsThroughTheDemandPath) {
  const RunResult r = run(one_request(), "dax-l1");
  const RequestRecord& q = r.requests.at(0);
  // 500 B at the 100 B/s demand rate (5 s), then the copy (0.5 s) and prefill (5 ms).
  EXPECT_EQ(q.path, RetrievalPath::kDaxL1);
  EXPECT_EQ(q.timing.first_token, 5505 * kNsPerMs);
  EXPECT_EQ(r.summary.c_gib_s_per_req, 0);
  EXPECT_EQ(r.demand_bytes, 500u);
}

TEST(ServingEngine, ImmediateStagesAtArrivalSoWaitingRequestsFindKvReady) {
  ReplayWorkload w;
  // Request 1 has no cached prefix and 1000 uncached tokens (1 s of prefill); request 2
  // arrives at once, with 5 cached chunks behind it.
  ReplayRequest a;
  a.id = 1;
  a.prompt_tokens = 1000;
  a.output_tokens = 1;
  w.requests.push_back(a);
  ReplayRequest b = request(2, 0, 1, 5, 1);
  w.requests.push_back(b);
  for (ObjectKey k = 1; k <= 5; ++k) w.preloaded.push_back({k, 100});
  EngineConfig e{"immediate", 1, 128};
  FixedCosts costs;
  const RunResult r = run_serving(w, stack(), e, costs);
  // With one slot, request 2 is admitted at 1.0 s; its KV was staged by 0.5 s. Retrieval
  // 0.5 s and prefill 5 ms: first token at 1.505 s. Protected from 0 to 1.5 s.
  EXPECT_EQ(r.requests[1].timing.first_token, 1505 * kNsPerMs);
  EXPECT_EQ(r.requests[1].claim.committed, 0);
  EXPECT_DOUBLE_EQ(r.ledger_byte_seconds, 500.0 * 1.5);
}

TEST(ServingEngine, TempoCommitsJustInTimeBehindARunningRequest) {
  ReplayWorkload w;
  ReplayRequest a;
  a.id = 1;
  a.prompt_tokens = 1000;
  a.output_tokens = 1;
  w.requests.push_back(a);
  w.requests.push_back(request(2, 0, 1, 5, 1));
  for (ObjectKey k = 1; k <= 5; ++k) w.preloaded.push_back({k, 100});
  FixedCosts costs;
  // A generation limit of 1 lets the estimator know request 1 ends with its prefill.
  const RunResult r = run_serving(w, stack(), EngineConfig{"tempo", 1, 1}, costs);
  // TTU of request 2: 1 s (request 1's prefill); TTR 0.5 s: commit at 0.5 s on the 50 ms
  // tick, ready at 1.0 s, exactly when the slot frees: the same first token as immediate
  // at a third of the protected byte-time.
  EXPECT_EQ(r.requests[1].claim.committed, 500 * kNsPerMs);
  EXPECT_EQ(r.requests[1].claim.ready, 1000 * kNsPerMs);
  EXPECT_EQ(r.requests[1].timing.first_token, 1505 * kNsPerMs);
  EXPECT_DOUBLE_EQ(r.ledger_byte_seconds, 500.0 * 1.0);
}

TEST(ServingEngine, TwoRequestsSharingAPrefixStageItOnce) {
  ReplayWorkload w;
  w.requests.push_back(request(1, 0, 1, 5, 1));
  w.requests.push_back(request(2, 0, 1, 5, 1));
  for (ObjectKey k = 1; k <= 5; ++k) w.preloaded.push_back({k, 100});
  const RunResult r = run(w, "immediate");
  // Both admitted at 0 (4 slots); one staging of 500 B serves both (ready at 0.5 s). The
  // GPU then retrieves and prefills them one after the other.
  EXPECT_EQ(r.staged_bytes, 500u);
  EXPECT_EQ(r.requests[0].timing.first_token, 1005 * kNsPerMs);
  EXPECT_EQ(r.requests[1].timing.first_token, 1510 * kNsPerMs);
  // 500 B protected from 0 to the end of the second transfer at 1.505 s.
  EXPECT_DOUBLE_EQ(r.ledger_byte_seconds, 500.0 * 1.505);
}

TEST(ServingEngine, CapacityStarvedClaimTakesTheOrdinaryPath) {
  SimStackConfig s = stack();
  s.provider.budget_bytes = 400;  // the 500 B claim can never be protected
  const RunResult r = run(one_request(), "tempo", s);
  const RequestRecord& q = r.requests.at(0);
  EXPECT_EQ(q.path, RetrievalPath::kOrdinary);
  EXPECT_EQ(r.ordinary_claims, 1u);
  // Demand reads at 100 B/s: 5 s, then copy and prefill.
  EXPECT_EQ(q.timing.first_token, 5505 * kNsPerMs);
  EXPECT_EQ(r.summary.c_gib_s_per_req, 0);
  EXPECT_GE(r.capacity_deferrals, 1u);
}

TEST(ServingEngine, AdmissionWaitsForGpuKvMemory) {
  // Two requests at 0 without cached KV, 5 prompt tokens and 3 output tokens each: 8 KV
  // tokens apiece, and room for 10. The second waits for the first to finish: prefill
  // (5 ms), two decode steps (10 ms each), done at 25 ms; then its own prefill, 30 ms.
  ReplayWorkload w;
  w.requests.push_back(request(1, 0, 1, 0, 3));
  w.requests.push_back(request(2, 0, 1, 0, 3));
  FixedCosts costs;
  EngineConfig e{"demand", 4, 128};
  const RunResult free_memory = run_serving(w, stack(), e, costs);
  EXPECT_EQ(free_memory.requests.at(1).timing.first_token, 10 * kNsPerMs);  // both at once
  e.kv_capacity_tokens = 10;
  const RunResult r = run_serving(w, stack(), e, costs);
  EXPECT_EQ(r.requests.at(0).timing.finish, 25 * kNsPerMs);
  EXPECT_EQ(r.requests.at(1).admitted, 25 * kNsPerMs);
  EXPECT_EQ(r.requests.at(1).timing.first_token, 30 * kNsPerMs);
  EXPECT_EQ(r.rejected, 0u);
}

TEST(ServingEngine, OverLongRequestsAreRejectedAndCounted) {
  // 15 prompt tokens + 3 output do not fit a 16-token context; 5 + 3 do.
  ReplayWorkload w = one_request();
  w.requests.at(0).prefix_chunks.resize(1);
  w.requests.at(0).prompt_tokens = 15;
  w.requests.push_back(request(2, 0, 9, 0, 3));
  FixedCosts costs;
  EngineConfig e{"tempo", 4, 128};
  e.max_context_tokens = 16;
  const RunResult r = run_serving(w, stack(), e, costs);
  EXPECT_EQ(r.rejected, 1u);
  EXPECT_EQ(r.requests.at(0).path, RetrievalPath::kRejected);
  EXPECT_EQ(r.requests.at(0).timing.first_token, -1);
  EXPECT_EQ(r.summary.completed, 1u);
  EXPECT_EQ(r.requests.at(1).timing.first_token, 5 * kNsPerMs);
  // Larger than the whole GPU KV memory: never admissible, rejected the same way.
  e.max_context_tokens = 0;
  e.kv_capacity_tokens = 12;
  EXPECT_EQ(run_serving(w, stack(), e, costs).rejected, 1u);
}

TEST(ServingEngine, UnknownPolicyIsAnError) {
  EXPECT_THROW(run(one_request(), "sometimes"), std::invalid_argument);
}

}  // namespace
}  // namespace tempo
