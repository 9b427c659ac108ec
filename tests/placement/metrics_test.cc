#include "placement/metrics.h"

#include <gtest/gtest.h>

#include "placement/experiments.h"

namespace tempo::placement {
namespace {

TEST(CapacityModel, TableIIIFollowsFromTheTierShape) {
  const CapacityModel c = capacity_model({10, 80, 640}, 2 << 20, 50.0, TierPrices{});
  EXPECT_DOUBLE_EQ(c.sessions_hbm_only, 0.2);
  EXPECT_DOUBLE_EQ(c.sessions_tiered, 14.6);
  EXPECT_DOUBLE_EQ(c.session_gain(), 73.0);
  // 73 x 187.5 / (187.5 + 8 x 3.5 + 64 x 0.08) = 62.0411...
  EXPECT_NEAR(c.cost_reduction(), 62.0411, 1e-4);
  EXPECT_EQ(csv_number(c.cost_reduction()), "62.0411");
}

TEST(CapacityModel, IndependentOfScale) {
  for (uint64_t h : {1, 7, 100}) {
    const CapacityModel c = capacity_model({h, 8 * h, 64 * h}, 1 << 20, 3.0, TierPrices{});
    EXPECT_DOUBLE_EQ(c.session_gain(), 73.0);
  }
}

TEST(ShapeForRatio, KeepsOneEightSixtyFour) {
  const TierShape s = shape_for_ratio(730, 73);
  EXPECT_EQ(s.hbm_blocks, 10u);
  EXPECT_EQ(s.dram_blocks, 80u);
  EXPECT_EQ(s.ssd_blocks, 640u);
  EXPECT_EQ(shape_for_ratio(10, 73).hbm_blocks, 1u);
}

TEST(Percentile, NearestRank) {
  EXPECT_EQ(percentile({}, 0.5), 0);
  EXPECT_EQ(percentile({5, 1, 3, 2, 4}, 0.5), 3);
  EXPECT_EQ(percentile({5, 1, 3, 2, 4}, 0.99), 5);
  EXPECT_EQ(percentile({5, 1, 3, 2, 4}, 0.0), 1);
}

TEST(Summary, ColumnsAndValuesAgree) {
  RunSummary s;
  EXPECT_EQ(summary_columns().size(), summary_values(s).size());
}

}  // namespace
}  // namespace tempo::placement
