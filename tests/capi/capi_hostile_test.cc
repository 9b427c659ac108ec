// Hostile input through the C ABI (issue 15): times and sizes at the edges of int64 and
// uint64, a control-socket client that never reads, configuration paths that are not files.
// Each case once overflowed, hung or kept a stale error; Documentation/robustness.md.
#include <gtest/gtest.h>
#include <unistd.h>

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "../control/socket_client.h"
#include "capi_ctx.h"
#include "tempo/tempo.h"
#include "tempo/tempo_sim.h"

namespace {

constexpr int64_t kSec = 1'000'000'000;
constexpr int64_t kHorizon = int64_t{1} << 62;
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();

// The tempo policy on the small hand-checkable stack, plus `extra` keys.
ConfigKeys config(const ConfigKeys& extra = {}) {
  ConfigKeys kv = small_config("tempo");
  kv.insert(kv.end(), extra.begin(), extra.end());
  return kv;
}

// A PLANNED claim on one object put on the simulated SSD tier; 0 on failure.
tempo_claim_id planned(const Ctx& c, const tempo_object& o, int64_t ttu) {
  tempo_claim_id id = 0;
  if (tempo_sim_add_objects(c.ctx, &o, 1) != 0 || tempo_claim_report(c.ctx, &o, 1, ttu, &id) != 0)
    return 0;
  return id;
}

TEST(CApiHostile, WaitReadyForInt64MaxIsRefusedNotATimeoutAtOnce) {
  Ctx c(config());
  const tempo_object o{1, 100};
  const tempo_claim_id id = planned(c, o, 10 * kSec);
  ASSERT_NE(id, 0u);
  int outcome = -1;
  EXPECT_EQ(tempo_claim_wait_ready(c.ctx, id, kI64Max, &outcome), -EOVERFLOW);
  EXPECT_EQ(outcome, -1);
  EXPECT_EQ(tempo_ctx_now(c.ctx), 0);
  EXPECT_EQ(tempo_claim_wait_ready(c.ctx, id, kHorizon + 1, &outcome), -EOVERFLOW);
  // The largest accepted timeout waits as asked: the claim is ready at its TTU.
  EXPECT_EQ(tempo_claim_wait_ready(c.ctx, id, kHorizon, &outcome), 0);
  EXPECT_EQ(outcome, TEMPO_RETRIEVAL_READY);
  EXPECT_EQ(tempo_ctx_now(c.ctx), 10 * kSec);
}

TEST(CApiHostile, SimAdvancePastTheHorizonIsRefusedAndTheClockStays) {
  Ctx c(config());
  ASSERT_EQ(tempo_sim_advance(c.ctx, 5 * kSec), 0);
  EXPECT_EQ(tempo_sim_advance(c.ctx, kI64Max), -EOVERFLOW);
  EXPECT_EQ(tempo_ctx_now(c.ctx), 5 * kSec);
  EXPECT_EQ(tempo_sim_advance(c.ctx, kHorizon - 5 * kSec), 0);
  EXPECT_EQ(tempo_ctx_now(c.ctx), kHorizon);
  EXPECT_EQ(tempo_sim_advance(c.ctx, 1), -EOVERFLOW);
  EXPECT_EQ(tempo_ctx_now(c.ctx), kHorizon);
}

TEST(CApiHostile, TtuBeyondTheHorizonIsRefusedAndTheClaimKeepsItsTtu) {
  Ctx c(config());
  const tempo_object o{1, 100};
  const tempo_claim_id id = planned(c, o, 2 * kSec);
  ASSERT_NE(id, 0u);
  EXPECT_EQ(tempo_claim_revise(c.ctx, id, kI64Min), -EOVERFLOW);
  // INT64_MAX is TEMPO_TTU_UNKNOWN from 0.7 (CApiAbi07 checks it); one below is beyond the horizon.
  EXPECT_EQ(tempo_claim_revise(c.ctx, id, kI64Max - 1), -EOVERFLOW);
  EXPECT_EQ(tempo_claim_revise(c.ctx, id, -kHorizon - 1), -EOVERFLOW);
  tempo_claim_info info{};
  ASSERT_EQ(tempo_claim_query(c.ctx, id, &info, sizeof info), 0);
  EXPECT_EQ(info.state, TEMPO_CLAIM_PLANNED);
  EXPECT_EQ(info.ttu_ns, 2 * kSec);
  tempo_claim_id other = 0;
  EXPECT_EQ(tempo_claim_report(c.ctx, &o, 1, kI64Min, &other), -EOVERFLOW);
  EXPECT_EQ(tempo_claim_report(c.ctx, &o, 1, kHorizon + 1, &other), -EOVERFLOW);
  EXPECT_EQ(other, 0u);
  // At the horizon's edge the TTU is taken; it is where an unknown TTU is kept, so it reads
  // back as TEMPO_TTU_UNKNOWN (so does anything beyond 2^61 ns), one below 2^61 ns exactly.
  ASSERT_EQ(tempo_claim_revise(c.ctx, id, kHorizon), 0);
  ASSERT_EQ(tempo_claim_query(c.ctx, id, &info, sizeof info), 0);
  EXPECT_EQ(info.ttu_ns, TEMPO_TTU_UNKNOWN);
  ASSERT_EQ(tempo_claim_revise(c.ctx, id, kHorizon / 2), 0);
  ASSERT_EQ(tempo_claim_query(c.ctx, id, &info, sizeof info), 0);
  EXPECT_EQ(info.ttu_ns, kHorizon / 2);
  tempo_counters s{};
  ASSERT_EQ(tempo_ctx_stats(c.ctx, &s, sizeof s), 0);
  EXPECT_EQ(s.claims_reported, 1u);
}

TEST(CApiHostile, AManifestWhoseBytesWrapIsRefused) {
  Ctx c(config());
  const tempo_object two[] = {{1, uint64_t{1} << 63}, {2, uint64_t{1} << 63}};
  tempo_claim_id id = 0;
  EXPECT_EQ(tempo_claim_report(c.ctx, two, 2, kSec, &id), -EOVERFLOW);
  const tempo_object over[] = {{3, (uint64_t{1} << 50) - 10}, {4, 11}};
  EXPECT_EQ(tempo_claim_report(c.ctx, over, 2, kSec, &id), -EOVERFLOW);
  const std::vector<tempo_object> many((size_t{1} << 20) + 1, tempo_object{5, 1});
  EXPECT_EQ(tempo_claim_report(c.ctx, many.data(), many.size(), kSec, &id), -EINVAL);
  EXPECT_EQ(id, 0u);
  // At the limit a claim is accepted; it is planned, never committed (no such object).
  const tempo_object at[] = {{3, (uint64_t{1} << 50) - 10}, {4, 10}};
  ASSERT_EQ(tempo_claim_report(c.ctx, at, 2, kSec, &id), 0);
  tempo_claim_info info{};
  ASSERT_EQ(tempo_claim_query(c.ctx, id, &info, sizeof info), 0);
  EXPECT_EQ(info.bytes, uint64_t{1} << 50);
  tempo_counters s{};
  ASSERT_EQ(tempo_ctx_stats(c.ctx, &s, sizeof s), 0);
  EXPECT_EQ(s.claims_reported, 1u);
  EXPECT_EQ(s.ledger_bytes, 0u);
}

// A control-socket client that sends requests and never reads the replies: the last unref
// returns at once (it used to join a server thread blocked in send() forever).
TEST(CApiHostile, UnrefReturnsWhileAControlClientNeverReads) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("tempo_hostile_" + std::to_string(getpid()) + ".sock"))
                               .string();
  auto* c = new Ctx(config({{"control_socket", path}}));
  const int fd = connect_deaf_and_flood(path, "claims\nstats\n");
  ASSERT_GE(fd, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto closed = std::async(std::launch::async, [c] { delete c; });
  const bool in_time = closed.wait_for(std::chrono::seconds(1)) == std::future_status::ready;
  close(fd);  // unblocks a server stuck in send() so the test ends either way
  closed.wait();
  EXPECT_TRUE(in_time) << "tempo_ctx_unref waited on a client that never reads";
  EXPECT_FALSE(std::filesystem::exists(path));
}

