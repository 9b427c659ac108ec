// ABI 0.7 in client mode (device = daemon), as an engine links it (libtempo.so only): a claim
// reported before its TTU is known, the store sub-object, and the runtime side's projection,
// each through a tempod started for the test.
#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "tempo/tempo.h"
#include "tempo/tempo_sim.h"
#include "tempod_process.h"

namespace {

constexpr uint64_t kObjectBytes = 64 << 10;
constexpr int64_t kSecond = 1'000'000'000;

class CApiDaemon : public ::testing::Test {
 protected:
  void SetUp() override {
    files_ = tempo::test::make_tempod_dir("capi-daemon");
    ASSERT_FALSE(files_.dir.empty());
    daemon_ = tempo::test::spawn_tempod(TEMPOD_PATH, files_.dir);
    ASSERT_GT(daemon_, 0);
    // The daemon serves once its socket accepts a client; it starts in well under 20 s.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (client(&ctx_) != 0) {
      ASSERT_LT(std::chrono::steady_clock::now(), until) << "tempod does not serve";
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  void TearDown() override {
    tempo_ctx_unref(ctx_);
    tempo::test::stop_tempod(&daemon_);
    std::filesystem::remove_all(files_.dir);
  }
  int client(tempo_ctx** out) const {
    tempo_config* cfg = nullptr;
    EXPECT_EQ(tempo_config_new(&cfg), 0);
    EXPECT_EQ(tempo_config_set(cfg, "device", "daemon"), 0);
    EXPECT_EQ(tempo_config_set(cfg, "daemon.socket", files_.socket.c_str()), 0);
    const int r = tempo_ctx_new(cfg, out);
    tempo_config_unref(cfg);
    return r;
  }
  // Objects first..first+n-1 written through the daemon's store, as a manifest.
  std::vector<tempo_object> put(uint64_t first, uint64_t n) {
    tempo_store* store = nullptr;
    EXPECT_EQ(tempo_ctx_get_store(ctx_, &store), 0);
    std::vector<tempo_object> objs;
    const std::vector<unsigned char> data(kObjectBytes, 0x5A);
    for (uint64_t k = first; k < first + n; ++k) {
      EXPECT_EQ(tempo_store_write(store, k, data.data(), data.size()), 0);
      objs.push_back({k, kObjectBytes});
    }
    return objs;
  }

  tempo::test::TempodFiles files_;
  pid_t daemon_ = -1;
  tempo_ctx* ctx_ = nullptr;
};

TEST_F(CApiDaemon, TheDaemonsDeviceHandsOutItsStore) {
  const char* device = nullptr;
  ASSERT_EQ(tempo_ctx_get_device(ctx_, &device), 0);
  EXPECT_STREQ(device, "uring");
  put(1, 2);
  tempo_store* store = nullptr;
  ASSERT_EQ(tempo_ctx_get_store(ctx_, &store), 0);
  const uint64_t keys[] = {1, 2, 3};
  size_t prefix = 0;
  ASSERT_EQ(tempo_store_get_prefix(store, keys, 3, &prefix), 0);
  EXPECT_EQ(prefix, 2u);
  tempo_sim* sim = nullptr;
  EXPECT_EQ(tempo_ctx_get_sim(ctx_, &sim), -EOPNOTSUPP);
}

// Reported at the hit with TEMPO_TTU_UNKNOWN: the daemon keeps it PLANNED through its ticks,
// it reads back unknown, and it commits once a TTU is given.
TEST_F(CApiDaemon, AClaimWithAnUnknownTtuWaitsForOneThroughTempod) {
  const std::vector<tempo_object> objs = put(10, 4);
  tempo_claim_id id = 0;
  ASSERT_EQ(tempo_claim_report(ctx_, objs.data(), objs.size(), TEMPO_TTU_UNKNOWN, &id), 0);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(tempo_ctx_tick(ctx_), 0);
  tempo_claim_info info{};
  ASSERT_EQ(tempo_claim_get_info(ctx_, id, &info, sizeof info), 0);
  EXPECT_EQ(info.state, TEMPO_CLAIM_PLANNED);
  EXPECT_EQ(info.ttu_ns, TEMPO_TTU_UNKNOWN);
  EXPECT_EQ(info.laxity_ns, TEMPO_LAXITY_NONE);
  EXPECT_EQ(info.bytes, 4 * kObjectBytes);
  // A TTU of now: its laxity is gone, it commits at once.
  ASSERT_EQ(tempo_claim_revise(ctx_, id, 0), 0);
  ASSERT_EQ(tempo_claim_get_info(ctx_, id, &info, sizeof info), 0);
  EXPECT_NE(info.state, TEMPO_CLAIM_PLANNED);
  EXPECT_NE(info.ttu_ns, TEMPO_TTU_UNKNOWN);
  tempo_retrieval_t outcome = TEMPO_RETRIEVAL_ORDINARY;
  ASSERT_EQ(tempo_claim_wait(ctx_, id, 30 * kSecond, &outcome), 0);
  EXPECT_EQ(outcome, uint32_t{TEMPO_RETRIEVAL_READY});
  ASSERT_EQ(tempo_claim_transfer_begin(ctx_, id), 0);
  ASSERT_EQ(tempo_claim_transfer_end(ctx_, id), 0);
}

// The runtime side over a daemon: a claim reported unknown takes its TTU from the step, and
// the request without a claim is projected too.
TEST_F(CApiDaemon, TheRuntimeSideGivesAnUnknownClaimItsTtuThroughTempod) {
  const std::vector<tempo_object> objs = put(20, 2);
  tempo_claim_id id = 0;
  ASSERT_EQ(tempo_claim_report(ctx_, objs.data(), objs.size(), TEMPO_TTU_UNKNOWN, &id), 0);
  tempo_runtime_config rc{};
  rc.costs.prefill_pass_ns = 1e6;
  rc.costs.prefill_token_ns = 1e4;
  rc.costs.decode_pass_ns = 1e6;
  rc.costs.retrieval_bps = 1e9;
  rc.max_active = 1;
  rc.generation_limit = 16;
  tempo_runtime* rt = nullptr;
  ASSERT_EQ(tempo_runtime_new(ctx_, &rc, &rt), 0);
  const tempo_running_seq running{100, 100, 1, 8, 0};  // 7 decode steps still to run
  const tempo_waiting_seq waiting[] = {{1000, 0, TEMPO_NO_CLAIM, 0},
                                       {1000, 500, id, 2 * kObjectBytes}};
  tempo_step step{};
  step.running = &running;
  step.running_count = 1;
  step.waiting = waiting;
  step.waiting_count = 2;
  ASSERT_EQ(tempo_runtime_step(rt, &step), 0);
  tempo_claim_info info{};
  ASSERT_EQ(tempo_claim_get_info(ctx_, id, &info, sizeof info), 0);
  EXPECT_NE(info.ttu_ns, TEMPO_TTU_UNKNOWN);
  EXPECT_GT(info.ttu_ns, 0);
  tempo_waiting_projection p[2];
  size_t count = 0;
  ASSERT_EQ(tempo_runtime_get_projection(rt, p, sizeof p[0], 2, &count), 0);
  ASSERT_EQ(count, 2u);
  EXPECT_EQ(p[0].flags, 0u);
  EXPECT_EQ(p[1].flags, TEMPO_PROJECTION_F_CLAIM);
  EXPECT_GT(p[0].ttu_ns, 0);            // behind the running request's 7 decode steps
  EXPECT_GT(p[1].ttu_ns, p[0].ttu_ns);  // and behind the request without a claim
  // The claim's TTU was given at the step and has aged on the wall clock since; the
  // projection was asked later still.
  EXPECT_LE(p[1].ttu_ns, info.ttu_ns);
  tempo_runtime_unref(rt);
}

}  // namespace
