// Output of tempo-replay: the terminal summary table, CSV files and a progress bar.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "experiments.h"

namespace tempo {

// policy | p95 TTFT | mean TTFT | throughput | C | deferrals | gains vs demand; then, for
// runs of several engines, each engine's p95 TTFT.
void print_summary_table(std::FILE* out, const std::vector<ExperimentRow>& rows);

// Replays across hosts: cluster tier | policy | p95 and mean TTFT | C | hit rate (of the
// reusable prefix bytes) | cross-host hits (of the hit bytes, found only in the pool); then
// each run's claims by source (SourceCommits: committed, on time, late, commit-to-use lead).
void print_cluster_table(std::FILE* out, const std::vector<ExperimentRow>& rows);
// The layer-wise comparison: per model, ratio and policy, C and TTFT of each loading mode.
void print_layer_wise_table(std::FILE* out, const std::vector<ExperimentRow>& rows);

// One row per run (labels, policy and summary figures).
int write_summary_csv(const std::string& path, const std::vector<ExperimentRow>& rows);
// One row per request of every run.
int write_requests_csv(const std::string& path, const std::vector<ExperimentRow>& rows);
// With several engines: one row per engine of every run (TTFTs, throughput); nothing is
// written when every run had one engine.
int write_engines_csv(const std::string& path, const std::vector<ExperimentRow>& rows);

// Draws "[#####.....] done/total label" on stderr when it is a terminal.
class Progress {
 public:
  Progress(bool enabled, size_t total) : enabled_(enabled), total_(total) {}
  void step(const std::string& label);
  void finish();

 private:
  bool enabled_;
  size_t total_;
  size_t done_ = 0;
};

const char* path_name(RetrievalPath p);
// A time in seconds with every nanosecond: "-0.000000001", "12.500000000".
std::string exact_seconds(TimeNs t);

}  // namespace tempo
