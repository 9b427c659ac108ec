#include "provider/rate_estimator.h"

#include <gtest/gtest.h>

namespace tempo {
namespace {

TEST(RateEstimator, StartsAtTheCalibration) {
  RateEstimator r(1000, 2 * kNsPerSec);
  EXPECT_DOUBLE_EQ(r.rate_bps(), 1000);
}

TEST(RateEstimator, LearnsOverActiveTimeAndIgnoresIdleGaps) {
  RateEstimator r(1000, 2 * kNsPerSec);
  r.on_busy(0);
  r.on_complete(1000, 500 * kNsPerMs, false);  // 2000 B/s for 0.5 s
  // Window of 2 s: 1.5 s of the prior (1500 B) + 1000 B in 0.5 s.
  EXPECT_DOUBLE_EQ(r.rate_bps(), 1250);
  // Ten idle seconds, then the same again: the gap does not count.
  r.on_busy(10500 * kNsPerMs);
  r.on_complete(1000, 11 * kNsPerSec, false);
  EXPECT_DOUBLE_EQ(r.rate_bps(), 1500);
  EXPECT_EQ(r.active_time(), kNsPerSec);
}

TEST(RateEstimator, OverlappingOperationsCountTheirSharedTimeOnce) {
  RateEstimator r(1000, kNsPerSec);
  r.on_busy(0);
  r.on_complete(500, 250 * kNsPerMs, true);
  r.on_complete(1500, kNsPerSec, false);
  // 2000 B over 1 s of active time fills the whole window.
  EXPECT_DOUBLE_EQ(r.rate_bps(), 2000);
}

TEST(RateEstimator, RejectsNonsense) {
  EXPECT_THROW(RateEstimator(0, kNsPerSec), std::invalid_argument);
  EXPECT_THROW(RateEstimator(1000, 0), std::invalid_argument);
}

}  // namespace
}  // namespace tempo
