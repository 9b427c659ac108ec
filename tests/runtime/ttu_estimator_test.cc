#include "runtime/ttu_estimator.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <string>
#include <vector>

#include "model/exec_model.h"
#include "model/exec_model_costs.h"

namespace tempo {
namespace {

constexpr TimeNs kMs = kNsPerMs;
constexpr TimeNs kUs = kNsPerUs;

// Costs simple enough to follow by hand, in whole microseconds:
//   prefill(n, c)   = 1 ms per new token + 10 us per context token
//   decode(b, T)    = 10 ms + 1 ms per sequence + 10 us per context token
//   retrieval(B)    = 1 us per byte
class HandCosts final : public StepCosts {
 public:
  TimeNs prefill_time(uint64_t n, uint64_t c) const override {
    return static_cast<TimeNs>(n) * kMs + static_cast<TimeNs>(c) * 10 * kUs;
  }
  TimeNs decode_step_time(uint64_t b, uint64_t t) const override {
    return 10 * kMs + static_cast<TimeNs>(b) * kMs + static_cast<TimeNs>(t) * 10 * kUs;
  }
  TimeNs retrieval_time(uint64_t bytes) const override { return static_cast<TimeNs>(bytes) * kUs; }
};

RunningRequest decoding(uint64_t context, uint32_t generated) {
  RunningRequest r;
  r.prompt_tokens_done = context - generated;
  r.tokens_generated = generated;
  r.context_tokens = context;
  return r;
}

WaitingRequest waiting(std::optional<ClaimId> claim, uint64_t uncached, uint64_t cached,
                       uint64_t bytes, TimeNs ready_in = 0) {
  WaitingRequest w;
  w.claim = claim;
  w.uncached_prompt_tokens = uncached;
  w.cached_prompt_tokens = cached;
  w.retrieval_bytes = bytes;
  w.ready_in = ready_in;
  return w;
}

struct Fixture {
  std::vector<RunningRequest> running;
  std::vector<WaitingRequest> queue;
  uint32_t max_active = 1;
  uint32_t limit = 8;
  OutputLengthHistory history;
  HandCosts costs;

  TimeNs busy_for = 0;

