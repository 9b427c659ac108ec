#include "config/settings.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <map>
#include <string>

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
  EXPECT_EQ(s.uring.store_path, "/tmp/x");
  EXPECT_EQ(s.set("bogus", "1", &err), -EINVAL);
  EXPECT_EQ(err.rfind("unknown key 'bogus': accepted device, fast_tier_bytes", 0), 0u);
  EXPECT_EQ(s.set("tick", "0", &err), -EINVAL);
  // A 1 ns tick spun a CPU (10^9 controller passes per simulated second).
  EXPECT_EQ(s.set("tick", "999us", &err), -EINVAL);
  EXPECT_EQ(err,
            "invalid value '999us' for 'tick': accepted a duration of at least 1ms such as "
            "50ms, 2s");
  EXPECT_EQ(s.set("tick", "1ms", &err), 0);
  // An unknown eviction policy was accepted here and refused only when a context was made;
  // the study's policies (ewma, min, ...) are not the fast tier's.
  for (const char* bogus : {"bogus", "ewma", "min", ""}) {
    EXPECT_EQ(s.set("eviction", bogus, &err), -EINVAL) << bogus;
    EXPECT_EQ(err, "invalid value '" + std::string(bogus) +
                       "' for 'eviction': accepted one of lru reuse-frequency "
                       "reuse-frequency-persistent arc");
  }
  EXPECT_EQ(s.eviction, "lru");
  EXPECT_EQ(s.set("eviction", "arc", &err), 0);
  EXPECT_EQ(s.eviction, "arc");
  EXPECT_EQ(s.set("op_latency", "0", &err), 0);
  EXPECT_EQ(s.set("budget_bytes", "200GiB", &err), 0);
  EXPECT_EQ(s.validate(&err), -EINVAL);
  EXPECT_NE(err.find("must be below 'fast_tier_bytes'"), std::string::npos);
}

TEST(Settings, ClusterKeysAreCheckedAndNeedTheUringDevice) {
  Settings s;
  std::string err;
  EXPECT_EQ(s.cluster.backend, "off");
  EXPECT_EQ(s.cluster.pool, "tempo");
  EXPECT_EQ(s.cluster.client, "client.admin");
  EXPECT_EQ(s.cluster.prefix, "tempo/");
  EXPECT_EQ(s.cluster.op_timeout_s, 5.0);
  EXPECT_FALSE(s.cluster.keep_local);
  EXPECT_TRUE(is_setting_section("cluster"));
  EXPECT_EQ(s.set("cluster.backend", "redis", &err), -EINVAL);
  EXPECT_EQ(err, "invalid value 'redis' for 'cluster.backend': accepted off, rados");
  EXPECT_EQ(s.set("cluster.op_timeout_s", "0", &err), -EINVAL);
  EXPECT_EQ(err,
            "invalid value '0' for 'cluster.op_timeout_s': accepted a positive number of seconds "
            "such as 5, 0.5");
  EXPECT_EQ(s.set("cluster.pool", "", &err), -EINVAL);
  EXPECT_EQ(err, "invalid value '' for 'cluster.pool': accepted a non-empty name");
  EXPECT_EQ(s.cluster.pool, "tempo");  // unchanged
  EXPECT_EQ(s.set("cluster.op_timeout_s", "0.5", &err), 0);
  EXPECT_EQ(s.cluster.op_timeout_s, 0.5);
  EXPECT_EQ(s.set("cluster.backend", "rados", &err), 0);
  EXPECT_EQ(s.validate(&err), -EINVAL);  // device = sim
  EXPECT_EQ(err, "'cluster.backend' needs device = uring (the tier is below its store)");
  EXPECT_EQ(s.set("device", "uring", &err), 0);
  EXPECT_EQ(s.set("uring.store_path", "/tmp/x", &err), 0);
  EXPECT_EQ(s.validate(&err), 0);
}

TEST(Settings, DaemonSharesAreNamedWeights) {
  tempo::Settings s;
  std::string err;
  EXPECT_EQ(s.daemon.default_share, 1u);
  EXPECT_TRUE(s.daemon.shares.empty());
  ASSERT_EQ(s.set("daemon.shares", "small:1,big:3", &err), 0) << err;
  EXPECT_EQ(s.daemon.shares, (std::map<std::string, uint32_t>{{"small", 1}, {"big", 3}}));
  ASSERT_EQ(s.set("daemon.shares", "a:b:2", &err), 0) << err;  // the last colon splits
  EXPECT_EQ(s.daemon.shares.at("a:b"), 2u);
  for (const char* bad : {"small", "small:0", "small:1000001", ":1", "a:1,a:2", "a:1,", "a:x",
                          "a:-1", "aaaaaaaaaaaaaaaaaaaaaaaa:1"}) {
    EXPECT_EQ(s.set("daemon.shares", bad, &err), -EINVAL) << bad;
    EXPECT_NE(err.find("daemon.shares"), std::string::npos) << err;
  }
  EXPECT_EQ(s.daemon.shares.at("a:b"), 2u);  // unchanged by the refused values
  EXPECT_EQ(s.set("daemon.default_share", "0", &err), -EINVAL);
  EXPECT_EQ(s.set("daemon.default_share", "4", &err), 0);
  EXPECT_EQ(s.daemon.default_share, 4u);
}

