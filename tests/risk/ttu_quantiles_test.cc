#include "runtime/ttu_quantiles.h"

#include <gtest/gtest.h>

#include <span>

#include <vector>

#include "runtime/output_length_history.h"
#include "runtime/step_cost_spread.h"

namespace tempo {
namespace {

constexpr TimeNs kMs = kNsPerMs;

TEST(TtuQuantiles, InterpolatesBetweenLevelsAndHoldsBeyondThem) {
  const TtuQuantiles q{{100 * kMs, 200 * kMs, 300 * kMs, 400 * kMs, 600 * kMs}};
  EXPECT_EQ(q.at_level(0.25), 200 * kMs);
  EXPECT_EQ(q.at_level(0.375), 250 * kMs);  // halfway from 0.25 to 0.5
  EXPECT_EQ(q.at_level(0.85), 500 * kMs);   // halfway from 0.75 to 0.95
  EXPECT_EQ(q.at_level(0.01), 100 * kMs);
  EXPECT_EQ(q.at_level(0.99), 600 * kMs);
  EXPECT_EQ(q.shifted(50 * kMs).at_level(0.375), 200 * kMs);
  EXPECT_EQ(TtuQuantiles::point(7).at_level(0.6), 7);
}

TEST(TtuQuantiles, NearestRankAtEveryLevel) {
  std::vector<int> v = {9, 1, 8, 2, 7, 3, 6, 4, 5, 10};
  // Levels 0.05, 0.25, 0.5, 0.75, 0.95 of ten values: ranks 1, 3, 5, 8, 10.
  EXPECT_EQ(level_quantiles(std::span<int>(v)), (std::array<int, 5>{1, 3, 5, 8, 10}));
}

// The population's quantiles at the levels (0 each once the limit is reached: nothing left).
std::array<uint32_t, 5> remaining_quantiles(const OutputLengthHistory& h, uint32_t generated,
                                            uint32_t limit) {
  std::vector<uint32_t> rest = h.remaining_population(generated, limit);
  return rest.empty() ? std::array<uint32_t, 5>{} : level_quantiles(std::span<uint32_t>(rest));
}

TEST(OutputLengthHistory, RemainingPopulationConditionsOnWhatWasGenerated) {
  OutputLengthHistory h;
  EXPECT_EQ(remaining_quantiles(h, 2, 16), (std::array<uint32_t, 5>{14, 14, 14, 14, 14}));
  for (uint32_t n : {4u, 6u, 10u, 30u}) h.record(n);
  // Generated 5: the outputs above 5 leave 1, 5 and 25, capped at 11: ranks 1, 1, 2, 3, 3.
  EXPECT_EQ(h.remaining_population(5, 16), (std::vector<uint32_t>{1, 5, 11}));
  EXPECT_EQ(remaining_quantiles(h, 5, 16), (std::array<uint32_t, 5>{1, 1, 5, 11, 11}));
  EXPECT_EQ(remaining_quantiles(h, 16, 16), (std::array<uint32_t, 5>{0, 0, 0, 0, 0}));
}

TEST(StepCostSpread, RatiosOfObservedToPredicted) {
  StepCostSpread s(4);
  EXPECT_EQ(s.factors(), (std::array<double, 5>{1, 1, 1, 1, 1}));
  s.record(0, 5);  // no prediction: no ratio
  EXPECT_EQ(s.size(), 0u);
  for (TimeNs observed : {50, 100, 200, 400, 150}) s.record(100, observed);
  // The window keeps the last four: 1.0, 2.0, 4.0, 1.5; ranks 1, 1, 2, 3, 4.
  EXPECT_EQ(s.factors(), (std::array<double, 5>{1.0, 1.0, 1.5, 2.0, 4.0}));
}

}  // namespace
}  // namespace tempo
