// Each default is the settings table's: a component's struct, default-constructed, is what
// config/from_settings.h builds from the table's defaults (Settings{}). A default written
// again in a struct initialiser that drifts from the table fails here, naming the struct.
#include "config/from_settings.h"

#include <gtest/gtest.h>

namespace tempo {
namespace {

TEST(FromSettings, EveryStructDefaultIsTheTablesDefault) {
  const Settings table;
  EXPECT_EQ(ProviderConfig{}, provider_config(table));
  EXPECT_EQ(ControllerConfig{}, controller_config(table));
  EXPECT_EQ(StackConfig{}, stack_config(table));
  EXPECT_EQ(SimDeviceConfig{}, sim_device_config(table));
  EXPECT_EQ(ObjectStoreOptions{}, object_store_options(table));
  EXPECT_EQ(UringDeviceOptions{}, uring_device_options(table));
  EXPECT_EQ(FastTierOptions{}, uring_device_options(table).fast_tier);
  EXPECT_EQ(KmodDeviceOptions{}, kmod_device_options(table));
  const SimStackConfig sim = sim_stack_config(table);
  EXPECT_EQ(sim.device, SimDeviceConfig{});
  EXPECT_EQ(sim.provider, ProviderConfig{});
  EXPECT_EQ(sim.controller, ControllerConfig{});
  EXPECT_FALSE(sim.remote.has_value());
}

// What a key set in the settings reaches: each builder reads its keys, and only those.
TEST(FromSettings, KeysReachTheirComponents) {
  Settings s;
  std::string err;
  for (const auto& [key, value] :
       std::initializer_list<std::pair<const char*, const char*>>{{"fast_tier_bytes", "8GiB"},
                                                                  {"budget_bytes", "2GiB"},
                                                                  {"staging_rate", "3GiB"},
                                                                  {"static_rate", "5GiB"},
                                                                  {"staging_slots", "12"},
                                                                  {"uring.queue_depth", "64"},
                                                                  {"uring.fast_tier", "dax"},
                                                                  {"policy", "queue-2"},
                                                                  {"tick", "7ms"}})
    ASSERT_EQ(s.set(key, value, &err), 0) << key << ": " << err;
  const SimStackConfig sim = sim_stack_config(s);
  EXPECT_EQ(sim.device.capacity_bytes, 8ull << 30);
  EXPECT_EQ(sim.device.staging_rate_bps, 3.0 * (1ull << 30));
  EXPECT_EQ(sim.device.staging_slots, 12u);
  EXPECT_EQ(sim.provider.budget_bytes, 2ull << 30);
  // The staging rate moves where TTRs start, not TempoKV-Static's fixed rate.
  EXPECT_EQ(sim.provider.calibration_rate_bps, 3.0 * (1ull << 30));
  EXPECT_EQ(sim.provider.static_rate_bps, 5.0 * (1ull << 30));
  EXPECT_EQ(sim.provider.staging_slots, 0u);  // the sim device's own
  EXPECT_EQ(sim.controller.tick_ns, 7 * kNsPerMs);
  EXPECT_EQ(sim.controller.policy.queue_k, 2u);
  const UringDeviceOptions u = uring_device_options(s);
  EXPECT_EQ(u.queue_depth, 64u);
  EXPECT_EQ(u.fast_tier.bytes, 8ull << 30);  // given: a DAX tier of that size
  EXPECT_EQ(object_store_options(s).queue_depth, 64u);
  // A uring device's provider takes the explicit staging slots as its own queue.
  ASSERT_EQ(s.set("device", "uring", &err), 0);
  EXPECT_EQ(provider_config(s).staging_slots, 12u);
}

TEST(FromSettings, ADaxTierIsTheWholeDeviceUnlessASizeIsGiven) {
  Settings s;
  std::string err;
  ASSERT_EQ(s.set("uring.fast_tier", "dax", &err), 0);
  EXPECT_EQ(uring_device_options(s).fast_tier.bytes, 0u);
}

}  // namespace
}  // namespace tempo
