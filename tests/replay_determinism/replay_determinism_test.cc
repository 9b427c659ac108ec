// tempo-replay's determinism guarantee under the sim device: the same setup and seed give
// the same numbers, run after run, whatever else ran before in the process; the CSVs of an
// experiment are byte-identical; and the seed is what decides the workload.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "experiments.h"
#include "same_requests.h"

namespace tempo {
namespace {

std::vector<ExperimentRow> compare(const ReplaySetup& s) {
  std::vector<ExperimentRow> rows;
  std::string error;
  EXPECT_EQ(run_comparison(s, &rows, &error), 0) << error;
  return rows;
}

void expect_same_run(const RunResult& a, const RunResult& b, bool attempts = true) {
  EXPECT_EQ(a.policy, b.policy);
  EXPECT_EQ(a.end_time, b.end_time);
  EXPECT_EQ(a.ledger_byte_seconds, b.ledger_byte_seconds);
  EXPECT_EQ(a.summary.p95_ttft_s, b.summary.p95_ttft_s);
  EXPECT_EQ(a.summary.throughput_tps, b.summary.throughput_tps);
  EXPECT_EQ(a.summary.c_gib_s_per_req, b.summary.c_gib_s_per_req);
  if (attempts) {
    EXPECT_EQ(a.capacity_deferrals, b.capacity_deferrals);
  }
  EXPECT_EQ(a.deferred_claims, b.deferred_claims);
  EXPECT_EQ(a.staged_bytes, b.staged_bytes);
  EXPECT_EQ(a.demand_bytes, b.demand_bytes);
  expect_same_requests(a, b, attempts);
}

// A setup with some pressure, so that the policies take different decisions: a 25 GiB
// fast tier with a 12.5 GiB budget, and dax-l1 alongside the seven.
ReplaySetup pressured() {
  ReplaySetup s = default_setup();
  s.stack.device.capacity_bytes = 25ull << 30;
  s.stack.provider.budget_bytes = 25ull << 29;
  s.policies = all_policies();
  s.policies.push_back("dax-l1");
  return s;
}

TEST(ReplayDeterminism, SameSeedSameNumbers) {
  const std::vector<ExperimentRow> a = compare(pressured());
  const std::vector<ExperimentRow> b = compare(pressured());
  ASSERT_EQ(a.size(), 8u);
  ASSERT_EQ(b.size(), 8u);
  for (size_t i = 0; i < a.size(); ++i) expect_same_run(a[i].result, b[i].result);
}

TEST(ReplayDeterminism, ARunDoesNotDependOnWhatRanBefore) {
  const std::vector<ExperimentRow> all = compare(pressured());
  ReplaySetup alone = pressured();
  alone.policies = {"tempo", "tempo-risk"};
  const std::vector<ExperimentRow> one = compare(alone);
  ASSERT_EQ(one.size(), 2u);
  ASSERT_EQ(all.at(5).result.policy, "tempo");
  ASSERT_EQ(all.at(6).result.policy, "tempo-risk");
  expect_same_run(one[0].result, all[5].result);
  expect_same_run(one[1].result, all[6].result);
}

TEST(ReplayDeterminism, TheTtuHorizonChangesNoDecision) {
  // The policies that read TTU, on an overloaded pressured setup (40 requests 100 ms apart:
  // the queue's tail about 10 s away) under a 6 s horizon: projecting only to the horizon,
  // and revising claims past it lazily, serves every request exactly as projecting the
  // whole queue every iteration. Only the count of refused attempts, which follows the
  // number of revisions, may differ.
  ReplaySetup bounded = pressured();
  bounded.policies = {"tempo-static", "tempo", "tempo-risk"};
  bounded.workload.documents = 40;
  bounded.workload.arrivals.interval = 100 * kNsPerMs;
  bounded.engine.ttu_horizon = 6 * kNsPerSec;
  ReplaySetup whole = bounded;
  whole.engine.ttu_horizon = kNever;
  const std::vector<ExperimentRow> a = compare(bounded);
  const std::vector<ExperimentRow> b = compare(whole);
  ASSERT_EQ(a.size(), 3u);
  ASSERT_EQ(b.size(), 3u);
  for (size_t i = 0; i < a.size(); ++i) expect_same_run(a[i].result, b[i].result, false);
  // A horizon too short for the TTRs here (2 s: claims 1 s away are past half of it) does
  // change decisions: the test can tell.
  ReplaySetup short_horizon = bounded;
  short_horizon.engine.ttu_horizon = 2 * kNsPerSec;
  const std::vector<ExperimentRow> c = compare(short_horizon);
  EXPECT_NE(c.at(2).result.summary.c_gib_s_per_req, b.at(2).result.summary.c_gib_s_per_req);
}

TEST(ReplayDeterminism, TheSeedDecidesTheWorkload) {
  ReplaySetup s = default_setup();
  s.policies = {"demand"};
  ReplaySetup t = s;
  t.workload.seed = 2;
  const RunResult a = compare(s).at(0).result;
  const RunResult b = compare(t).at(0).result;
  ASSERT_EQ(a.requests.size(), 12u);
  ASSERT_EQ(b.requests.size(), 12u);
  bool differs = false;
  for (size_t i = 0; i < a.requests.size(); ++i)
    differs |= a.requests[i].prompt_tokens != b.requests[i].prompt_tokens ||
               a.requests[i].timing.output_tokens != b.requests[i].timing.output_tokens;
  EXPECT_TRUE(differs) << "seeds 1 and 2 gave the same prompts and outputs";
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The CSVs the figure scripts read: two runs of an experiment write identical bytes.
TEST(ReplayDeterminism, ExperimentCsvsAreByteIdentical) {
  const std::filesystem::path base =
      std::filesystem::temp_directory_path() / ("tempo-replay-det-" + std::to_string(getpid()));
  const std::vector<std::pair<std::string, std::vector<std::string>>> experiments = {
      {"fig1", {"fig1.csv"}}, {"fig2", {"fig2.csv"}}, {"fig6", {"summary.csv", "requests.csv"}}};
  for (const auto& [experiment, files] : experiments) {
    SCOPED_TRACE(experiment);
    std::filesystem::path out[2];
    for (int i = 0; i < 2; ++i) {
      ReplaySetup s = default_setup();
      s.out_dir = (base / std::to_string(i)).string();
      std::string error;
      ASSERT_EQ(run_experiment(experiment, s, &error), 0) << error;
      out[i] = std::filesystem::path(s.out_dir) / experiment;
    }
    for (const std::string& file : files) {
      const std::string a = slurp(out[0] / file);
      EXPECT_GT(a.size(), 100u) << file;
      EXPECT_EQ(a, slurp(out[1] / file)) << file;
    }
  }
  std::filesystem::remove_all(base);
}

}  // namespace
}  // namespace tempo