  std::vector<ClaimTtu> run(int expect_rc = 0) {
    SchedulerSnapshot s{running, queue, max_active, limit, kNever, busy_for};
    std::vector<ClaimTtu> out;
    EXPECT_EQ(estimate_ttu(s, costs, history, &out), expect_rc);
    return out;
  }
};

TEST(TtuEstimator, OneRunningOneWaiting) {
  Fixture f;
  f.running = {decoding(102, 2)};
  f.queue = {waiting(7, 10, 200, 2000)};
  // No history: the running request goes to the limit, 6 more decode steps over contexts
  // 102..107: 6 x 11 ms + (1.02 + ... + 1.07) ms. Then its slot frees.
  auto out = f.run();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].claim, 7u);
  EXPECT_EQ(out[0].queue_position, 0u);
  EXPECT_EQ(out[0].ttu, 72'270 * kUs);

  // With a free slot the request is admitted now and its retrieval starts before the
  // batch's next decode step.
  f.max_active = 2;
  EXPECT_EQ(f.run()[0].ttu, 0);
}

TEST(TtuEstimator, SlotsFreeOnOneSharedTimeline) {
  Fixture f;
  f.max_active = 2;
  f.running = {decoding(100, 6), decoding(50, 3)};  // 2 and 5 steps left (limit 8)
  f.queue = {waiting(11, 10, 200, 2000), waiting(12, 20, 100, 1000), waiting(std::nullopt, 5, 0, 0),
             waiting(14, 1, 0, 0)};
  auto out = f.run();
  ASSERT_EQ(out.size(), 3u);
  // Two steps of the batch of two (contexts 150, 152): 13.5 + 13.52 ms. A leaves.
  EXPECT_EQ(out[0].claim, 11u);
  EXPECT_EQ(out[0].ttu, 27'020 * kUs);
  // Claim 11: retrieval 2 ms + prefill 10 + 2 ms; it decodes with B (3 steps left) over
  // contexts 262, 264, 266: 36 + 7.92 ms. B leaves.
  EXPECT_EQ(out[1].claim, 12u);
  EXPECT_EQ(out[1].queue_position, 1u);
  EXPECT_EQ(out[1].ttu, (27'020 + 14'000 + 43'920) * kUs);
  // Claim 12: 1 + 21 ms; 4 steps with 11 over 333..339: 48 + 13.44 ms; 11 leaves. The
  // unclaimed request: prefill 5 ms; 3 steps with 12 over 129..133: 36 + 3.93 ms.
  EXPECT_EQ(out[2].claim, 14u);
  EXPECT_EQ(out[2].queue_position, 3u);
  EXPECT_EQ(out[2].ttu, (84'940 + 22'000 + 61'440 + 5'000 + 39'930) * kUs);
}

// max_active is the engine's word, up to 2^32 - 1: slots beyond every request given change
// nothing, and cost nothing (the estimator once reserved max_active sequences: bad_alloc).
TEST(TtuEstimator, MoreSlotsThanRequestsChangeNothing) {
  Fixture f;
  f.running = {decoding(100, 6), decoding(50, 3)};
  f.queue = {waiting(11, 10, 200, 2000), waiting(12, 20, 100, 1000), waiting(14, 1, 0, 0)};
  f.max_active = 5;
  const std::vector<ClaimTtu> enough = f.run();
  ASSERT_EQ(enough.size(), 3u);
  f.max_active = UINT32_MAX;
  const std::vector<ClaimTtu> most = f.run();
  ASSERT_EQ(most.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(most[i].ttu, enough[i].ttu) << i;
}

TEST(TtuEstimator, PrecedingRetrievalAndPrefillCount) {
  Fixture f;
  f.max_active = 4;
  f.queue = {waiting(1, 10, 300, 3000), waiting(2, 50, 0, 0)};
  auto out = f.run();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].ttu, 0);
  EXPECT_EQ(out[1].ttu, (3'000 + 10'000 + 3'000) * kUs);  // retrieval, then prefill of 1
}

TEST(TtuEstimator, OutputLengthConditioning) {
  Fixture f;
  f.limit = 16;
  f.running = {decoding(100, 5)};
  f.queue = {waiting(9, 1, 0, 0)};
  // No history: 11 steps to the limit over contexts 100..110.
  EXPECT_EQ(f.run()[0].ttu, (11 * 11'000 + 11'550) * kUs);
  // Completed outputs 4, 6, 10: with 5 generated, mean(6-5, 10-5) = 3 steps: 100..102.
  for (uint32_t n : {4u, 6u, 10u}) f.history.record(n);
  EXPECT_EQ(f.run()[0].ttu, (3 * 11'000 + 3'030) * kUs);
}

TEST(TtuEstimator, SpreadFromOutputLengthsAndStepCosts) {
  Fixture f;
  f.limit = 16;
  f.running = {decoding(100, 5)};
  f.queue = {waiting(9, 1, 0, 0)};
  for (uint32_t n : {4u, 6u, 10u}) f.history.record(n);
  SchedulerSnapshot s{f.running, f.queue, f.max_active, f.limit};
  StepCostSpread steps;
  std::vector<ClaimTtu> out;
  ASSERT_EQ(estimate_ttu_spread(s, f.costs, f.history, steps, &out), 0);
  ASSERT_EQ(out.size(), 1u);
  // The point (mean of 1 and 5 remaining: 3 steps) is unchanged. The one sequence takes
  // each stratum of {1, 5} once: half the samples 1 step (12 ms), half 5 steps over
  // contexts 100..104 (60.1 ms), so the levels up to 0.5 are 12 ms, the others 60.1 ms.
  EXPECT_EQ(out[0].ttu, (3 * 11'000 + 3'030) * kUs);
  EXPECT_EQ(out[0].spread.at, (std::array<TimeNs, 5>{12'000 * kUs, 12'000 * kUs, 12'000 * kUs,
                                                     60'100 * kUs, 60'100 * kUs}));
  // The same snapshot gives the same spread (fixed draws).
  std::vector<ClaimTtu> again;
  ASSERT_EQ(estimate_ttu_spread(s, f.costs, f.history, steps, &again), 0);
  EXPECT_EQ(again[0].spread.at, out[0].spread.at);
  // Steps observed at 1x, 1x, 1x and 2x the model: the last samples run up to twice as
  // long (the factor rises from 1 at the 0.75 level to 2 at 0.95), the first at 1x.
  for (TimeNs observed : {10, 10, 10, 20}) steps.record(10, observed);
  ASSERT_EQ(estimate_ttu_spread(s, f.costs, f.history, steps, &out), 0);
  EXPECT_GT(out[0].spread.at.back(), 60'100 * kUs);
  EXPECT_LE(out[0].spread.at.back(), 120'200 * kUs);
  EXPECT_EQ(out[0].spread.at.front(), 12'000 * kUs);
  // The plain estimate reports its point as the spread.
  EXPECT_EQ(f.run()[0].spread.at, TtuQuantiles::point((3 * 11'000 + 3'030) * kUs).at);
}

// Sequences end independently: the first of three slots frees at the shortest of three
// draws, earlier than any one sequence's mean says.
TEST(TtuEstimator, SpreadTakesTheFirstOfIndependentEnds) {
  Fixture f;
  f.limit = 16;
  f.max_active = 3;
  f.running = {decoding(100, 1), decoding(100, 1), decoding(100, 1)};
  f.queue = {waiting(9, 1, 0, 0)};
  // Completed outputs 2 and 10: a sequence at 1 token has 1 or 9 steps left, 5 on average.
  for (uint32_t n : {2u, 10u}) f.history.record(n);
  SchedulerSnapshot s{f.running, f.queue, f.max_active, f.limit};
  std::vector<ClaimTtu> out;
  ASSERT_EQ(estimate_ttu_spread(s, f.costs, f.history, StepCostSpread(), &out), 0);
  // The point: all three run 5 steps (batch 3, total contexts 300, 303, ..., 312):
  // 5 x 13 ms + 15.3 ms.
  EXPECT_EQ(out[0].ttu, (5 * 13'000 + 15'300) * kUs);
  // One step frees a slot unless all three drew 9 (1 in 8): the 0.75 level is one step,
  // 16 ms, where moving the sequences together (each at its own 0.75 quantile, 9 steps)
  // would have said 9 steps.
  EXPECT_EQ(out[0].spread.at[3], 16'000 * kUs);
  EXPECT_LT(out[0].spread.at[3], out[0].ttu);
}

// Past kTtuSpreadHorizon (30 s) the spread is not sampled: such a claim keeps its point.
TEST(TtuEstimator, ClaimsPastTheSpreadHorizonKeepTheirPoint) {
  Fixture f;
  f.limit = 16;
  for (uint32_t n : {2u, 10u}) f.history.record(n);  // 1 or 9 decode steps after a prefill
  // A, then B behind it; then a 40,000-token prefill (40 s) without a claim, then C.
  f.queue = {waiting(1, 1, 0, 0), waiting(2, 1, 0, 0), waiting(std::nullopt, 40'000, 0, 0),
             waiting(3, 1, 0, 0)};
  SchedulerSnapshot s{f.running, f.queue, f.max_active, f.limit};
  std::vector<ClaimTtu> out;
  ASSERT_EQ(estimate_ttu_spread(s, f.costs, f.history, StepCostSpread(), &out), 0);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_LT(out[1].spread.at.front(), out[1].spread.at.back());  // B: A ends after 1 or 9
  EXPECT_GT(out[2].ttu, 40 * kNsPerSec);
  EXPECT_EQ(out[2].spread.at, TtuQuantiles::point(out[2].ttu).at);
  EXPECT_FALSE(out[2].beyond);
}

TEST(TtuEstimator, KnownOutputLengthsReplaceTheHistory) {
  Fixture f;
  for (uint32_t n : {4u, 6u, 10u}) f.history.record(n);
  f.running = {decoding(100, 5)};
  f.running[0].output_tokens = 7;  // 2 more decode steps, whatever the history says
  f.queue = {waiting(9, 1, 0, 0)};
  // Contexts 100 and 101: 12 + 12.01 ms.
  EXPECT_EQ(f.run()[0].ttu, 24'010 * kUs);
  // A waiting request's known output: the one ahead of the claim generates 3 (prefill's
  // token + 2 decode steps), the history's mean would be 7.
  f.running.clear();
  f.queue = {waiting(std::nullopt, 10, 0, 0), waiting(2, 1, 0, 0)};
  f.queue[0].output_tokens = 3;
  // Prefill 10 ms, then decode over contexts 10, 11: 11.1 + 11.11 ms.
  EXPECT_EQ(f.run()[0].ttu, (10'000 + 22'210) * kUs);
  // Capped by the generation limit (8): 100 known, 7 decode steps after the prefill.
  f.queue[0].output_tokens = 100;
  const TimeNs capped = f.run()[0].ttu;
  f.queue[0].output_tokens = 8;
  EXPECT_EQ(f.run()[0].ttu, capped);
}

TEST(TtuEstimator, ProjectionStartsWhenTheStepInFlightEnds) {
  Fixture f;
  f.max_active = 2;
  f.queue = {waiting(1, 1, 0, 0)};
  EXPECT_EQ(f.run()[0].ttu, 0);  // a free slot, between steps: admitted now
  f.busy_for = 40 * kMs;         // taken mid-step: admitted when the step ends
  EXPECT_EQ(f.run()[0].ttu, 40 * kMs);
  // The running request is described as the step leaves it: its next decode step comes
  // after the one in flight (no history: to the limit of 8, 6 steps from 2 generated).
  f.max_active = 1;
  f.running = {decoding(102, 2)};
  EXPECT_EQ(f.run()[0].ttu, 40 * kMs + 72'270 * kUs);
}

TEST(TtuEstimator, GenerationCapBoundsThePrediction) {
  Fixture f;
  f.history.record(100);
  f.running = {decoding(102, 2)};
  f.queue = {waiting(7, 10, 200, 2000)};
  // 98 more predicted, but the limit of 8 leaves 6: the same as with no history.
  EXPECT_EQ(f.run()[0].ttu, 72'270 * kUs);
}

TEST(TtuEstimator, NewRequestsUseTheHistoryToo) {
  Fixture f;
  f.history.record(3);  // a new request generates 3: its prefill's token + 2 decode steps
  f.queue = {waiting(1, 10, 0, 0), waiting(2, 1, 0, 0)};
  auto out = f.run();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].ttu, 0);
  // Prefill 10 ms, then decode steps over contexts 10, 11: 11.1 + 11.11 ms.
  EXPECT_EQ(out[1].ttu, (10'000 + 22'210) * kUs);
}

TEST(TtuEstimator, RunningPrefillRunsFirst) {
  Fixture f;
  f.max_active = 2;
  RunningRequest r;
  r.prompt_tokens_remaining = 1000;
  f.running = {r};
  f.queue = {waiting(5, 1, 0, 0)};
  EXPECT_EQ(f.run()[0].ttu, 1000 * kMs);
}

TEST(TtuEstimator, RunningRequestStillRetrieving) {
  Fixture f;
  f.max_active = 2;
  RunningRequest r;
  r.prompt_tokens_done = 300;  // matched prefix, arriving by the pending retrieval
  r.prompt_tokens_remaining = 10;
  r.retrieval_bytes_remaining = 3000;
  f.running = {r};
  f.queue = {waiting(5, 1, 0, 0)};
  EXPECT_EQ(f.run()[0].ttu, (3'000 + 10'000 + 3'000) * kUs);
  // Its KV is still staging for 20 ms: the waiting request goes first.
  f.running[0].ready_in = 20 * kMs;
  EXPECT_EQ(f.run()[0].ttu, 0);
}

TEST(TtuEstimator, KnownStagingOfAPrecedingRequest) {
  Fixture f;
  f.max_active = 4;
  f.queue = {waiting(1, 10, 300, 3000, 50 * kMs), waiting(2, 10, 100, 1000), waiting(3, 1, 0, 0)};
  auto out = f.run();
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].ttu, 0);  // its own staging is assumed done
  EXPECT_EQ(out[1].ttu, 0);  // goes ahead while claim 1 waits for its KV
  EXPECT_EQ(out[2].ttu, (1'000 + 11'000) * kUs);

  // With one slot, claim 1 holds it: nothing runs until its KV is ready at 50 ms; then
  // 3 + 13 ms, and 7 decode steps over contexts 310..316: 77 + 21.91 ms.
  f.max_active = 1;
  out = f.run();
  EXPECT_EQ(out[0].ttu, 0);
  EXPECT_EQ(out[1].ttu, (50'000 + 16'000 + 98'910) * kUs);
}

TEST(TtuEstimator, OnlyClaimsAreReported) {
  Fixture f;
  f.queue = {waiting(std::nullopt, 1, 0, 0)};
  EXPECT_TRUE(f.run().empty());
  f.queue.clear();
  EXPECT_TRUE(f.run().empty());
}

TEST(TtuEstimator, RejectsSnapshotsItCannotProject) {
  Fixture f;
  f.queue = {waiting(1, 1, 0, 0)};
  f.max_active = 0;
  EXPECT_TRUE(f.run(-EINVAL).empty());
  f.max_active = 1;
  f.limit = 0;
  f.run(-EINVAL);
  f.limit = 8;
  f.running = {decoding(10, 1), decoding(10, 1)};  // more running than slots
  f.run(-EINVAL);
  RunningRequest r;
  r.prompt_tokens_remaining = 5;
  r.tokens_generated = 1;  // output before its prompt is prefilled
  f.running = {r};
  f.run(-EINVAL);
  f.running.clear();
  f.queue = {waiting(1, 1, 0, 0, -1)};
  f.run(-EINVAL);
  f.queue = {waiting(1, 1, 0, 0, kNever)};
  f.run(-EINVAL);
  f.queue = {waiting(1, 1, 0, 0)};
  f.busy_for = -1;
  f.run(-EINVAL);
  f.busy_for = kNever;
  f.run(-EINVAL);
}

// Wired to the execution-time model: the projection is the model's own step times.
TEST(TtuEstimator, OnTheExecutionModel) {
  ExecModel em;
  std::string err;
  ASSERT_EQ(load_exec_model("llama-3.1-8b-instruct", "h100-pcie-80gb", &em, &err), 0) << err;
  const ExecModelCosts costs(em);
  const std::vector<RunningRequest> running = {decoding(20'000, 100)};
  const std::vector<WaitingRequest> queue = {
      waiting(1, 100, 32'768, 32'768 * em.kv_bytes_per_token()), waiting(2, 100, 0, 0)};
  const OutputLengthHistory history;
  std::vector<ClaimTtu> out;
  ASSERT_EQ(estimate_ttu({running, queue, 1, 128}, costs, history, &out), 0);
  ASSERT_EQ(out.size(), 2u);
  const TimeNs first = em.decode_steps_time(1, 20'000, 28);
  EXPECT_EQ(out[0].ttu, first);
  const TimeNs second = first + em.retrieval_time(32'768 * em.kv_bytes_per_token()) +
                        em.prefill_time(100, 32'768) + em.decode_steps_time(1, 32'868, 127);
  EXPECT_EQ(out[1].ttu, second);
  // A CXL x8 source at 25 GB/s slows the preceding retrieval, not the first TTU.
  const ExecModelCosts cxl(em, 25e9);
  ASSERT_EQ(estimate_ttu({running, queue, 1, 128}, cxl, history, &out), 0);
  EXPECT_EQ(out[0].ttu, first);
  EXPECT_EQ(out[1].ttu - second, em.retrieval_time(32'768 * em.kv_bytes_per_token(), 25e9) -
                                     em.retrieval_time(32'768 * em.kv_bytes_per_token()));
}

}  // namespace
}  // namespace tempo
