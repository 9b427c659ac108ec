// The placement study's experiments, each a grid of simulator runs written as CSV:
//   policy_grid       policy x workload at the default 1:8:64 shape, plus baselines
//   single_session    the one 24,000-access chat session, every policy
//   ratio_sweep       working-set-to-HBM ratio R at shape 1:8:64 (Table III at R = 73)
//   cost_frontier     every HBM/DRAM/SSD composition of a fixed 192-block budget
//   ssd_depth         HBM 32, DRAM 64, SSD depth swept; SLO = the workload's gpu-only P99
//   prefetch_grid     prefetcher x HBM size x workload
//   link_priority     oracle and laxity with FIFO links against demand-first PCIe
//   goals             the beyond-paper goals, evaluated from the grids above
// and, at the physical shape of the hardware files, physical_grid, capacity_sweep and
// physical_prefetch (placement/physical_study.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "placement/compute_cost.h"
#include "placement/hardware.h"
#include "placement/metrics.h"
#include "placement/simulator.h"
#include "placement/workload.h"

namespace tempo::placement {

struct StudyConfig {
  std::vector<std::string> workloads{"chat", "agent", "docqa"};
  std::vector<std::string> policies{"lru",
                                    "reuse-frequency",
                                    "reuse-frequency-persistent",
                                    "predicted-reuse",
                                    "ewma",
                                    "arc",
                                    "adaptive",
                                    "min"};
  double default_ratio = 73;  // working set / HBM at the default shape
  uint64_t seed = 1;
  SimConfig base;  // links, prefetch depth
  TierPrices prices;
  TierBytes physical;               // the tiers of one GPU's share of the server
  const Workload* trace = nullptr;  // a request trace for the physical experiments
};

// HBM = round(W / R) (at least 1), DRAM = 8 HBM, SSD = 64 HBM.
TierShape shape_for_ratio(uint64_t working_set_blocks, double ratio);

// One experiment's rows: a header of RunSummary columns plus experiment-specific ones.
struct Table {
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;
  void write_csv(std::ostream& out) const;
};

// A table whose columns are `extra_columns` then the RunSummary columns, and one row of it.
Table summary_table(const std::vector<std::string>& extra_columns);
void add_row(Table& t, std::vector<std::string> extra, const RunSummary& s);

using ExperimentFn = std::function<Table(const StudyConfig&, const ComputeCost&)>;
struct Experiment {
  std::string name;
  ExperimentFn run;
};
std::vector<Experiment> experiments();

Table run_policy_grid(const StudyConfig& s, const ComputeCost& cost);
Table run_single_session(const StudyConfig& s, const ComputeCost& cost);
Table run_ratio_sweep(const StudyConfig& s, const ComputeCost& cost);
Table run_cost_frontier(const StudyConfig& s, const ComputeCost& cost);
Table run_ssd_depth(const StudyConfig& s, const ComputeCost& cost);
Table run_prefetch_grid(const StudyConfig& s, const ComputeCost& cost);
Table run_link_priority(const StudyConfig& s, const ComputeCost& cost);
Table run_goals(const StudyConfig& s, const ComputeCost& cost);

}  // namespace tempo::placement
