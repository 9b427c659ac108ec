// The serving emulation on tiny workloads whose TTFTs and C are worked out by hand.
#include "serving_engine.h"

#include <gtest/gtest.h>

#include <random>

#include "router.h"
#include "same_requests.h"
#include "serving_stack.h"

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
  r.first_chunk = first_key;
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

// Request 1: no cached prefix, 1000 uncached tokens (1 s of prefill) and `first_output`
// tokens out, at 0; request 2 at `second_arrival` with 5 cached chunks (500 B) and 1 token.
ReplayWorkload behind_a_long_prefill(uint32_t first_output, TimeNs second_arrival) {
  ReplayWorkload w;
  ReplayRequest a;
  a.id = 1;
  a.prompt_tokens = 1000;
  a.output_tokens = first_output;
  w.requests.push_back(a);
  w.requests.push_back(request(2, second_arrival, 1, 5, 1));
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
  // Request 2 arrives with request 1, whose prefill takes 1 s.
  const ReplayWorkload w = behind_a_long_prefill(1, 0);
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
  const ReplayWorkload w = behind_a_long_prefill(1, 0);
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

// A request arriving while the GPU prefills another is projected from the end of that
// prefill, not from its start.
TEST(ServingEngine, ARequestArrivingMidPrefillIsProjectedFromThePrefillsEnd) {
  const ReplayWorkload w = behind_a_long_prefill(1, 700 * kNsPerMs);
  FixedCosts costs;
  const RunResult r = run_serving(w, stack(), EngineConfig{"tempo", 1, 1}, costs);
  // At 0.7 s the prefill has 0.3 s to go: TTU 0.3 s under the 0.5 s TTR, so the claim
  // commits on arrival and is ready at 1.2 s (projected from the prefill's start, TTU 1 s,
  // it would have waited for admission at 1.0 s and been ready at 1.5 s).
  EXPECT_EQ(r.requests[1].claim.committed, 700 * kNsPerMs);
  EXPECT_EQ(r.requests[1].claim.ready, 1200 * kNsPerMs);
  EXPECT_EQ(r.requests[1].timing.first_token, 1705 * kNsPerMs);
}

// With the true output lengths (tempo-replay --known-outputs) the estimator knows when the
// running request ends; from the history alone (empty here) it runs to the limit.
TEST(ServingEngine, KnownOutputsGiveTheTrueTtu) {
  // Request 1's prefill (1 s) and 4 decode steps: its slot frees at 1.04 s.
  const ReplayWorkload w = behind_a_long_prefill(5, 0);
  FixedCosts costs;
  EngineConfig e{"tempo", 1, 128};
  const RunResult guessed = run_serving(w, stack(), e, costs);
  // TTU projected to 128 tokens: not committed before admission at 1.04 s, ready 0.5 s later.
  EXPECT_EQ(guessed.requests[1].claim.committed, 1040 * kNsPerMs);
  EXPECT_EQ(guessed.requests[1].timing.first_token, 2045 * kNsPerMs);
  e.known_outputs = true;
  const RunResult known = run_serving(w, stack(), e, costs);
  // TTU 1.04 s, TTR 0.5 s: committed at 0.54 s (between ticks), ready as the slot frees.
  EXPECT_EQ(known.requests[1].claim.committed, 540 * kNsPerMs);
  EXPECT_EQ(known.requests[1].claim.ready, 1040 * kNsPerMs);
  EXPECT_EQ(known.requests[1].timing.first_token, 1545 * kNsPerMs);
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

// Layer-wise loading: one request with four cached chunks of 100 B and 400 uncached tokens
// (prefill 0.4 s), in four layer groups (each chunk four 25 B objects, a group 100 B and
// 0.1 s of prefill).
ReplayWorkload layered_request() {
  ReplayWorkload w;
  ReplayRequest r = request(1, 0, 1, 4, 1);
  r.prompt_tokens = 440;
  w.requests.push_back(r);
  for (ObjectKey k = 1; k <= 4; ++k) w.preloaded.push_back({k, 100});
  return w;
}

RunResult run_layered(LayerWise mode, const char* policy = "demand") {
  FixedCosts costs;
  EngineConfig e{policy, 4, 1};
  e.layer_wise = mode;
  e.layer_groups = 4;
  return run_serving(layered_request(), stack(), e, costs);
}

TEST(ServingEngine, LayerWisePrefillStartsBeforeTheLastGroupLands) {
  // Whole-claim readiness: 400 B on two slots at 1000 B/s, ready at 0.4 s; the copy (0.4 s)
  // then the prefill (0.4 s): first token at 1.2 s; 400 B protected until 0.8 s.
  const RunResult off = run_layered(LayerWise::kOff);
  EXPECT_EQ(off.requests[0].kv_available, 400 * kNsPerMs);
  EXPECT_EQ(off.requests[0].timing.first_token, 1200 * kNsPerMs);
  EXPECT_DOUBLE_EQ(off.ledger_byte_seconds, 400.0 * 0.8);
  // Layer-wise, one claim, manifest group by group: pairs of 25 B objects land 50 ms
  // apart, group g complete at (g + 1) x 0.1 s. Group 0 is ready at 0.1 s: its copy to
  // 0.2 s, its prefill to 0.3 s, while groups 1-3 still land; group 1 (ready 0.2 s) copied
  // to 0.4 s, prefilled to 0.5 s; group 2 to 0.6 and 0.7 s; group 3 (ready at 0.4 s, the
  // claim's readiness) copied from 0.7 s to 0.8 s, prefilled to 0.9 s: the first token
  // 0.3 s earlier, at the same protected byte-time (400 B until the transfer ends at 0.8 s).
  const RunResult whole = run_layered(LayerWise::kWhole);
  const RequestRecord& q = whole.requests[0];
  EXPECT_EQ(q.path, RetrievalPath::kStaged);
  EXPECT_EQ(q.kv_available, 100 * kNsPerMs);  // group 0
  EXPECT_EQ(q.retrieval_start, 100 * kNsPerMs);
  EXPECT_EQ(q.claim.ready, 400 * kNsPerMs);  // the last group
  EXPECT_EQ(q.claim.transfer_begin, 700 * kNsPerMs);
  EXPECT_EQ(q.retrieval_end, 800 * kNsPerMs);
  EXPECT_EQ(q.timing.first_token, 900 * kNsPerMs);
  EXPECT_DOUBLE_EQ(whole.ledger_byte_seconds, 400.0 * 0.8);
  EXPECT_EQ(whole.staged_bytes, 400u);
  // One claim per group: the same times, but group g's 100 B are released when its own
  // copy ends, at (g + 1) x 0.2 s: 100 B x (0.2 + 0.4 + 0.6 + 0.8) s.
  const RunResult per_group = run_layered(LayerWise::kPerGroup);
  EXPECT_EQ(per_group.requests[0].timing.first_token, 900 * kNsPerMs);
  EXPECT_DOUBLE_EQ(per_group.ledger_byte_seconds, 100.0 * (0.2 + 0.4 + 0.6 + 0.8));
  // Under demand a layer-wise claim commits at admission all the same.
  EXPECT_EQ(run_layered(LayerWise::kLead).requests[0].timing.first_token, 900 * kNsPerMs);
}

// Behind a request whose prefill takes 1 s (one slot), the layer-wise request's TTU is
// 1 s. Committed whole, its claim (TTR 0.4 s) commits at 0.6 s; by its lead TTR, max over
// groups of ((g + 1) x 0.1 - g x 0.1 s of prefill) = 0.1 s, at 0.9 s on the 50 ms tick,
// 0.3 s less protection, and its groups still land in time: the same first token.
TEST(ServingEngine, ALeadCommitProtectsLessForTheSameFirstToken) {
  auto run_behind = [](LayerWise mode) {
    ReplayWorkload w = layered_request();
    ReplayRequest a;
    a.id = 0;
    a.prompt_tokens = 1000;
    a.output_tokens = 1;
    w.requests.insert(w.requests.begin(), a);
    FixedCosts costs;
    EngineConfig e{"tempo", 1, 1};
    e.layer_wise = mode;
    e.layer_groups = 4;
    return run_serving(w, stack(), e, costs);
  };
  const RunResult whole = run_behind(LayerWise::kWhole);
  const RunResult lead = run_behind(LayerWise::kLead);
  EXPECT_EQ(whole.requests[1].claim.committed, 600 * kNsPerMs);
  EXPECT_EQ(lead.requests[1].claim.committed, 900 * kNsPerMs);
  // Admitted at 1.0 s, group g copied from 1.0 + g x 0.2 s: the last copy ends at 1.7 s,
  // the first token at 1.8 s; 400 B protected from the commit to 1.7 s.
  EXPECT_EQ(whole.requests[1].timing.first_token, 1800 * kNsPerMs);
  EXPECT_EQ(lead.requests[1].timing.first_token, 1800 * kNsPerMs);
  EXPECT_EQ(lead.requests[1].claim.ready, 1300 * kNsPerMs);  // group 3, needed at 1.6 s
  EXPECT_DOUBLE_EQ(whole.ledger_byte_seconds, 400.0 * 1.1);
  EXPECT_DOUBLE_EQ(lead.ledger_byte_seconds, 400.0 * 0.8);
}

TEST(ServingEngine, LayerWiseOptionsAreChecked) {
  for (const char* name : {"off", "whole", "lead", "per-group"})
    EXPECT_EQ(layer_wise_name(*parse_layer_wise(name)), name);
  EXPECT_FALSE(parse_layer_wise("per_group"));
  const std::vector<KvObject> parts = layer_group_objects({7, 10}, 4);
  ASSERT_EQ(parts.size(), 4u);
  EXPECT_EQ(parts[0].bytes + parts[1].bytes + parts[2].bytes + parts[3].bytes, 10u);
  EXPECT_EQ(parts[0].bytes, 3u);
  EXPECT_EQ(parts[3].bytes, 2u);
  EXPECT_NE(parts[0].key, parts[1].key);
  FixedCosts costs;
  EngineConfig e{"tempo", 4, 1};
  e.layer_wise = LayerWise::kLead;
  e.layer_groups = 0;
  EXPECT_THROW(run_serving(layered_request(), stack(), e, costs), std::invalid_argument);
  e.layer_groups = kMaxLayerGroups + 1;
  EXPECT_THROW(run_serving(layered_request(), stack(), e, costs), std::invalid_argument);
  e.layer_groups = 4;
  e.policy = "dax-l1";
  EXPECT_THROW(run_serving(layered_request(), stack(), e, costs), std::invalid_argument);
  e.policy = "tempo";
  Deployment two_hosts;
  two_hosts.hosts = 2;
  EXPECT_THROW(run_serving(layered_request(), stack(), e, costs, {}, two_hosts),
               std::invalid_argument);
}

TEST(ServingEngine, UnknownPolicyIsAnError) {
  EXPECT_THROW(run(one_request(), "sometimes"), std::invalid_argument);
}

// Requests with the given first-chunk keys (0: a prompt shorter than a chunk).
ReplayWorkload firsts(std::initializer_list<ObjectKey> keys) {
  ReplayWorkload w;
  for (ObjectKey k : keys) {
    ReplayRequest r;
    r.first_chunk = k;
    w.requests.push_back(r);
  }
  return w;
}

TEST(Router, RoundRobinInArrivalOrder) {
  const ReplayWorkload w = firsts({1, 1, 2, 0, 1});
  EXPECT_EQ(route(w, 2, Router::kRoundRobin), (std::vector<uint32_t>{0, 1, 0, 1, 0}));
  EXPECT_EQ(route(w, 3, Router::kRoundRobin), (std::vector<uint32_t>{0, 1, 2, 0, 1}));
  EXPECT_EQ(route(w, 1, Router::kRoundRobin), (std::vector<uint32_t>{0, 0, 0, 0, 0}));
}

TEST(Router, PrefixAffinityHashesTheFirstChunk) {
  // splitmix64's finalizer of keys 1, 2, 3: 6238072747940578789, 15839785061582574730,
  // 2185194620014831856; mod 2: 1, 0, 0; mod 3: 1, 1, 2. Prompts without a chunk (0)
  // go round robin among themselves.
  const ReplayWorkload w = firsts({1, 2, 3, 1, 0, 0, 2, 0});
  EXPECT_EQ(route(w, 2, Router::kPrefixAffinity), (std::vector<uint32_t>{1, 0, 0, 1, 0, 1, 0, 0}));
  EXPECT_EQ(route(w, 3, Router::kPrefixAffinity), (std::vector<uint32_t>{1, 1, 2, 1, 0, 1, 1, 2}));
}

TEST(Router, NamesAndInvalidCounts) {
  EXPECT_EQ(parse_router("round-robin"), Router::kRoundRobin);
  EXPECT_EQ(parse_router("prefix-affinity"), Router::kPrefixAffinity);
  EXPECT_EQ(parse_router("random"), std::nullopt);
  EXPECT_EQ(parse_router(""), std::nullopt);
  EXPECT_STREQ(router_name(Router::kPrefixAffinity), "prefix-affinity");
  EXPECT_THROW(route(firsts({1}), 0, Router::kRoundRobin), std::invalid_argument);
}

Deployment deploy(uint32_t hosts, uint32_t engines, Router router = Router::kRoundRobin) {
  Deployment d;
  d.hosts = hosts;
  d.engines_per_host = engines;
  d.router = router;
  return d;
}

RunResult run_on(const ReplayWorkload& w, const char* policy, Deployment d,
                 SimStackConfig s = stack()) {
  FixedCosts costs;
  return run_serving(w, s, EngineConfig{policy, 1, 128}, costs, {}, d);
}

TEST(Engines, TwoEnginesServeSideBySideOnOneDevice) {
  // Two requests at 0 with different 500 B prefixes, one slot per engine, demand.
  ReplayWorkload w;
  w.requests.push_back(request(1, 0, 1, 5, 1));
  w.requests.push_back(request(2, 0, 11, 5, 1));
  for (ObjectKey k : {1, 2, 3, 4, 5, 11, 12, 13, 14, 15}) w.preloaded.push_back({k, 100});
  // One engine: A stages alone (0.5 s), retrieves (0.5 s), prefills (5 ms): 1.005 s; B is
  // admitted then and takes the same 1.005 s: 2.010 s.
  const RunResult one = run_on(w, "demand", Deployment{});
  EXPECT_EQ(one.requests[0].timing.first_token, 1005 * kNsPerMs);
  EXPECT_EQ(one.requests[1].timing.first_token, 2010 * kNsPerMs);
  EXPECT_TRUE(one.engines.empty());
  // Two engines, round robin: both admitted at 0 and both stage on the one device, FIFO in
  // its 2 slots at 500 B/s each: objects 1-2 at 0.2 s, 3-4 at 0.4, 5 and 11 at 0.6 (A
  // ready), 12-13 at 0.8, 14-15 at 1.0 (B ready). Each engine retrieves on its own GPU.
  const RunResult two = run_on(w, "demand", deploy(1, 2, Router::kRoundRobin));
  EXPECT_EQ(two.requests[0].engine, 0u);
  EXPECT_EQ(two.requests[1].engine, 1u);
  EXPECT_EQ(two.requests[0].claim.ready, 600 * kNsPerMs);
  EXPECT_EQ(two.requests[1].claim.ready, 1000 * kNsPerMs);
  EXPECT_EQ(two.requests[0].timing.first_token, 1105 * kNsPerMs);
  EXPECT_EQ(two.requests[1].timing.first_token, 1505 * kNsPerMs);
  ASSERT_EQ(two.engines.size(), 2u);
  EXPECT_DOUBLE_EQ(two.engines[0].p95_ttft_s, 1.105);
  EXPECT_DOUBLE_EQ(two.engines[1].p95_ttft_s, 1.505);
  // One ledger: A's 500 B from 0 to 1.1 s, B's from 0 to 1.5 s.
  EXPECT_DOUBLE_EQ(two.ledger_byte_seconds, 500.0 * 1.1 + 500.0 * 1.5);
}

TEST(Engines, PrefixAffinityKeepsASharedPrefixOnOneEngine) {
  // A and B share the prefix 1-5 (first chunk 1: engine 1 of 2), C starts with chunk 12
  // (engine 0). Round robin would put A and C on engine 0.
  ReplayWorkload w;
  w.requests.push_back(request(1, 0, 1, 5, 1));
  w.requests.push_back(request(2, 0, 1, 5, 1));
  w.requests.push_back(request(3, 0, 12, 5, 1));
  for (ObjectKey k : {1, 2, 3, 4, 5, 12, 13, 14, 15, 16}) w.preloaded.push_back({k, 100});
  const RunResult r = run_on(w, "demand", deploy(1, 2, Router::kPrefixAffinity));
  EXPECT_EQ(r.requests[0].engine, 1u);
  EXPECT_EQ(r.requests[1].engine, 1u);
  EXPECT_EQ(r.requests[2].engine, 0u);
  // A and C stage at 0 (A ready 0.6 s, C 1.0 s, as above). A: 1.105 s. B is admitted when
  // A finishes (1.105 s) and finds 1-5 resident: retrieval and prefill, 1.610 s. C: 1.505 s.
  EXPECT_EQ(r.requests[0].timing.first_token, 1105 * kNsPerMs);
  EXPECT_EQ(r.requests[1].admitted, 1105 * kNsPerMs);
  EXPECT_EQ(r.requests[1].timing.first_token, 1610 * kNsPerMs);
  EXPECT_EQ(r.requests[2].timing.first_token, 1505 * kNsPerMs);
  EXPECT_EQ(r.staged_bytes, 1000u);  // the shared prefix once
}

// Requests that all start with chunk 1 and then diverge: keys 1, 100i+1 .. 100i+c-1.
ReplayWorkload one_prefix(uint64_t seed, int n) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> chunks(2, 6), out(1, 4), gap(0, 300);
  ReplayWorkload w;
  w.preloaded.push_back({1, 100});
  TimeNs t = 0;
  for (int i = 0; i < n; ++i) {
    t += gap(rng) * kNsPerMs;
    ReplayRequest r = request(static_cast<uint64_t>(i), t, 1, 1, static_cast<uint32_t>(out(rng)));
    const int c = chunks(rng);
    for (int k = 1; k < c; ++k) {
      const ObjectKey key = 100 * static_cast<ObjectKey>(i + 1) + static_cast<ObjectKey>(k);
      r.prefix_chunks.push_back({key, 100});
      w.preloaded.push_back({key, 100});
    }
    r.prompt_tokens = 10 * static_cast<uint64_t>(c) + 5;
    w.requests.push_back(r);
  }
  return w;
}

TEST(Engines, OneBusyEngineAmongIdleOnesServesAsOneEngineAlone) {
  // Every request starts with chunk 1, so prefix-affinity sends all of them to engine
  // splitmix64(1) mod 3 = 1; engines 0 and 2 stay idle. The controller then gets engine 1's
  // queue beside two empty ones: every policy must decide exactly as with that engine alone.
  const ReplayWorkload w = one_prefix(7, 12);
  for (const char* policy :
       {"demand", "immediate", "queue-1", "queue-4", "tempo-static", "tempo", "tempo-risk"}) {
    SCOPED_TRACE(policy);
    const RunResult one = run_on(w, policy, Deployment{});
    const RunResult three = run_on(w, policy, deploy(1, 3, Router::kPrefixAffinity));
    expect_same_requests(one, three, true);
    for (const RequestRecord& q : three.requests) EXPECT_EQ(q.engine, 1u);
    EXPECT_EQ(one.ledger_byte_seconds, three.ledger_byte_seconds);
    EXPECT_EQ(one.capacity_deferrals, three.capacity_deferrals);
    ASSERT_EQ(three.engines.size(), 3u);
    EXPECT_EQ(three.engines[0].completed, 0u);
    EXPECT_EQ(three.engines[1].completed, 12u);
  }
}

TEST(Engines, SharedBudgetIsNeverExceeded) {
  // Four engines over one stack with a 1,000 B budget (claims of 100-800 B from 8 shared
  // documents): the ledger is checked every millisecond of the run.
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    for (const char* policy : {"immediate", "queue-4", "tempo", "tempo-risk"}) {
      SCOPED_TRACE(std::string(policy) + " seed " + std::to_string(seed));
      std::mt19937_64 rng(seed);
      std::uniform_int_distribution<int> doc(0, 7), chunks(1, 8), gap(0, 100);
      ReplayWorkload w;
      for (ObjectKey k = 0; k < 80; ++k) w.preloaded.push_back({k + 1, 100});
      TimeNs t = 0;
      for (int i = 0; i < 40; ++i) {
        t += gap(rng) * kNsPerMs;
        w.requests.push_back(request(static_cast<uint64_t>(i), t,
                                     10 * static_cast<ObjectKey>(doc(rng)) + 1, chunks(rng), 2));
      }
      SimStackConfig s = stack();
      s.provider.budget_bytes = 1000;
      s.controller.policy = *parse_policy(policy);
      VirtualDriver driver;
      SimServingStack st(driver, s);
      uint64_t peak = 0;
      std::function<void()> check = [&] {
        const uint64_t ledger = st.stack().stats().provider.ledger_bytes;
        peak = std::max(peak, ledger);
        EXPECT_LE(ledger, 1000u) << "at " << driver.now();
        if (driver.now() < 60 * kNsPerSec) driver.schedule_after(kNsPerMs, check);
      };
      driver.schedule_after(0, check);
      FixedCosts costs;
      const RunResult r = run_serving(w, st, EngineConfig{policy, 2, 128}, costs,
                                      deploy(1, 4, Router::kRoundRobin));
      EXPECT_EQ(r.summary.completed, 40u);
      EXPECT_GT(peak, 500u);  // the budget was pressed, not idle
      EXPECT_GT(r.requests.back().timing.finish, 0);
      EXPECT_LT(r.requests.back().timing.finish, 60 * kNsPerSec);
    }
  }
}

