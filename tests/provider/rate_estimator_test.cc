#include "provider/rate_estimator.h"

#include <gtest/gtest.h>

#include <stdexcept>

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

TEST(LatencyRateEstimator, StartsAtTheCalibration) {
  LatencyRateEstimator r(1000, 50 * kNsPerMs);
  EXPECT_DOUBLE_EQ(r.rate_bps(), 1000);
  EXPECT_EQ(r.latency_ns(), 50 * kNsPerMs);
}

TEST(LatencyRateEstimator, LearnsLatencyAndRateFromRequestsOfTwoSizes) {
  LatencyRateEstimator r(1000, 50 * kNsPerMs, 8);
  // The path really has 10 ms of latency and 4000 B/s; requests of 400 and 2000 B alone.
  for (int i = 0; i < 8; ++i) {
    const uint64_t bytes = i % 2 ? 2000 : 400;
    r.on_complete(bytes, 1, 10 * kNsPerMs + static_cast<TimeNs>(bytes) * kNsPerSec / 4000);
  }
  EXPECT_NEAR(r.rate_bps(), 4000, 1e-6);
  EXPECT_NEAR(static_cast<double>(r.latency_ns()), 10e6, 1);
  // Two sharing the path: each sees half the rate.
  r.on_complete(400, 2, 10 * kNsPerMs + 200 * kNsPerMs);
  EXPECT_NEAR(r.rate_bps(), 4000, 1e-6);
}

TEST(LatencyRateEstimator, OneShapeOfRequestKeepsTheRateAndMovesTheLatency) {
  LatencyRateEstimator r(1000, 500 * kNsPerMs, 4);
  for (int i = 0; i < 4; ++i) r.on_complete(1000, 1, 1500 * kNsPerMs);  // as calibrated
  EXPECT_NEAR(r.rate_bps(), 1000, 1e-6);
  EXPECT_NEAR(static_cast<double>(r.latency_ns()), 500e6, 1);
  // The window now holds requests of one size only: 1 s of bytes and 0.7 s more.
  for (int i = 0; i < 4; ++i) r.on_complete(1000, 1, 1700 * kNsPerMs);
  EXPECT_NEAR(r.rate_bps(), 1000, 1e-6);
  EXPECT_NEAR(static_cast<double>(r.latency_ns()), 700e6, 1);
}

TEST(LatencyRateEstimator, RefusesAnInvalidCalibration) {
  EXPECT_THROW(LatencyRateEstimator(0, 0), std::invalid_argument);
  EXPECT_THROW(LatencyRateEstimator(1000, -1), std::invalid_argument);
}

}  // namespace
}  // namespace tempo
