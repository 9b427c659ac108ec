#include "controller/risk_policy.h"

#include <gtest/gtest.h>

#include <cerrno>

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
  EXPECT_EQ(risk_ttu(q, 1ull << 30, 3.0, fresh), 150 * kMs);  // q(0.25) - 50 ms
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
  // The time the claim commits, reported at t = 0 with point TTU 800 ms and `spread`.
  TimeNs committed_at(PolicySpec policy, const TtuQuantiles& spread) {
    make(policy);
    Manifest m;
    for (ObjectKey k = 1; k <= 5; ++k) m.push_back({k, 100});
    ClaimId id = 0;
    EXPECT_EQ(rt->stack.report(m, 800 * kMs, &id, &spread), 0);
    rt->driver.events().run_until(2 * kNsPerSec);
    return rt->stack.controller().claim(id)->timing.committed;
  }
  // Lateness weight making the 500 B claim's critical ratio exactly 0.25.
  static PolicySpec quarter() {
    return PolicySpec{CommitPolicy::kTempoRisk, 0, 3 * 500.0 / (1ull << 30)};
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
  // The 0.25 quantile, 790 ms, meets the TTR at 290 ms: the same tick as the point rule.
  EXPECT_EQ(committed_at(*parse_policy("tempo"), narrow), 300 * kMs);
  EXPECT_EQ(committed_at(quarter(), narrow), 300 * kMs);
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