TEST(Engines, InvalidDeploymentsAreErrors) {
  const ReplayWorkload w = one_request();
  EXPECT_THROW(run_on(w, "tempo", deploy(0, 1)), std::invalid_argument);
  EXPECT_THROW(run_on(w, "tempo", deploy(1, 0)), std::invalid_argument);
  EXPECT_THROW(run_on(w, "tempo", deploy(1, kMaxDeploymentSize + 1)), std::invalid_argument);
  VirtualDriver driver;
  SimServingStack st(driver, stack());
  FixedCosts costs;
  // One given stack is one host.
  EXPECT_THROW(run_serving(w, st, EngineConfig{"tempo", 1, 128}, costs, deploy(2, 1)),
               std::invalid_argument);
}

// The pool's model: 1 ms per request, 1000 B/s.
ClusterModel pool_model() {
  ClusterModel m;
  m.enabled = true;
  m.rate_bps = 1000.0;
  m.latency = kNsPerMs;
  return m;
}

TEST(ClusterPool, APutIsVisibleOnceWrittenThrough) {
  VirtualDriver driver;
  ClusterPool pool(driver, pool_model());
  pool.preload({7, 50});
  EXPECT_EQ(pool.size(7), 50);
  pool.write_through({1, 100});
  pool.write_through({1, 100});  // the same object again: one write
  pool.write_through({7, 50});   // already there: none
  ASSERT_EQ(driver.advance(100 * kNsPerMs), 0);
  EXPECT_EQ(pool.size(1), -ENOENT);  // 1 ms + 100 B at 1000 B/s: 101 ms
  ASSERT_EQ(driver.advance(kNsPerMs), 0);
  EXPECT_EQ(pool.size(1), 100);
  EXPECT_EQ(pool.written_bytes(), 100u);
}

