// The runtime side over a sim stack's claim surface: hits become claims at their first TTU,
// the horizon and its due queue, one claim per layer group, and refused steps.
#include "runtime/runtime_side.h"

#include <gtest/gtest.h>

#include <map>

#include "config/from_settings.h"
#include "stack/sim_stack.h"
#include "surface/stack_surface.h"

namespace tempo {
namespace {

struct FixedCosts final : StepCosts {
  TimeNs prefill_time(uint64_t, uint64_t) const override { return kNsPerMs; }
  TimeNs decode_step_time(uint64_t, uint64_t) const override { return kNsPerMs; }
  TimeNs retrieval_time(uint64_t) const override { return kNsPerMs; }
};

// A queue of requests, each with a hit of one 1 MiB object (key = its position + 1).
class Queue final : public WaitingView {
 public:
  explicit Queue(size_t n) : n_(n) {}
  size_t size() const override { return n_; }
  WaitingEntry at(size_t q) const override {
    WaitingEntry e;
    e.key = q;
    e.hit = true;
    e.request.uncached_prompt_tokens = 16;
    e.request.cached_prompt_tokens = 256;
    e.request.retrieval_bytes = 1 << 20;
    return e;
  }

 private:
  size_t n_;
};

struct Heard final : RuntimeListener {
  void on_reported(uint64_t key, std::span<const ClaimId> claims) override {
    reported[key].assign(claims.begin(), claims.end());
  }
  void on_order(std::vector<ClaimId> o) override {
    order = std::move(o);
    ++orders;
  }
  std::map<uint64_t, std::vector<ClaimId>> reported;
  std::vector<ClaimId> order;
  int orders = 0;
};

class RuntimeSideTest : public ::testing::Test {
 protected:
  RuntimeSideTest() : st_(sim_stack_config(Settings{})), surface_(st_.driver, st_.stack) {}
  void add_objects(size_t n) {
    for (size_t k = 1; k <= n; ++k) st_.device.add_object(k, 1 << 20);
  }
  TimeNs ttu(ClaimId id) {
    ClaimView v;
    EXPECT_EQ(st_.stack.query(id, &v), 0);
    return v.ttu;
  }
  void add_hits(RuntimeSide& rt, size_t n) {
    for (size_t q = 0; q < n; ++q)
      rt.add_hit(q, {Manifest{{q + 1, 1 << 20}}}, HitClaims::kOne, 1, 0);
  }