TEST(Settings, UnknownKeysAreRefusedDottedOrNot) {
  for (const char* key : {"bogus", "kmod.bogus", "uring.bogus", "uring.", ".x", "Device", ""}) {
    Settings s;
    const Settings before = s;
    std::string err;
    EXPECT_EQ(s.set(key, "1", &err), -EINVAL) << key;
    EXPECT_EQ(err.rfind("unknown key '" + std::string(key) + "': accepted device, ", 0), 0u) << err;
    EXPECT_NE(err.find(", uring.store_path, "), std::string::npos) << err;
    EXPECT_TRUE(s.explicit_keys.empty());
    EXPECT_EQ(s.device, before.device);
  }
}

TEST(Settings, DefaultsAreTheTablesDefaults) {
  const Settings s;
  EXPECT_EQ(s.device, "sim");
  EXPECT_EQ(s.fast_tier_bytes, 100ull << 30);
  EXPECT_EQ(s.budget_bytes, 50ull << 30);
  EXPECT_EQ(s.policy.policy, CommitPolicy::kTempo);
  EXPECT_EQ(s.tick_ns, 50 * kNsPerMs);
  EXPECT_EQ(s.staging_rate_bps, 11.0 * (1ull << 30));
  EXPECT_EQ(s.staging_slots, 8u);
  EXPECT_EQ(s.op_latency_ns, 100 * kNsPerUs);
  EXPECT_EQ(s.demand_rate_bps, 2.0 * (1ull << 30));
  EXPECT_EQ(s.calibration_rate_bps, 11.0 * (1ull << 30));
  EXPECT_EQ(s.static_rate_bps, 11.0 * (1ull << 30));
  EXPECT_EQ(s.rate_window_ns, 2 * kNsPerSec);
  EXPECT_EQ(s.eviction, "lru");
  EXPECT_EQ(s.control_socket, "");
  EXPECT_EQ(s.uring.store_path, "");
  EXPECT_EQ(s.uring.store_capacity, 0u);
  EXPECT_FALSE(s.uring.store_sync);
  EXPECT_TRUE(s.uring.direct_io);
  EXPECT_EQ(s.uring.fast_tier, "dram");
  EXPECT_EQ(s.uring.dax_path, "auto");
  EXPECT_EQ(s.uring.numa_node, -1);
  EXPECT_TRUE(s.uring.huge_pages);
  EXPECT_TRUE(s.uring.prefault);
  EXPECT_EQ(s.uring.queue_depth, 16u);
  EXPECT_EQ(s.uring.request_bytes, 4u << 20);
  EXPECT_TRUE(s.uring.verify_checksums);
  EXPECT_TRUE(s.explicit_keys.empty());
  // Every key with a default reads it back through its own parser.
  for (const SettingKey& k : setting_keys()) {
    Settings t;
    std::string err;
    if (!k.default_value.empty()) {
      EXPECT_EQ(t.set(k.key, k.default_value, &err), 0) << err;
    }
    EXPECT_FALSE(k.doc.empty()) << k.key;
    EXPECT_NE(k.default_value.empty(), k.when_unset.empty()) << k.key;
    EXPECT_EQ(find_setting_key(k.key), &k);
  }
  EXPECT_TRUE(is_setting_section("uring"));
  EXPECT_TRUE(is_setting_section("kmod"));
  EXPECT_FALSE(is_setting_section("bogus"));
}

TEST(Settings, CalibrationRateFollowsStagingRateUntilGiven) {
  Settings s;
  std::string err;
  ASSERT_EQ(s.set("staging_rate", "1GiB", &err), 0);
  EXPECT_EQ(s.staging_rate_bps, double(1ull << 30));
  EXPECT_EQ(s.calibration_rate_bps, double(1ull << 30));
  ASSERT_EQ(s.set("calibration_rate", "3GiB", &err), 0);
  ASSERT_EQ(s.set("staging_rate", "2GiB", &err), 0);
  EXPECT_EQ(s.calibration_rate_bps, double(3ull << 30));  // given: it stays
  Settings t;
  ASSERT_EQ(t.set("calibration_rate", "5GiB", &err), 0);
  ASSERT_EQ(t.set("staging_rate", "1GiB", &err), 0);
  EXPECT_EQ(t.calibration_rate_bps, double(5ull << 30));  // either order
  ASSERT_EQ(t.set("staging_rate", "bad", &err), -EINVAL);
  EXPECT_EQ(t.staging_rate_bps, double(1ull << 30));
}

}  // namespace
}  // namespace tempo
