// tempo-sim's engine: serves a workload's requests one at a time (batch one, the paper's
// setting) in the listed order, each no earlier than its arrival and its session's
// previous turn, through a TieredCache, a prefetcher and a compute-cost model.
//   TTFT = wait for the context's fetches (per-block completions on the shared links)
//        + prefill of the new tokens and of every context block that had to be recomputed.
//   TPOT = (decode compute + decode fetch stall) / output tokens; before each output block
//        the whole sequence is read again, and each read's stall is the amount by which its
//        completion pushes the wait frontier out, charged to the tier it came from (direct
//        measurement, not a hit-share split).
// Baselines run on the same engine: gpu-only (HBM only, recompute on miss), prefix-reuse
// (HBM-only LRU used as a radix prefix cache: after the first missing block the rest of
// the context is recomputed), full-cpu-offload (no HBM caching: every block streamed
// from DRAM, FlexGen-style).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "placement/compute_cost.h"
#include "placement/tiered_cache.h"
#include "placement/workload.h"

namespace tempo::placement {

struct TierPrices {
  double hbm_usd_per_gb = 187.50;
  double dram_usd_per_gb = 3.50;
  double ssd_usd_per_gb = 0.08;
};

struct SimConfig {
  TierShape shape{16, 128, 1024};
  std::string policy = "lru";
  std::string prefetch = "none";
  uint32_t prefetch_depth = 16;
  std::string baseline = "tiered";         // tiered, gpu-only, prefix-reuse, full-cpu-offload
  LinkSpec pcie_up{50.4e9, 2 * kNsPerUs};  // H100 PCIe host link x 0.8 efficiency
  LinkSpec pcie_down{50.4e9, 2 * kNsPerUs};
  LinkSpec ssd{6.0e9, 80 * kNsPerUs};  // one NVMe Gen4 drive
  double ewma_alpha = 0.5;
  // Demand fetches overtake queued, not yet started prefetches on PCIe and on the SSD link
  // (the default: prefetches yield the links to demand fetches); false = FIFO links.
  bool demand_priority = true;
};

std::vector<std::string> baseline_names();

// Stall and wait times are indexed by Tier: kDram, kSsd, and kNone for recompute.
using TierTimes = std::array<TimeNs, 4>;

struct RequestMetrics {
  uint32_t session = 0;
  TimeNs arrival = 0, start = 0, end = 0;
  TimeNs ttft = 0;
  TierTimes ttft_wait{};  // context fetch wait by tier
  TimeNs prefill_compute = 0;
  TimeNs decode_compute = 0;
  TierTimes decode_stall{};  // by tier; kNone = recomputing a block lost mid-request
  uint32_t output_tokens = 0;
  uint32_t recomputed_blocks = 0;
  TimeNs decode_stall_total() const;
};

struct RunResult {
  std::string workload, policy, prefetch, baseline;
  TierShape shape;  // the shape actually simulated (baselines reshape)
  uint64_t block_bytes = 0;
  uint64_t accesses = 0;
  CacheCounters counters;
  std::vector<RequestMetrics> requests;
  std::vector<TimeNs> demand_fetch_latency;  // per demand fetch from DRAM/SSD
  TimeNs makespan = 0;
};

// Throws std::invalid_argument on a bad configuration (see TieredCache, plus unknown
// prefetcher or baseline).
RunResult simulate(const Workload& w, const SimConfig& config, const ComputeCost& cost);

}  // namespace tempo::placement
