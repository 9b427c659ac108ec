// tempo-replay's trace options: trailing blank lines, slicing, rebasing and scaling, output
// lengths kept unless capped, skipped lines counted.
#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>
#include <fstream>

#include "workloads.h"

namespace tempo {
namespace {

class TraceWorkloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(load_exec_model("llama-3.1-8b-instruct", "h100-pcie-80gb", &model_, &error_), 0)
        << error_;
    path_ = std::filesystem::path(TEMPO_TEST_SCRATCH) / "trace_workload_test.jsonl";
    std::ofstream f(path_);
    f << R"({"timestamp": 1000, "input_length": 1024, "output_length": 300, "hash_ids": [1, 2]})"
      << "\n"
      << R"({"timestamp": 1500, "input_length": 1024, "output_length": 7, "hash_ids": [1, 2]})"
      << "\n"
      << R"({"timestamp": "x"})"
      << "\n"
      << R"({"timestamp": 3000, "input_length": 1536, "output_length": 9, "hash_ids": [1, 2, 3]})"
      << "\n\n  \n";
    spec_.name = "trace";
    spec_.trace_path = path_.string();
    spec_.skip_malformed = true;
  }
  void TearDown() override { std::filesystem::remove(path_); }

  ExecModel model_;
  std::string error_;
  std::filesystem::path path_;
  WorkloadSpec spec_;
};

TEST_F(TraceWorkloadTest, TrailingBlankLinesEndTheTraceAndSkipsAreCounted) {
  ReplayWorkload w;
  ASSERT_EQ(build_workload(spec_, model_, &w, &error_), 0) << error_;
  ASSERT_EQ(w.requests.size(), 3u);
  EXPECT_EQ(w.skipped_lines, 1u);
  EXPECT_NE(w.first_skipped.find(":3:"), std::string::npos) << w.first_skipped;
  // Rebased to the first request; outputs as the trace gives them (300 > the default cap).
  EXPECT_EQ(w.requests[0].arrival, 0);
  EXPECT_EQ(w.requests[1].arrival, 500 * kNsPerMs);
  EXPECT_EQ(w.requests[2].arrival, 2000 * kNsPerMs);
  EXPECT_EQ(w.requests[0].output_tokens, 300u);
  spec_.skip_malformed = false;
  EXPECT_EQ(build_workload(spec_, model_, &w, &error_), -EINVAL);
  EXPECT_NE(error_.find(":3:"), std::string::npos) << error_;
}

TEST_F(TraceWorkloadTest, SliceScaleAndCap) {
  spec_.skip = 1;
  spec_.first = 1;
  spec_.time_scale = 0.5;
  ReplayWorkload w;
  ASSERT_EQ(build_workload(spec_, model_, &w, &error_), 0) << error_;
  ASSERT_EQ(w.requests.size(), 1u);
  EXPECT_EQ(w.requests[0].arrival, 0);
  EXPECT_EQ(w.requests[0].output_tokens, 7u);
  // The kept request still hits the blocks the skipped one computed.
  EXPECT_EQ(w.requests[0].prefix_chunks.size(), 2u);
  spec_.skip = 0;
  spec_.first = 0;
  spec_.cap_trace_outputs = true;
  spec_.output_cap = 8;
  ASSERT_EQ(build_workload(spec_, model_, &w, &error_), 0) << error_;
  ASSERT_EQ(w.requests.size(), 3u);
  EXPECT_EQ(w.requests[1].arrival, 250 * kNsPerMs);
  EXPECT_EQ(w.requests[2].arrival, 1000 * kNsPerMs);
  EXPECT_EQ(w.requests[0].output_tokens, 8u);
  EXPECT_EQ(w.requests[1].output_tokens, 7u);
  spec_.time_scale = 0;
  EXPECT_EQ(build_workload(spec_, model_, &w, &error_), -EINVAL);
}

// A scale that puts arrivals past the replay's time range, and a slice that keeps no request,
// are refused with a message, not replayed with overflowed times or as an empty run.
TEST_F(TraceWorkloadTest, ArrivalsPastTheTimeRangeAndNoRequestsAreRefused) {
  ReplayWorkload w;
  spec_.time_scale = 1e308;
  EXPECT_EQ(build_workload(spec_, model_, &w, &error_), -ERANGE);
  EXPECT_NE(error_.find("time range"), std::string::npos) << error_;
  spec_.time_scale = static_cast<double>(kMaxArrivalNs) / (4000.0 * kNsPerMs);
  ASSERT_EQ(build_workload(spec_, model_, &w, &error_), 0) << error_;
  EXPECT_LE(w.requests.back().arrival, kMaxArrivalNs);
  spec_.time_scale = 1;
  spec_.skip = 3;
  EXPECT_EQ(build_workload(spec_, model_, &w, &error_), -EINVAL);
  EXPECT_NE(error_.find("no requests to replay after --skip 3"), std::string::npos) << error_;
  std::ofstream(path_, std::ios::trunc) << "\n\n";
  spec_.skip = 0;
  EXPECT_EQ(build_workload(spec_, model_, &w, &error_), -EINVAL);
  EXPECT_NE(error_.find("no requests to replay"), std::string::npos) << error_;
}

// Synthetic arrivals past the time range (a rate near 0) are refused the same way.
TEST_F(TraceWorkloadTest, SyntheticArrivalsPastTheTimeRangeAreRefused) {
  WorkloadSpec spec;
  spec.name = "narrativeqa";
  spec.arrivals.kind = ArrivalKind::kPoisson;
  spec.arrivals.rate_per_s = 1e-300;
  ReplayWorkload w;
  EXPECT_EQ(build_workload(spec, model_, &w, &error_), -ERANGE);
  EXPECT_NE(error_.find("a higher --rate"), std::string::npos) << error_;
}

}  // namespace
}  // namespace tempo
