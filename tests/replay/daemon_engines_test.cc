// tempo-replay -d daemon: each engine a process of its own against a real tempod (started
// per policy on a store in the build tree), its claims through the daemon's socket.
#include "daemon_engines.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <stdexcept>

#include "experiments.h"

namespace tempo {
namespace {

struct FixedCosts final : StepCosts {
  TimeNs prefill_time(uint64_t, uint64_t) const override { return kNsPerMs; }
  TimeNs decode_step_time(uint64_t, uint64_t) const override { return kNsPerMs; }
  TimeNs retrieval_time(uint64_t) const override { return kNsPerMs; }
};

class DaemonEngines : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = std::filesystem::path(TEMPO_TEST_SCRATCH) / "daemon-engines-store";
    std::filesystem::remove_all(store_);
  }
  void TearDown() override { std::filesystem::remove_all(store_); }

  // Six NarrativeQA documents at 100% on three engines, round robin: two requests per
  // engine, 100 ms apart in all, one active sequence each, at most 32 output tokens. Objects,
  // fast tier (100 MiB) and budget (50 MiB) at 1/1024 of the model's: the six claims come to
  // 26 MiB, an engine's two to at most 13 MiB, within its share (a third of the budget
  // while all three have live claims), so none is ever deferred.
  ReplaySetup setup() const {
    ReplaySetup s = default_setup();
    s.device = "daemon";
    s.tempod = TEMPOD_PATH;
    s.store_dir = store_.string();
    s.byte_scale = 1024;
    s.workload.documents = 6;
    s.workload.arrivals.interval = 100 * kNsPerMs;
    s.workload.output_cap = 32;
    s.engine.generation_limit = 32;
    s.engine.max_active = 1;
    s.deployment.engines_per_host = 3;
    s.policies = {"immediate", "tempo"};
    return s;
  }

  std::filesystem::path store_;
};

TEST_F(DaemonEngines, ThreeEngineProcessesFinishEveryRequestUnderEachPolicy) {
  std::vector<ExperimentRow> rows;
  std::string error;
  // Each run also checks that tempod's ledger and pins are back to 0 once the engine
  // processes ended (it throws otherwise, and run_comparison fails).
  ASSERT_EQ(run_comparison(setup(), &rows, &error), 0) << error;
  ASSERT_EQ(rows.size(), 2u);
  for (const ExperimentRow& row : rows) {
    const RunResult& r = row.result;
    SCOPED_TRACE(r.policy);
    ASSERT_EQ(r.requests.size(), 6u);
    EXPECT_EQ(r.summary.completed, 6u);
    EXPECT_EQ(r.rejected, 0u);
    for (size_t i = 0; i < r.requests.size(); ++i) {
      const RequestRecord& q = r.requests[i];
      EXPECT_EQ(q.engine, i % 3) << "round robin";
      EXPECT_GT(q.timing.output_tokens, 0u);
      EXPECT_LE(q.timing.output_tokens, 32u);
      EXPECT_GT(q.timing.first_token, q.timing.arrival);
      EXPECT_GE(q.timing.finish, q.timing.first_token);
      // Every document is in the store: each request's hit is staged through the daemon,
      // transferred, and its claim released at the transfer's end.
      EXPECT_EQ(q.path, RetrievalPath::kStaged);
      EXPECT_GT(q.kv_bytes, 0u);
      EXPECT_GE(q.claim.committed, q.claim.reported);
      EXPECT_GE(q.claim.ready, q.claim.committed);
      EXPECT_GE(q.claim.ended, q.claim.transfer_begin);
    }
    ASSERT_EQ(r.engines.size(), 3u);
    for (const ServingSummary& e : r.engines) {
      EXPECT_EQ(e.completed, 2u);
      EXPECT_GT(e.p95_ttft_s, 0);
    }
    // The transfers read the daemon's fast tier in place: the bytes of every hit.
    uint64_t hits = 0;
    for (const RequestRecord& q : r.requests) hits += q.kv_bytes;
    EXPECT_EQ(r.copied_bytes, hits);
    EXPECT_GT(r.staged_bytes, 0u);
    EXPECT_EQ(r.deferred_claims, 0u);
    EXPECT_GT(r.summary.c_gib_s_per_req, 0);
  }
  // By construction: behind each engine's one slot, its second request waits at least the
  // first's retrieval, prefill and decode (modelled: hundreds of ms). immediate protects their
  // claims from arrival; tempo commits about a TTR (milliseconds for these bytes) before admission;
  // both release at the transfer, so immediate holds more byte-time.
  EXPECT_GT(rows[0].result.summary.c_gib_s_per_req, rows[1].result.summary.c_gib_s_per_req);
}