  FixedCosts costs_;
  SimStack st_;
  StackSurface surface_;
};

// One slot: the head is admitted now, each later request after the one before it has run
// its retrieval, prefill and three decode steps (no history: the generation limit, 4).
TEST_F(RuntimeSideTest, HitsAreReportedAtTheirFirstTtuInQueueOrder) {
  add_objects(3);
  RuntimeSide rt(surface_, costs_, RuntimeSideConfig{1, 4, kNever});
  add_hits(rt, 3);
  Heard heard;
  ASSERT_EQ(rt.step(st_.driver.now(), {}, Queue(3), 0, false, heard), 0);
  ASSERT_EQ(heard.reported.size(), 3u);
  std::vector<ClaimId> ids;
  for (size_t q = 0; q < 3; ++q) {
    ASSERT_EQ(heard.reported[q].size(), 1u);
    EXPECT_EQ(rt.claims(q).front(), heard.reported[q][0]);
    ids.push_back(heard.reported[q][0]);
  }
  EXPECT_EQ(heard.order, ids);  // reported: the order changed
  EXPECT_EQ(ttu(ids[0]), 0);
  EXPECT_EQ(ttu(ids[1]), 5 * kNsPerMs);
  EXPECT_EQ(ttu(ids[2]), 10 * kNsPerMs);
  // Nothing new and the queue unchanged: revisions only, no order.
  ASSERT_EQ(rt.step(st_.driver.now(), {}, Queue(3), 0, false, heard), 0);
  EXPECT_EQ(heard.orders, 1);
  // A request that left the queue is not revised again.
  rt.forget(0);
  EXPECT_TRUE(rt.claims(0).empty());
}

// 100 waiting, a 12 ms horizon: the projection stops at the first claim past it (the fourth,
// due at 15 ms), inside the first window of 64; the requests behind the window are reported
// with the bound; a claim past the horizon is revised only once its bound has decayed to
// half the horizon.
TEST_F(RuntimeSideTest, ClaimsPastTheHorizonWaitForTheirDueTime) {
  add_objects(100);
  const TimeNs horizon = 12 * kNsPerMs;
  RuntimeSide rt(surface_, costs_, RuntimeSideConfig{1, 4, horizon});
  add_hits(rt, 100);
  Heard heard;
  ASSERT_EQ(rt.step(st_.driver.now(), {}, Queue(100), 0, false, heard), 0);
  ASSERT_EQ(heard.reported.size(), 100u);
  const ClaimId far = rt.claims(80).front();
  const TimeNs bound = ttu(far);
  EXPECT_GT(bound, horizon);
  EXPECT_EQ(ttu(rt.claims(99).front()), bound);
  // Before the bound has decayed to half the horizon: not revised, its TTU decays.
  const TimeNs early = bound - horizon / 2 - kNsPerMs;
  ASSERT_EQ(st_.driver.advance(early), 0);
  ASSERT_EQ(rt.step(st_.driver.now(), {}, Queue(100), 0, false, heard), 0);
  EXPECT_EQ(ttu(far), bound - early);
  // Past it: revised with the projection's bound again (nothing ran meanwhile).
  ASSERT_EQ(st_.driver.advance(2 * kNsPerMs), 0);
  ASSERT_EQ(rt.step(st_.driver.now(), {}, Queue(100), 0, false, heard), 0);
  EXPECT_EQ(ttu(far), bound);
}

// One claim per layer group: group g's is needed g group-prefills later.
TEST_F(RuntimeSideTest, PerGroupClaimsAreLaterByTheirGroupsPrefill) {
  add_objects(2);
  RuntimeSide rt(surface_, costs_, RuntimeSideConfig{1, 4, kNever});
  rt.add_hit(0, {Manifest{{1, 1 << 20}}, Manifest{{2, 1 << 20}}}, HitClaims::kPerGroup, 2,
             3 * kNsPerMs);
  Heard heard;
  // The one slot is held by a running request with three decode steps left.
  const RunningRequest running{256, 0, 1, 257, 0, 0, 0};
  ASSERT_EQ(rt.step(st_.driver.now(), {&running, 1}, Queue(1), 0, false, heard), 0);
  ASSERT_EQ(heard.reported[0].size(), 2u);
  const TimeNs first = ttu(heard.reported[0][0]);
  EXPECT_EQ(first, 3 * kNsPerMs);
  EXPECT_EQ(ttu(heard.reported[0][1]), first + 3 * kNsPerMs);
  EXPECT_EQ(heard.order, heard.reported[0]);
}

// A snapshot the estimator refuses (more running than slots) reports and revises nothing.
TEST_F(RuntimeSideTest, ARefusedStepChangesNothing) {
  add_objects(1);
  RuntimeSide rt(surface_, costs_, RuntimeSideConfig{1, 4, kNever});
  add_hits(rt, 1);
  const RunningRequest two[2] = {{256, 0, 1, 257, 0, 0, 0}, {256, 0, 1, 257, 0, 0, 0}};
  Heard heard;
  EXPECT_EQ(rt.step(st_.driver.now(), two, Queue(1), 0, true, heard), -EINVAL);
  EXPECT_TRUE(heard.reported.empty());
  EXPECT_EQ(heard.orders, 0);
  EXPECT_EQ(st_.stack.stats().controller.reported, 0u);
}

}  // namespace
}  // namespace tempo
