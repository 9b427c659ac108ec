#include "metrics/serving_metrics.h"

#include <gtest/gtest.h>

namespace tempo {
namespace {

TEST(ServingMetrics, PercentileInterpolatesBetweenRanks) {
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4, 5}, 50), 3);
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4, 5}, 95), 4.8);
  EXPECT_DOUBLE_EQ(percentile({5, 1, 4, 2, 3}, 100), 5);
  EXPECT_DOUBLE_EQ(percentile({7}, 95), 7);
  EXPECT_DOUBLE_EQ(percentile({}, 95), 0);
}

TEST(ServingMetrics, SummarizesCompletedRequestsOnly) {
  const std::vector<RequestTiming> r = {
      {0, 1 * kNsPerSec, 3 * kNsPerSec, 10},
      {kNsPerSec, 4 * kNsPerSec, 5 * kNsPerSec, 30},
      {2 * kNsPerSec, -1, -1, 0},  // never finished
  };
  // 2 GiB*s over 2 completed requests.
  const ServingSummary s = summarize(r, 2.0 * double(1ull << 30));
  EXPECT_EQ(s.completed, 2u);
  EXPECT_DOUBLE_EQ(s.mean_ttft_s, 2.0);            // (1 + 3) / 2
  EXPECT_DOUBLE_EQ(s.p95_ttft_s, 1 + 0.95 * 2);    // between 1 and 3
  EXPECT_DOUBLE_EQ(s.throughput_tps, 40.0 / 5.0);  // from the first arrival to the last end
  EXPECT_DOUBLE_EQ(s.c_gib_s_per_req, 1.0);
}

}  // namespace
}  // namespace tempo