TEST_F(DaemonEngines, RefusesWhatHasNoDaemonForm) {
  ReplaySetup s = setup();
  s.policies = {"dax-l1"};
  std::vector<ExperimentRow> rows;
  std::string error;
  EXPECT_EQ(run_comparison(s, &rows, &error), -EINVAL);
  EXPECT_NE(error.find("dax-l1"), std::string::npos) << error;
}

TEST_F(DaemonEngines, AMissingDaemonFailsTheRunWithItsReason) {
  ReplaySetup s = setup();
  s.tempod = store_.string() + "/no-such-tempod";
  s.policies = {"tempo"};
  std::vector<ExperimentRow> rows;
  std::string error;
  EXPECT_EQ(run_comparison(s, &rows, &error), -EIO);
  EXPECT_NE(error.find("tempod did not start"), std::string::npos) << error;
  EXPECT_NE(error.find("no-such-tempod --version' did not answer as tempod (exit status 127)"),
            std::string::npos)
      << error;
  EXPECT_TRUE(rows.empty());
}

// `--tempod /bin/false` wrote the whole store (3.4 GB for the default comparison) before it
// found that the daemon does not start: the binary is checked first, and no store is made.
TEST_F(DaemonEngines, ADaemonThatIsNoTempodIsFoundBeforeTheStoreIsWritten) {
  for (const char* binary : {"/bin/false", "/bin/true"}) {
    ReplaySetup s = setup();
    s.tempod = binary;
    s.policies = {"tempo"};
    std::vector<ExperimentRow> rows;
    std::string error;
    EXPECT_EQ(run_comparison(s, &rows, &error), -EIO) << binary;
    EXPECT_NE(error.find("tempod did not start: '" + std::string(binary) +
                         " --version' did not answer as tempod"),
              std::string::npos)
        << error;
    EXPECT_FALSE(std::filesystem::exists(store_)) << binary << ": a store was written";
  }
}

TEST_F(DaemonEngines, AnEngineProcessThatFailsFailsTheRun) {
  // Engine processes refuse a configuration without active sequences once connected and
  // told to start: each exits 1 with its reason, and the run says which one failed.
  EngineConfig e;
  e.policy = "tempo";
  e.max_active = 0;
  ReplayWorkload w;
  for (uint64_t i = 0; i < 2; ++i) {
    ReplayRequest q;
    q.id = i;
    q.prompt_tokens = 64;
    w.requests.push_back(q);
  }
  DaemonRunOptions o;
  o.tempod = TEMPOD_PATH;
  o.store_dir = store_.string();
  o.fast_tier_bytes = 64ull << 20;
  o.budget_bytes = 8ull << 20;
  o.calibration_rate_bps = 1e9;
  o.engines = 2;
  const FixedCosts costs;
  try {
    run_daemon_engines(w, e, costs, o);
    ADD_FAILURE() << "the run succeeded";
  } catch (const std::runtime_error& ex) {
    EXPECT_STREQ(ex.what(), "engine 0 failed (exit status 1)");
  }
}

}  // namespace
}  // namespace tempo