// A computes chunks 1-5 on host 0 (no hit: 55 tokens of prefill, first token at 55 ms) and
// saves them; B reuses them on host 1, arriving at `b_at`.
ReplayWorkload across_hosts(TimeNs b_at) {
  ReplayWorkload w;
  ReplayRequest a = request(0, 0, 1, 5, 1);
  a.chunks = a.prefix_chunks;
  a.prefix_chunks.clear();  // nothing reusable yet at its arrival
  ReplayRequest b = request(1, b_at, 1, 5, 1);
  b.chunks = b.prefix_chunks;
  w.requests = {a, b};
  w.preloaded = b.chunks;  // what later requests reuse
  w.computed_in_run = true;
  return w;
}

TEST(Hosts, WithoutAPoolAnotherHostsKvIsAMiss) {
  const RunResult r = run_on(across_hosts(200 * kNsPerMs), "demand", deploy(2, 1));
  const RequestRecord &a = r.requests[0], &b = r.requests[1];
  EXPECT_EQ(a.host, 0u);
  EXPECT_EQ(b.host, 1u);
  EXPECT_EQ(a.timing.first_token, 55 * kNsPerMs);
  // B recomputes the 55 tokens: first token 55 ms after its arrival.
  EXPECT_EQ(b.cached_tokens, 0u);
  EXPECT_EQ(b.timing.first_token, 255 * kNsPerMs);
  EXPECT_EQ(r.reusable_bytes, 500u);
  EXPECT_EQ(r.hit_bytes, 0u);
  EXPECT_EQ(r.pool_read_bytes, 0u);
}

