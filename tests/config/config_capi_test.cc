// The settings through the C ABI, as an engine sets them: a sim device configured only by
// its staging_rate projects TTRs at that rate (calibration_rate follows it until given).
#include <gtest/gtest.h>

#include <cerrno>
#include <string>

#include "tempo/tempo.h"

namespace {

constexpr int64_t kSec = 1'000'000'000;

// The laxity (TTU - TTR) of a fresh claim on one 1 GiB object with a 10 s TTU, reported
// at time 0 on a sim context with these settings.
int64_t laxity_of_one_gib(std::initializer_list<std::pair<const char*, const char*>> kv) {
  tempo_config* cfg = nullptr;
  tempo_ctx* ctx = nullptr;
  EXPECT_EQ(tempo_config_new(&cfg), 0);
  for (auto [k, v] : kv) EXPECT_EQ(tempo_config_set(cfg, k, v), 0) << tempo_config_error(cfg);
  for (auto [k, v] : {std::pair{"fast_tier_bytes", "8GiB"},
                      {"budget_bytes", "4GiB"},
                      {"op_latency", "0"},
                      {"policy", "tempo"}})
    EXPECT_EQ(tempo_config_set(cfg, k, v), 0) << tempo_config_error(cfg);
  EXPECT_EQ(tempo_ctx_new(cfg, &ctx), 0) << tempo_config_error(cfg);
  tempo_config_free(cfg);
  const tempo_object obj{1, 1ull << 30};
  EXPECT_EQ(tempo_sim_add_objects(ctx, &obj, 1), 0);
  tempo_claim_id id = 0;
  EXPECT_EQ(tempo_claim_report(ctx, &obj, 1, 10 * kSec, &id), 0);
  tempo_claim_info info{};
  EXPECT_EQ(tempo_claim_query(ctx, id, &info), 0);
  EXPECT_EQ(info.state, TEMPO_CLAIM_PLANNED);
  tempo_ctx_unref(ctx);
  return info.laxity_ns;
}

TEST(ConfigCApi, StagingRateAloneGivesTheTtrOfThatRate) {
  EXPECT_EQ(laxity_of_one_gib({{"staging_rate", "1GiB"}}), 9 * kSec);
  EXPECT_EQ(laxity_of_one_gib({{"staging_rate", "1GiB"}, {"calibration_rate", "2GiB"}}),
            kSec * 19 / 2);
  EXPECT_EQ(laxity_of_one_gib({{"calibration_rate", "2GiB"}, {"staging_rate", "1GiB"}}),
            kSec * 19 / 2);
}

TEST(ConfigCApi, UnknownKeysAreEinvalWithTheirName) {
  tempo_config* cfg = nullptr;
  ASSERT_EQ(tempo_config_new(&cfg), 0);
  for (const char* key : {"bogus", "kmod.bogus", "uring.bogus"}) {
    EXPECT_EQ(tempo_config_set(cfg, key, "1"), -EINVAL) << key;
    EXPECT_EQ(std::string(tempo_config_error(cfg)).rfind(std::string("unknown key '") + key, 0), 0u)
        << tempo_config_error(cfg);
  }
  tempo_config_free(cfg);
}

}  // namespace