// The uring device over a store in the build directory (a real file system).
class CApiHostileUring : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "capi_hostile_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = std::filesystem::absolute(tmpl).string();
    ASSERT_EQ(tempo_config_new(&cfg_), 0);
    for (const auto& [k, v] : ConfigKeys{{"device", "uring"},
                                         {"uring.store_path", dir_ + "/store"},
                                         {"budget_bytes", "1MiB"},
                                         {"uring.prefault", "false"}})
      ASSERT_EQ(tempo_config_set(cfg_, k.c_str(), v.c_str()), 0) << tempo_config_error(cfg_);
  }
  void TearDown() override {
    tempo_config_free(cfg_);
    std::filesystem::remove_all(dir_);
  }
  std::string dir_;
  tempo_config* cfg_ = nullptr;
};

// 8 TiB of DRAM fast tier: refused with the reason (it used to reach the OOM killer).
TEST_F(CApiHostileUring, AFastTierLargerThanMemoryIsRefused) {
  ASSERT_EQ(tempo_config_set(cfg_, "fast_tier_bytes", "8TiB"), 0);
  tempo_ctx* ctx = nullptr;
  EXPECT_EQ(tempo_ctx_new(cfg_, &ctx), -ENOMEM);
  EXPECT_EQ(ctx, nullptr);
  EXPECT_TRUE(std::string(tempo_config_error(cfg_))
                  .starts_with("fast_tier_bytes: 8796093022208 bytes is more than the memory "
                               "that can back it ("))
      << tempo_config_error(cfg_);
}

