#include "config/settings.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace tempo {
namespace {

TEST(Settings, ParsesBytesWithUnits) {
  EXPECT_EQ(parse_bytes("4096"), 4096);
  EXPECT_EQ(parse_bytes("64KiB"), 64 << 10);
  EXPECT_EQ(parse_bytes("8GiB"), 8ll << 30);
  EXPECT_EQ(parse_bytes("1.5GB"), 1'500'000'000);
  EXPECT_EQ(parse_bytes("0.5GiB"), 512ll << 20);
  for (const char* bad : {"", "GiB", "12 GiB", "-4", "1.5", "3XB", "1e3", "99999999TiB"})
    EXPECT_EQ(parse_bytes(bad), -1) << bad;
}

TEST(Settings, ParsesDurations) {
  EXPECT_EQ(parse_duration("50ms"), 50 * kNsPerMs);
  EXPECT_EQ(parse_duration("2s"), 2 * kNsPerSec);
  EXPECT_EQ(parse_duration("100us"), 100 * kNsPerUs);
  EXPECT_EQ(parse_duration("7"), 7 * kNsPerMs);  // plain numbers are milliseconds
  for (const char* bad : {"", "ms", "5 ms", "5min", "-1s"})
    EXPECT_EQ(parse_duration(bad), -1) << bad;
}

TEST(Settings, SetValidatesAndNamesTheKey) {
  Settings s;
  std::string err;
  EXPECT_EQ(s.set("policy", "queue-2", &err), 0);
  EXPECT_EQ(s.policy.queue_k, 2u);
  EXPECT_EQ(s.set("staging_slots", "0", &err), -EINVAL);
  EXPECT_EQ(err, "invalid value '0' for 'staging_slots': accepted an integer from 1 to 4096");
  EXPECT_EQ(s.staging_slots, 8u);  // unchanged
  EXPECT_EQ(s.set("device", "nvme", &err), -EINVAL);
  EXPECT_EQ(err, "invalid value 'nvme' for 'device': accepted sim, uring, kmod, daemon");
  EXPECT_EQ(s.set("uring.store_path", "/tmp/x", &err), 0);
  EXPECT_EQ(s.extra.at("uring.store_path"), "/tmp/x");
  EXPECT_EQ(s.set("bogus", "1", &err), -EINVAL);
  EXPECT_EQ(err.rfind("unknown key 'bogus': accepted device, fast_tier_bytes", 0), 0u);
  EXPECT_EQ(s.set("tick", "0", &err), -EINVAL);
  EXPECT_EQ(s.set("op_latency", "0", &err), 0);
  EXPECT_EQ(s.set("budget_bytes", "200GiB", &err), 0);
  EXPECT_EQ(s.validate(&err), -EINVAL);
  EXPECT_NE(err.find("must be below 'fast_tier_bytes'"), std::string::npos);
}

}  // namespace
}  // namespace tempo
