// The placement study at the physical tier shape of one GPU's share of a server
// (placement/hardware.h), where the default 1:8:64 shape at R = 73 was a ratio:
//   physical_grid      every policy and baseline x workload at the physical shape
//   capacity_sweep     the conversation trace, growing (its first 1/8, 1/4, 1/2, all of
//                      its requests) until it overflows every tier: capacity misses
//   physical_prefetch  prefetchers x link priority on the same trace prefixes
// The conversation trace comes from `tempo-sim study --trace FILE`; without one the two
// trace experiments have no rows.
#pragma once

#include "placement/experiments.h"

namespace tempo::placement {

// Reads of blocks never seen before (first uses): the misses no capacity avoids.
uint64_t compulsory_reads(const Workload& w);
// The workload's first `n` requests.
Workload first_requests(const Workload& w, size_t n);

Table run_physical_grid(const StudyConfig& s, const ComputeCost& cost);
Table run_capacity_sweep(const StudyConfig& s, const ComputeCost& cost);
Table run_physical_prefetch(const StudyConfig& s, const ComputeCost& cost);

}  // namespace tempo::placement