TEST(Hosts, APoolHitIsStagedFromThePool) {
  Deployment d = deploy(2, 1);
  d.cluster = pool_model();
  const RunResult r = run_on(across_hosts(200 * kNsPerMs), "demand", d);
  const RequestRecord& b = r.requests[1];
  // A saved 1-5 at 55 ms; each is in the pool 1 ms + 100 ms later. B (200 ms) hits all five
  // in the pool and commits at admission: five pool reads side by side (16 slots), 1 ms,
  // then 500 B at 1000 B/s: ready at 701 ms, straight into the fast tier. Retrieval 500 ms,
  // prefill 5 ms: first token at 1.206 s.
  EXPECT_EQ(b.cached_tokens, 50u);
  EXPECT_EQ(b.kv_bytes, 500u);
  EXPECT_EQ(b.pool_bytes, 500u);
  EXPECT_EQ(b.path, RetrievalPath::kStaged);
  EXPECT_EQ(b.claim.committed, 200 * kNsPerMs);
  EXPECT_EQ(b.claim.ready, 701 * kNsPerMs);
  EXPECT_EQ(b.timing.first_token, 1206 * kNsPerMs);
  const SourceCommits& remote = r.commits[static_cast<size_t>(Source::kRemote)];
  EXPECT_EQ(remote.claims, 1u);
  EXPECT_EQ(remote.late, 1u);  // demand commits when the KV is asked for
  EXPECT_EQ(r.commits[static_cast<size_t>(Source::kLocal)].claims, 0u);
  EXPECT_EQ(r.pool_hit_bytes, 500u);
  EXPECT_EQ(r.pool_read_bytes, 500u);
  EXPECT_EQ(r.pool_written_bytes, 500u);
  // Arriving at 150 ms, before the write-through ended (156 ms), B misses.
  const RunResult early = run_on(across_hosts(150 * kNsPerMs), "demand", d);
  EXPECT_EQ(early.requests[1].cached_tokens, 0u);
  EXPECT_EQ(early.requests[1].timing.first_token, 205 * kNsPerMs);
}

