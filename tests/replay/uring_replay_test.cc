// tempo-replay on the uring device: real objects in a store on disk, staged with io_uring
// into a DRAM fast tier, on the wall clock.
#include "serving_stack.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "experiments.h"
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
    o.device.fast_tier.bytes = 64ull << 20;
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

// The units of C: the uring device runs at 1/byte_scale of the model's bytes, and reports
// C and the bytes moved in the model's bytes again, as the sim device does at full scale.
// Three trace requests share 4 blocks of 16 tokens (2 MiB of Llama's KV each; 128 KiB on
// disk at byte scale 16). A slow 0.1 GiB/s device link makes the retrieval (8 MiB: 78 ms of
// the model's time on both devices, protected under demand) dominate the protected time,
// so the two devices' C agree within what real I/O adds, where C at 1/16 scale would be
// about 6% of the sim's.
// Three trace requests 100 ms apart sharing a 4-block prefix (Llama's 2 MiB blocks of 16
// tokens), demand only, over a 0.1 GiB/s device link, on the sim device; `dir` is made
// empty for the trace and a store.
ReplaySetup units_setup(const std::filesystem::path& dir) {
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  {
    std::ofstream t(dir / "trace.jsonl");
    t << R"({"timestamp": 0, "input_length": 72, "output_length": 2, "hash_ids": [1, 2, 3, 4]})"
      << "\n"
      << R"({"timestamp": 100, "input_length": 88, "output_length": 2, "hash_ids": [1, 2, 3, 4, 5]})"
      << "\n"
      << R"({"timestamp": 200, "input_length": 88, "output_length": 2, "hash_ids": [1, 2, 3, 4, 6]})"
      << "\n";
  }
  ReplaySetup s = default_setup();
  s.workload.name = "trace";
  s.workload.trace_path = (dir / "trace.jsonl").string();
  s.workload.trace_block_tokens = 16;
  s.policies = {"demand"};
  s.device_link_bps = 0.1 * double(1ull << 30);
  s.stack.device.capacity_bytes = 1ull << 30;  // a 64 MiB arena on the uring device
  s.stack.provider.budget_bytes = 512ull << 20;
  s.store_dir = (dir / "store").string();
  return s;
}

TEST(UringReplayUnits, CAndBytesAreInTheModelsBytesOnEveryDevice) {
  const auto dir = std::filesystem::path(TEMPO_TEST_SCRATCH) / "uring-units";
  ReplaySetup s = units_setup(dir);
  std::vector<ExperimentRow> sim, uring;
  std::string error;
  ASSERT_EQ(run_comparison(s, &sim, &error), 0) << error;
  s.device = "uring";
  s.byte_scale = 16;
  ASSERT_EQ(run_comparison(s, &uring, &error), 0) << error;
  ASSERT_EQ(sim.size(), 1u);
  ASSERT_EQ(uring.size(), 1u);
  const RunResult &a = sim[0].result, &b = uring[0].result;
  EXPECT_EQ(a.staged_bytes, 4u * (2u << 20));  // the shared blocks once, 2 MiB each
  EXPECT_EQ(b.staged_bytes, a.staged_bytes);
  EXPECT_EQ(b.copied_bytes, 2u * 4u * (128u << 10));  // what the machine really copied
  EXPECT_GT(a.summary.c_gib_s_per_req, 0);
  EXPECT_GE(b.summary.c_gib_s_per_req, 0.5 * a.summary.c_gib_s_per_req);
  std::filesystem::remove_all(dir);
}

// --speedup 8 runs the model's time 8 times as fast and reports the model's: the arrivals
// come back as the trace's (to the rounding of a division), and the TTFT of each request
// that hits the prefix (the first computes it) is at least its retrieval over the 0.1 GiB/s
// link (8 MiB: 78 ms of the model's time, 10 ms of the run's), which only a result left in
// the run's time would undercut.
TEST(UringReplayUnits, SpeedupReportsTheModelsTime) {
  const auto dir = std::filesystem::path(TEMPO_TEST_SCRATCH) / "uring-speedup";
  ReplaySetup s = units_setup(dir);
  s.device = "uring";
  s.speedup = 8;
  std::vector<ExperimentRow> rows;
  std::string error;
  ASSERT_EQ(run_comparison(s, &rows, &error), 0) << error;
  ASSERT_EQ(rows.size(), 1u);
  const RunResult& r = rows[0].result;
  ASSERT_EQ(r.requests.size(), 3u);
  const TimeNs retrieval = sec_to_ns(double(4u * (2u << 20)) / s.device_link_bps);
  for (size_t i = 0; i < r.requests.size(); ++i) {
    const RequestTiming& t = r.requests[i].timing;
    EXPECT_NEAR(double(t.arrival), double(i) * 100 * double(kNsPerMs), 8) << i;
    if (i > 0) {
      EXPECT_GE(t.first_token - t.arrival, retrieval) << i;
    }
  }
  EXPECT_GE(r.end_time, 200 * kNsPerMs + retrieval);
  std::filesystem::remove_all(dir);
}

TEST(UringReplayUnits, SpeedupIsRefusedOffTheUringDevice) {
  const auto dir = std::filesystem::path(TEMPO_TEST_SCRATCH) / "uring-speedup-sim";
  ReplaySetup s = units_setup(dir);
  s.speedup = 8;
  std::vector<ExperimentRow> rows;
  std::string error;
  EXPECT_EQ(run_comparison(s, &rows, &error), -EINVAL);
  EXPECT_NE(error.find("on the uring device only"), std::string::npos) << error;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tempo
