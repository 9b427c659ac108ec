// tempo-replay on the uring device: real objects in a store on disk, staged with io_uring
// into a DRAM fast tier, on the wall clock.
#include "serving_stack.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "serving_engine.h"

namespace tempo {
namespace {

struct FastCosts final : StepCosts {
  TimeNs prefill_time(uint64_t, uint64_t) const override { return kNsPerMs; }
  TimeNs decode_step_time(uint64_t, uint64_t) const override { return kNsPerMs; }
  TimeNs retrieval_time(uint64_t) const override { return kNsPerMs; }
};

class UringReplay : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(TEMPO_TEST_SCRATCH) / "uring-replay-store";
    std::filesystem::remove_all(dir_);
    UringBackendOptions o;
    o.store_dir = dir_.string();
    o.fast_tier_bytes = 64ull << 20;
    std::string error;
    ASSERT_EQ(UringBackend::create(o, &backend_, &error), 0) << error;
  }
  void TearDown() override {
    backend_.reset();
    std::filesystem::remove_all(dir_);
  }

  // Three requests, the second and third sharing the first's 4-chunk prefix.
  static ReplayWorkload workload() {
    ReplayWorkload w;
    for (uint64_t i = 0; i < 3; ++i) {
      ReplayRequest r;
      r.id = i;
      r.arrival = static_cast<TimeNs>(i) * 20 * kNsPerMs;
      r.chunk_tokens = 16;
      r.prompt_tokens = 16 * 4 + 8;
      for (ObjectKey k = 1; k <= 4; ++k) r.prefix_chunks.push_back({k, 1 << 20});
      r.output_tokens = 4;
      w.requests.push_back(r);
    }
    for (ObjectKey k = 1; k <= 4; ++k) w.preloaded.push_back({k, 1 << 20});
    return w;
  }

  RunResult run(const char* policy) {
    ProviderConfig p{32ull << 20, 1e9, 1e9, kNsPerSec, 0};
    ControllerConfig c{*parse_policy(std::string(policy) == "dax-l1" ? "demand" : policy),
                       10 * kNsPerMs};
    UringServingStack st(*backend_, StackConfig{p, c});
    FastCosts costs;
    return run_serving(workload(), st, EngineConfig{policy, 4, 4}, costs);
  }

  std::filesystem::path dir_;
  std::unique_ptr<UringBackend> backend_;
};

TEST_F(UringReplay, StagesOnceCopiesEveryTransferAndReleasesEverything) {
  const RunResult r = run("tempo");
  ASSERT_EQ(r.requests.size(), 3u);
  for (const RequestRecord& q : r.requests) {
    EXPECT_GE(q.timing.first_token, q.timing.arrival);
    EXPECT_EQ(q.timing.output_tokens, 4u);
    EXPECT_EQ(q.path, RetrievalPath::kStaged);
  }
  EXPECT_EQ(r.staged_bytes, 4u << 20);        // the shared prefix is read once
  EXPECT_EQ(r.copied_bytes, 3 * (4u << 20));  // and copied out for each request
  EXPECT_GT(r.summary.c_gib_s_per_req, 0);
  EXPECT_EQ(backend_->device().stats().pins, 0u);  // run_serving also checks the ledger
}

TEST_F(UringReplay, DaxL1ReadsThroughTheMemoryPathAndStagesNothing) {
  const RunResult r = run("dax-l1");
  EXPECT_EQ(r.staged_bytes, 0u);
  EXPECT_EQ(r.summary.c_gib_s_per_req, 0);
  for (const RequestRecord& q : r.requests) EXPECT_EQ(q.path, RetrievalPath::kDaxL1);
  // The first request faults all 4 MiB in granule by granule; the others hit.
  EXPECT_EQ(r.demand_bytes, 4u << 20);
}

TEST_F(UringReplay, EachRunStartsFromAnEmptyFastTier) {
  run("immediate");
  const RunResult again = run("immediate");
  EXPECT_EQ(again.staged_bytes, 4u << 20);
}

}  // namespace
}  // namespace tempo
