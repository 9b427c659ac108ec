#include "config/config_file.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

namespace tempo {
namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("tempo_cfg_" + std::to_string(::getpid()) + "_" + name))
                               .string();
  std::ofstream(path) << text;
  return path;
}

TEST(ConfigFile, ParsesKeysSectionsCommentsAndQuotes) {
  Settings s;
  std::string err;
  const char* text =
      "# a comment\n"
      "device = uring\n"
      "policy=queue-3   # inline comment\n"
      "fast_tier_bytes = 8GiB\n"
      "budget_bytes = \"4GiB\"\n"
      "\n"
      "[uring]\n"
      "store_path = /var/lib/tempo/store#1\n"
      "queue_depth = 32\n"
      "[tempo]\n"
      "tick = 20ms\n";
  ASSERT_EQ(load_config_text(s, text, "t.conf", &err), 0) << err;
  EXPECT_EQ(s.device, "uring");
  EXPECT_EQ(s.policy.queue_k, 3u);
  EXPECT_EQ(s.fast_tier_bytes, 8ull << 30);
  EXPECT_EQ(s.budget_bytes, 4ull << 30);
  EXPECT_EQ(s.uring.store_path, "/var/lib/tempo/store#1");  // '#' not after whitespace
  EXPECT_EQ(s.uring.queue_depth, 32u);
  EXPECT_EQ(s.tick_ns, 20 * kNsPerMs);
  EXPECT_TRUE(s.is_explicit("uring.queue_depth"));
}

TEST(ConfigFile, ErrorsNameFileLineKeyAndAcceptedValues) {
  Settings s;
  std::string err;
  EXPECT_EQ(load_config_text(s, "policy = tempo\nstaging_slots = 0\n", "a.conf", &err), -EINVAL);
  EXPECT_EQ(err,
            "a.conf:2: invalid value '0' for 'staging_slots': accepted an integer from 1 to 4096");
  EXPECT_EQ(s.policy.policy, CommitPolicy::kTempo);  // unchanged: nothing applied
  EXPECT_EQ(load_config_text(s, "\n\nnot a setting\n", "b.conf", &err), -EINVAL);
  EXPECT_EQ(err, "b.conf:3: expected 'key = value', got 'not a setting'");
  EXPECT_EQ(load_config_text(s, "[nvme]\n", "c.conf", &err), -EINVAL);
  EXPECT_EQ(err, "c.conf:1: unknown section '[nvme]': accepted [tempo], [uring]");
  EXPECT_EQ(load_config_text(s, "[uring]\nfast_tier = hbm\n", "d.conf", &err), -EINVAL);
  EXPECT_EQ(err, "d.conf:2: invalid value 'hbm' for 'uring.fast_tier': accepted dram, dax");
  EXPECT_EQ(load_config_text(s, "uring.bogus = 1\n", "e.conf", &err), -EINVAL);
  EXPECT_EQ(err.rfind("e.conf:1: unknown key 'uring.bogus': accepted device, ", 0), 0u);
  EXPECT_EQ(load_config_file(s, "/nonexistent/tempo.conf", &err), -ENOENT);
  EXPECT_EQ(err, "/nonexistent/tempo.conf: cannot read: No such file or directory");
}

TEST(ConfigFile, EnvironmentOverridesTheFile) {
  Settings s;
  std::string err;
  ASSERT_EQ(load_config_text(s, "policy = tempo\nuring.store_path = /a\n", "f", &err), 0);
  std::map<std::string, std::string> env = {
      {"TEMPO_POLICY", "immediate"}, {"TEMPO_URING_STORE_PATH", "/b"}, {"TEMPO_UNRELATED", "x"}};
  auto lookup = [&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  ASSERT_EQ(apply_environment(s, lookup, &err), 0) << err;
  EXPECT_EQ(s.policy.policy, CommitPolicy::kImmediate);
  EXPECT_EQ(s.uring.store_path, "/b");
  EXPECT_EQ(environment_name("uring.store_path"), "TEMPO_URING_STORE_PATH");
  env = {{"TEMPO_TICK", "soon"}};
  EXPECT_EQ(apply_environment(s, lookup, &err), -EINVAL);
  EXPECT_EQ(
      err,
      "TEMPO_TICK: invalid value 'soon' for 'tick': accepted a duration of at least 1ms such as "
      "50ms, 2s");
}

TEST(ConfigFile, CalibrationFillsOnlyKeysNotGivenExplicitly) {
  const std::string cal =
      write_temp("cal", "# measured\ncalibration_rate = 3GiB\ndemand_rate = 1GiB\n");
  Settings s;
  std::string err;
  ASSERT_EQ(s.set("demand_rate", "5GiB", &err), 0);
  ASSERT_EQ(s.set("calibration_file", cal, &err), 0) << err;
  EXPECT_EQ(s.calibration_rate_bps, double(3ull << 30));
  EXPECT_EQ(s.demand_rate_bps, double(5ull << 30));       // explicit wins
  ASSERT_EQ(s.set("calibration_rate", "7GiB", &err), 0);  // later explicit wins too
  EXPECT_EQ(s.calibration_rate_bps, double(7ull << 30));
  const std::string bad = write_temp("bad", "policy = demand\n");
  EXPECT_EQ(s.set("calibration_file", bad, &err), -EINVAL);
  EXPECT_EQ(err, bad +
                     ":1: 'policy' is not a calibration key: accepted calibration_rate, "
                     "static_rate, demand_rate, staging_rate");
  std::remove(cal.c_str());
  std::remove(bad.c_str());
}

}  // namespace
}  // namespace tempo
