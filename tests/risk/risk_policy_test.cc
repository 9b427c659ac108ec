#include "controller/risk_policy.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <functional>
#include <span>
#include <vector>

#include "controller/controller.h"
#include "stack/sim_stack.h"

namespace tempo {
namespace {

constexpr TimeNs kMs = kNsPerMs;

TEST(RiskPolicy, CriticalRatioFromTheLatenessWeight) {
  EXPECT_EQ(risk_ratio(1ull << 30, 3.0), 0.25);
  EXPECT_EQ(risk_ratio(3ull << 30, 1.0), 0.75);
  EXPECT_EQ(risk_ratio(0, 1.0), 0.0);
}

TEST(RiskPolicy, PolicyNamesCarryTheKnob) {
  const auto def = parse_policy("tempo-risk");
  ASSERT_TRUE(def);
  EXPECT_EQ(def->policy, CommitPolicy::kTempoRisk);
  EXPECT_EQ(def->lateness_gib_s, kDefaultLatenessGibS);
  EXPECT_EQ(policy_name(*def), "tempo-risk");
  const auto half = parse_policy("tempo-risk:0.5");
  ASSERT_TRUE(half);
  EXPECT_EQ(half->lateness_gib_s, 0.5);
  EXPECT_EQ(policy_name(*half), "tempo-risk:0.5");
  for (const char* bad : {"tempo-risk:", "tempo-risk:0", "tempo-risk:-1", "tempo-risk:x",
                          "tempo-risk:1x", "tempo-risk:inf"})
    EXPECT_FALSE(parse_policy(bad)) << bad;
}

TEST(RiskPolicy, LatenessLeadsLaterClaimsAndDecaysWhenOnTime) {
  RiskCalibration c;
  c.observe(-200 * kMs);  // late by 200 ms: later claims commit 100 ms ahead
  EXPECT_EQ(c.lead(), 100 * kMs);
  c.observe(40 * kMs);  // on time: a twentieth off
  EXPECT_EQ(c.lead(), 95 * kMs);
  c.observe(-4 * kNsPerSec);
  EXPECT_EQ(c.lead(), kMaxRiskLead);
  const TtuQuantiles q{{100 * kMs, 200 * kMs, 300 * kMs, 400 * kMs, 600 * kMs}};
  RiskCalibration fresh;
  fresh.observe(-100 * kMs);
  // One request behind: W * 2 = 3 makes the ratio 0.25, and half the 50 ms lead is taken.
  EXPECT_EQ(risk_ttu(q, 1ull << 30, 1.5, fresh, 1), 175 * kMs);  // q(0.25) - 25 ms
}

TEST(RiskPolicy, RequestsBehindWeighLatenessAndTakeTheLead) {
  const TtuQuantiles q{{100 * kMs, 200 * kMs, 300 * kMs, 400 * kMs, 600 * kMs}};
  RiskCalibration lead;
  lead.observe(-240 * kMs);  // a 120 ms lead
  // Nobody behind: the quantile at B / (B + W) = 0.5, none of the lead.
  EXPECT_EQ(risk_ttu(q, 3ull << 30, 3.0, lead, 0), 300 * kMs);
  // Two behind: W * 3 = 9, ratio 0.25; two thirds of the lead (80 ms).
  EXPECT_EQ(risk_ttu(q, 3ull << 30, 3.0, lead, 2), 120 * kMs);
  // Deeper still: an earlier quantile, nearly the whole lead, never past the 0.05 level.
  EXPECT_EQ(risk_ttu(q, 3ull << 30, 3.0, lead, 59), 100 * kMs - 118 * kMs);
}

// Device: 1000 B/s over 2 slots, no latency: a claim of five 100 B objects is ready 0.5 s
// after it is committed (TTR 0.5 s). Tick 50 ms.
class RiskControllerTest : public ::testing::Test {
 protected:
  void make(PolicySpec policy) {
    SimStackConfig c;
    c.device = SimDeviceConfig{10'000, 1000.0, 2, 0, 200.0, "lru"};
    c.provider = ProviderConfig{5000, 1000.0, 1000.0, 2 * kNsPerSec, 0};
    c.controller = ControllerConfig{policy, 50 * kMs};
    rt = std::make_unique<SimStack>(c);
    for (ObjectKey k = 1; k <= 5; ++k) rt->device.add_object(k, 100);
  }
  // The time the claim commits, reported at t = 0 with point TTU 800 ms and `spread`, then
  // ordered by `order` (given the claim's id; nothing when it is null).
  TimeNs committed_at(PolicySpec policy, const TtuQuantiles& spread,
                      const std::function<int(Stack&, ClaimId)>& order = nullptr) {
    make(policy);
    Manifest m;
    for (ObjectKey k = 1; k <= 5; ++k) m.push_back({k, 100});
    ClaimId id = 0;
    EXPECT_EQ(rt->stack.report(m, 800 * kMs, &id, &spread), 0);
    if (order) {
      EXPECT_EQ(order(rt->stack, id), 0);
    }
    rt->driver.events().run_until(2 * kNsPerSec);
    return rt->stack.controller().claim(id)->timing.committed;
  }
  // Lateness weight making the 500 B claim's critical ratio exactly 0.25.
  static PolicySpec quarter() {
    return PolicySpec{CommitPolicy::kTempoRisk, 0, 3 * 500.0 / (1ull << 30)};
  }
  // The time the claim commits, ordered by the runtime after `ahead` requests and before
  // `behind` ones, none of them with a claim.
  TimeNs committed_in_queue(PolicySpec policy, const TtuQuantiles& spread, size_t ahead,
                            size_t behind) {
    return committed_at(policy, spread, [&](Stack& s, ClaimId id) {
      std::vector<ClaimId> order(ahead + 1 + behind, kNoClaim);
      order[ahead] = id;
      return s.update_order(order);
    });
  }
  // The time the claim commits, first in its engine's queue with `behind` requests after
  // it, that queue given after another engine's of `other` requests (update_orders).
  TimeNs committed_in_orders(PolicySpec policy, const TtuQuantiles& spread, size_t behind,
                             size_t other) {
    return committed_at(policy, spread, [&](Stack& s, ClaimId id) {
      const std::vector<ClaimId> others(other, kNoClaim);
      std::vector<ClaimId> own(1 + behind, kNoClaim);
      own[0] = id;
      const std::span<const ClaimId> orders[] = {others, own};
      return s.update_orders(orders);
    });
  }
  std::unique_ptr<SimStack> rt;
};

TEST_F(RiskControllerTest, WideSpreadStraddlingTtrCommitsBeforeThePointRule) {
  const TtuQuantiles wide{{200 * kMs, 400 * kMs, 800 * kMs, 1000 * kMs, 1200 * kMs}};
  // The point rule waits until 800 ms - t reaches the 500 ms TTR: the tick at 300 ms.
  EXPECT_EQ(committed_at(*parse_policy("tempo"), wide), 300 * kMs);
  // P(TTU <= TTR) is already above 0.25 (the 0.25 quantile is 400 ms): at report.
  EXPECT_EQ(committed_at(quarter(), wide), 0);
}

TEST_F(RiskControllerTest, NarrowSpreadCommitsWithThePointRule) {
  const TtuQuantiles narrow{{780 * kMs, 790 * kMs, 800 * kMs, 810 * kMs, 820 * kMs}};
  // The 0.25 quantile, 790 ms, meets the TTR at 290 ms: the spread's 10 ms before the point
  // rule (each commits when its rule is met, between ticks too).
  EXPECT_EQ(committed_at(*parse_policy("tempo"), narrow), 300 * kMs);
  EXPECT_EQ(committed_at(quarter(), narrow), 290 * kMs);
}

// When a claim with one request behind it commits under quarter() (below).
constexpr TimeNs kOneBehind = 39'285'714;

TEST_F(RiskControllerTest, RequestsQueuedBehindCommitEarlier) {
  const TtuQuantiles spread{{400 * kMs, 700 * kMs, 800 * kMs, 1000 * kMs, 1200 * kMs}};
  // The point rule: 800 ms - t reaches the 500 ms TTR at 300 ms.
  EXPECT_EQ(committed_in_queue(*parse_policy("tempo"), spread, 0, 3), 300 * kMs);
  // Nobody behind (alone, or last of four): the 0.25 quantile, 700 ms, at 200 ms.
  EXPECT_EQ(committed_at(quarter(), spread), 200 * kMs);
  EXPECT_EQ(committed_in_queue(quarter(), spread, 3, 0), 200 * kMs);
  // One behind: ratio B / (B + 2W) = 1/7, the quantile 400 + (1/7 - 0.05) / 0.2 x 300 =
  // 539.29 ms, the TTR reached at 39.29 ms.
  EXPECT_EQ(committed_in_queue(quarter(), spread, 0, 1), kOneBehind);
  // Three behind: ratio 1/13, the quantile 440 ms, below the TTR already: at once.
  EXPECT_EQ(committed_in_queue(quarter(), spread, 0, 3), 0);
}

// Several engines' queues given apart (a tempod's clients): a claim counts only its own
// engine's requests behind it, however deep the others' queues.
TEST_F(RiskControllerTest, OtherEnginesQueuesDoNotCountBehindAClaim) {
  const TtuQuantiles spread{{400 * kMs, 700 * kMs, 800 * kMs, 1000 * kMs, 1200 * kMs}};
  // Nobody of its own behind: the 0.25 quantile, at 200 ms, as alone.
  EXPECT_EQ(committed_in_orders(quarter(), spread, 0, 0), 200 * kMs);
  EXPECT_EQ(committed_in_orders(quarter(), spread, 0, 9), 200 * kMs);
  // One of its own behind: at 39.29 ms, whatever the other engine's depth.
  EXPECT_EQ(committed_in_orders(quarter(), spread, 1, 0), kOneBehind);
  EXPECT_EQ(committed_in_orders(quarter(), spread, 1, 9), kOneBehind);
  // Three of its own: at once.
  EXPECT_EQ(committed_in_orders(quarter(), spread, 3, 9), 0);
}

TEST_F(RiskControllerTest, LateTransfersRecalibrate) {
  make(quarter());
  Manifest m;
  for (ObjectKey k = 1; k <= 5; ++k) m.push_back({k, 100});
  ClaimId id = 0;
  const TtuQuantiles far = TtuQuantiles::point(10 * kNsPerSec);
  ASSERT_EQ(rt->stack.report(m, 10 * kNsPerSec, &id, &far), 0);
  rt->driver.events().run_until(100 * kMs);
  // Retrieval comes 9.9 s early: committed now, ready 500 ms later, 500 ms late.
  RetrievalOutcome out{};
  ASSERT_EQ(rt->stack.request_retrieval(id, &out), 0);
  EXPECT_EQ(out, RetrievalOutcome::kWait);
  rt->driver.events().run_until(600 * kMs);
  ASSERT_EQ(rt->stack.begin_transfer(id), 0);
  EXPECT_EQ(rt->stack.controller().risk_calibration().lead(), 250 * kMs);
}

TEST_F(RiskControllerTest, SpreadsBeyondTheTimeHorizonAreRefused) {
  make(quarter());
  Manifest m{{1, 100}};
  TtuQuantiles huge = TtuQuantiles::point(kMs);
  huge.at.back() = kMaxTimeNs + 1;
  ClaimId id = 0;
  EXPECT_EQ(rt->stack.report(m, kMs, &id, &huge), -EOVERFLOW);
  ASSERT_EQ(rt->stack.report(m, kMs, &id), 0);
  EXPECT_EQ(rt->stack.revise(id, kMs, &huge), -EOVERFLOW);
}

}  // namespace
}  // namespace tempo