TEST(Hosts, TheOrdinaryPathReadsThePool) {
  Deployment d = deploy(2, 1);
  d.cluster = pool_model();
  SimStackConfig s = stack();
  s.provider.budget_bytes = 400;  // B's 500 B claim is never protected
  const RunResult r = run_on(across_hosts(200 * kNsPerMs), "tempo", d, s);
  const RequestRecord& b = r.requests[1];
  // The demand read from the pool: 1 ms, then 500 B at the demand rate, 100 B/s (5 s);
  // retrieval (0.5 s) and prefill: 5.706 s.
  EXPECT_EQ(b.path, RetrievalPath::kOrdinary);
  EXPECT_EQ(b.kv_available, 5201 * kNsPerMs);
  EXPECT_EQ(b.timing.first_token, 5706 * kNsPerMs);
  EXPECT_EQ(r.pool_read_bytes, 500u);
}

TEST(Hosts, ClusterOptionsAreChecked) {
  Deployment d = deploy(2, 1);
  d.cluster = pool_model();
  d.cluster.rate_bps = 0;
  EXPECT_THROW(run_on(one_request(), "tempo", d), std::invalid_argument);
  d.cluster = pool_model();
  d.cluster.latency = -1;
  EXPECT_THROW(run_on(one_request(), "tempo", d), std::invalid_argument);
  d.cluster = pool_model();
  d.cluster.slots = 0;
  EXPECT_THROW(run_on(one_request(), "tempo", d), std::invalid_argument);
  VirtualDriver driver;
  SimServingStack st(driver, stack());
  FixedCosts costs;
  d.hosts = 1;
  d.cluster = pool_model();  // a given stack has no pool below it
  EXPECT_THROW(run_serving(one_request(), st, EngineConfig{"tempo", 1, 128}, costs, d),
               std::invalid_argument);
}