long resident_pages() {
  long size = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr || std::fscanf(f, "%ld %ld", &size, &resident) != 2) resident = -1;
  if (f != nullptr) std::fclose(f);
  return resident;
}

// uring.prefault=false: the arena fills as it is used; buffer registration used to pin, and
// so fault in, all of it at once (a 2 GiB tier was 2.1 GB of RSS).
TEST_F(CApiHostileUring, AnUnprefaultedFastTierIsNotFaultedInAtOnce) {
  ASSERT_EQ(tempo_config_set(cfg_, "fast_tier_bytes", "256MiB"), 0);
  const long before = resident_pages();
  tempo_ctx* ctx = nullptr;
  ASSERT_EQ(tempo_ctx_new(cfg_, &ctx), 0) << tempo_config_error(cfg_);
  const long grown_mib = (resident_pages() - before) * sysconf(_SC_PAGESIZE) >> 20;
  tempo_counters s{};
  ASSERT_EQ(tempo_ctx_stats(ctx, &s, sizeof s), 0);
  EXPECT_EQ(s.fast_tier_capacity_bytes, 256u << 20);
  EXPECT_LT(grown_mib, 32) << "RSS grew by " << grown_mib << " MiB";
  tempo_ctx_unref(ctx);
}

// A directory loaded as an empty file; /dev/zero read until memory ran out.
TEST(CApiHostile, LoadingADirectoryOrAnEndlessFileIsAnError) {
  tempo_config* cfg = nullptr;
  ASSERT_EQ(tempo_config_new(&cfg), 0);
  const std::string dir = std::filesystem::temp_directory_path().string();
  EXPECT_EQ(tempo_config_load(cfg, dir.c_str()), -EISDIR);
  EXPECT_EQ(std::string(tempo_config_error(cfg)), dir + ": cannot read: Is a directory");
  ASSERT_EQ(setenv("TEMPO_CONFIG", dir.c_str(), 1), 0);
  EXPECT_EQ(tempo_config_load(cfg, nullptr), -EISDIR);
  ASSERT_EQ(unsetenv("TEMPO_CONFIG"), 0);
  EXPECT_EQ(tempo_config_load(cfg, "/dev/zero"), -EFBIG);
  EXPECT_STREQ(tempo_config_error(cfg), "/dev/zero: larger than 1 MiB: not a configuration file");
  EXPECT_EQ(tempo_config_set(cfg, "calibration_file", "/dev/zero"), -EFBIG);
  tempo_config_free(cfg);
}

TEST(CApiHostile, ConfigErrorIsClearedByALaterSuccess) {
  tempo_config* cfg = nullptr;
  ASSERT_EQ(tempo_config_new(&cfg), 0);
  EXPECT_EQ(tempo_config_set(cfg, "policy", "sometimes"), -EINVAL);
  EXPECT_STRNE(tempo_config_error(cfg), "");
  EXPECT_EQ(tempo_config_set(cfg, "policy", "tempo"), 0);
  EXPECT_STREQ(tempo_config_error(cfg), "");

  EXPECT_EQ(tempo_config_load(cfg, "/nonexistent/tempo.conf"), -ENOENT);
  EXPECT_STRNE(tempo_config_error(cfg), "");
  EXPECT_EQ(tempo_config_load(cfg, nullptr), 0);
  EXPECT_STREQ(tempo_config_error(cfg), "");

  // A context refused for a reason that goes away (its socket served by another context),
  // then made from the same configuration: the message goes with the refusal.
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("tempo_hostile_cfg_" + std::to_string(getpid()) + ".sock"))
                               .string();
  auto* first = new Ctx(config({{"control_socket", path}}));
  ASSERT_EQ(tempo_config_set(cfg, "control_socket", path.c_str()), 0);
  tempo_ctx* ctx = nullptr;
  EXPECT_EQ(tempo_ctx_new(cfg, &ctx), -EADDRINUSE);
  EXPECT_EQ(std::string(tempo_config_error(cfg)),
            "control_socket: '" + path + "' is served by another process");
  delete first;
  ASSERT_EQ(tempo_ctx_new(cfg, &ctx), 0) << tempo_config_error(cfg);
  EXPECT_STREQ(tempo_config_error(cfg), "");
  tempo_ctx_unref(ctx);
  tempo_config_free(cfg);
}

}  // namespace
