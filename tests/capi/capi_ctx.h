// A context made through the C ABI for the tests: a configuration with the given keys and
// the context built from it, both freed at the end.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "tempo/tempo.h"

using ConfigKeys = std::vector<std::pair<std::string, std::string>>;

struct Ctx {
  explicit Ctx(const ConfigKeys& kv) {
    EXPECT_EQ(tempo_config_new(&cfg), 0);
    for (const auto& [k, v] : kv)
      EXPECT_EQ(tempo_config_set(cfg, k.c_str(), v.c_str()), 0) << tempo_config_error(cfg);
    EXPECT_EQ(tempo_ctx_new(cfg, &ctx), 0) << tempo_config_error(cfg);
  }
  ~Ctx() {
    tempo_ctx_unref(ctx);
    tempo_config_free(cfg);
  }
  Ctx(const Ctx&) = delete;
  Ctx& operator=(const Ctx&) = delete;
  tempo_config* cfg = nullptr;
  tempo_ctx* ctx = nullptr;
};

// 10 KB fast tier, 1000 B/s, 2 slots, no latency, 5 KB budget: hand-checkable times.
inline ConfigKeys small_config(const char* policy) {
  return {{"fast_tier_bytes", "10000"},
          {"budget_bytes", "5000"},
          {"staging_rate", "1000"},
          {"staging_slots", "2"},
          {"op_latency", "0"},
          {"calibration_rate", "1000"},
          {"policy", policy}};
}