// Two hosts of two engines (round robin: requests 0, 4 on engine 0 of host 0; 1, 5 on
// engine 1; 2, 6 on engine 2 of host 1; 3, 7 on engine 3). On host 1, engines 2 and 3 each
// prefill a 5,000-token prompt from 0 to 5 s, then admit X (request 6, chunks 1-5: their
// home is host 0, so host 1 finds them only in the pool) and Y (request 7, chunks 11-15,
// in host 1's store): equal claims of 500 B with the same TTU.
ReplayWorkload remote_and_local() {
  ReplayWorkload w;
  for (uint64_t id = 0; id < 8; ++id) {
    if (id == 0 || id == 6)
      w.requests.push_back(request(id, 0, 1, 5, 1));
    else if (id == 7)
      w.requests.push_back(request(id, 0, 11, 5, 1));
    else
      w.requests.push_back(request(id, 0, 100 + 10 * id, 0, 1));
    if (id == 2 || id == 3) w.requests.back().prompt_tokens = 5000;
  }
  for (ObjectKey k : {1, 2, 3, 4, 5, 11, 12, 13, 14, 15}) w.preloaded.push_back({k, 100});
  return w;
}

TEST(Hosts, ARemoteClaimCommitsEarlierThanAnEqualLocalOneAndBothAreOnTime) {
  Deployment d = deploy(2, 2);
  d.cluster = pool_model();
  d.cluster.rate_bps = 400.0;  // the pool: 50 ms per read, 400 B/s over 8 slots
  d.cluster.latency = 50 * kNsPerMs;
  d.cluster.slots = 8;
  // One output token at most: the TTU estimator knows each request ends at its first token.
  FixedCosts costs;
  const RunResult r =
      run_serving(remote_and_local(), stack(), EngineConfig{"tempo", 1, 1}, costs, {}, d);
  const RequestRecord &x = r.requests[6], &y = r.requests[7];
  ASSERT_EQ(x.host, 1u);
  ASSERT_EQ(y.host, 1u);
  EXPECT_EQ(x.pool_bytes, 500u);
  EXPECT_EQ(y.pool_bytes, 0u);
  // Both are asked for at 5 s, their TTU. Y's TTR is the SSD's: 500 B in two
  // slots at 1000 B/s, 0.5 s: it commits at 4.5 s. X's is the pool's: 50 ms, then 500 B at
  // 400 B/s, 1.3 s: it commits at 3.7 s. Both are ready at 5 s, when they are used.
  EXPECT_EQ(y.claim.committed, 4500 * kNsPerMs);
  EXPECT_EQ(x.claim.committed, 3700 * kNsPerMs);
  EXPECT_EQ(y.claim.ready, 5000 * kNsPerMs);
  EXPECT_EQ(x.claim.ready, 5000 * kNsPerMs);
  EXPECT_EQ(x.claim.retrieval_requested, 5000 * kNsPerMs);
  EXPECT_EQ(y.claim.retrieval_requested, 5000 * kNsPerMs);
  EXPECT_EQ(x.path, RetrievalPath::kStaged);
  EXPECT_EQ(y.path, RetrievalPath::kStaged);
  const SourceCommits& remote = r.commits[static_cast<size_t>(Source::kRemote)];
  const SourceCommits& local = r.commits[static_cast<size_t>(Source::kLocal)];
  EXPECT_EQ(remote.claims, 1u);
  EXPECT_EQ(remote.on_time, 1u);
  EXPECT_EQ(remote.late, 0u);
  EXPECT_DOUBLE_EQ(remote.mean_lead_s, 1.3);
  // Local: Y, and request 0 on host 0 (its claim ready from the SSD at admission).
  EXPECT_EQ(local.claims, 2u);
  EXPECT_EQ(local.late, 1u);
  EXPECT_EQ(local.on_time, 1u);
  EXPECT_EQ(r.pool_read_bytes, 500u);
}

}  // namespace
}  // namespace tempo
