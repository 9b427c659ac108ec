#include "device/interference.h"

#include <gtest/gtest.h>

#include <cerrno>

#include "stack/sim_stack.h"

namespace tempo {
namespace {

constexpr TimeNs kMs = kNsPerMs;

TEST(Interference, ParsesWindowsAndRejectsBadOnes) {
  Interference i;
  std::string error;
  ASSERT_EQ(parse_interference("5s:15s:0.5", &i, &error), 0) << error;
  EXPECT_EQ(i.start, 5 * kNsPerSec);
  EXPECT_EQ(i.end, 15 * kNsPerSec);
  EXPECT_EQ(i.rate_factor, 0.5);
  EXPECT_EQ(i.factor_at(5 * kNsPerSec - 1), 1.0);
  EXPECT_EQ(i.factor_at(5 * kNsPerSec), 0.5);
  EXPECT_EQ(i.factor_at(15 * kNsPerSec), 1.0);
  for (const char* bad : {"", "5s:15s", "15s:5s:0.5", "5s:5s:0.5", "-1:5s:0.5", "0:5s:0",
                          "0:5s:1.5", "0:5s:x", "x:5s:0.5"}) {
    EXPECT_EQ(parse_interference(bad, &i, &error), -EINVAL) << bad;
    EXPECT_FALSE(error.empty());
  }
}

// 1000 B/s over one slot, no latency. A 1000 B object staged at 0 with the rate halved over
// [200 ms, 600 ms): 200 B by 200 ms, 200 B more by 600 ms, the last 600 B by 1.2 s.
TEST(Interference, HalvesTheRateForTheWindow) {
  SimStackConfig c;
  c.device = SimDeviceConfig{10'000, 1000.0, 1, 0, 1000.0, "lru"};
  c.provider = ProviderConfig{5000, 1000.0, 1000.0, 2 * kNsPerSec, 0};
  SimStack s(c);
  ASSERT_EQ(s.device.set_interference({200 * kMs, 600 * kMs, 0.5}), 0);
  ASSERT_EQ(s.device.add_object(1, 1000), 0);
  ASSERT_EQ(s.device.add_object(2, 1000), 0);
  ASSERT_EQ(s.device.stage(1), 0);
  s.driver.events().run_until(1199 * kMs);
  EXPECT_EQ(s.device.residency(1), Residency::kStaging);
  s.driver.events().run_until(1200 * kMs);
  EXPECT_EQ(s.device.residency(1), Residency::kResident);
  // After the window the full rate again: 1 s for the next 1000 B.
  ASSERT_EQ(s.device.stage(2), 0);
  s.driver.events().run_until(2199 * kMs);
  EXPECT_EQ(s.device.residency(2), Residency::kStaging);
  s.driver.events().run_until(2200 * kMs);
  EXPECT_EQ(s.device.residency(2), Residency::kResident);
}

TEST(Interference, RejectedByTheDeviceWhenInvalid) {
  SimStack s(SimStackConfig{});
  EXPECT_EQ(s.device.set_interference({0, kNsPerSec, 2.0}), -EINVAL);
  EXPECT_EQ(s.device.set_interference({-1, kNsPerSec, 0.5}), -EINVAL);
}

}  // namespace
}  // namespace tempo
