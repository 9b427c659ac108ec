// What a run reports: per-tier hit rates and recompute share, migration bytes per link,
// TTFT percentiles, TPOT split into compute and per-tier fetch stall, demand-fetch tail
// latency, throughput, and the capacity model: sessions per GPU and cost per session.
//
// Capacity model (paper Sec. III-D / Table III): a session needs its share of the
// workload's working set, W/S blocks; a tier shape holds (hbm + dram + ssd) blocks, so it
// serves (hbm + dram + ssd) / (W/S) sessions, and HBM alone hbm / (W/S). The tiered over
// HBM-only gain is therefore exactly (hbm + dram + ssd) / hbm, 73 at 1:8:64, and the cost
// reduction 73 * p_hbm / (p_hbm + 8 p_dram + 64 p_ssd), 62.04 at the default prices:
// capacity accounting, independent of policy and workload.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "placement/simulator.h"
#include "placement/workload.h"

namespace tempo::placement {

struct CapacityModel {
  double blocks_per_session = 0;
  double sessions_hbm_only = 0;
  double sessions_tiered = 0;
  double usd_per_session_hbm_only = 0;
  double usd_per_session_tiered = 0;
  double session_gain() const { return sessions_tiered / sessions_hbm_only; }
  double cost_reduction() const { return usd_per_session_hbm_only / usd_per_session_tiered; }
};

CapacityModel capacity_model(const TierShape& shape, uint64_t block_bytes,
                             double blocks_per_session, const TierPrices& prices);

struct RunSummary {
  std::string workload, policy, prefetch, baseline;
  TierShape shape;
  uint64_t accesses = 0, reads = 0;
  double hit_hbm = 0, hit_dram = 0, hit_ssd = 0, recompute_share = 0;  // fractions of reads
  uint64_t pcie_up_bytes = 0, pcie_down_bytes = 0, ssd_read_bytes = 0, ssd_write_bytes = 0;
  uint64_t migration_bytes = 0, prefetch_bytes = 0;
  double ttft_p50_ms = 0, ttft_p99_ms = 0, ttft_mean_ms = 0;
  double tpot_ms = 0, tpot_compute_ms = 0, tpot_stall_ms = 0;
  double stall_dram_ms = 0, stall_ssd_ms = 0, stall_recompute_ms = 0;  // per output token
  double ttft_wait_dram_ms = 0, ttft_wait_ssd_ms = 0;                  // mean per request
  double demand_fetch_p99_us = 0;
  double throughput_tok_s = 0;
  uint64_t prefetches = 0, prefetch_hits = 0, prefetch_wasted = 0, prefetches_overtaken = 0;
  CapacityModel capacity;
};

// `q` in [0, 1]; nearest-rank on a copy. 0 for an empty sample.
double percentile(std::vector<double> v, double q);

RunSummary summarize(const RunResult& r, const Workload& w, const TierShape& configured,
                     const TierPrices& prices);

// The summary as CSV columns and values (same order).
std::vector<std::string> summary_columns();
std::vector<std::string> summary_values(const RunSummary& s);
// CSV of summaries, one header line then a row per summary.
void write_summary_csv_header(std::ostream& out);
void write_summary_csv_row(const RunSummary& s, std::ostream& out);
// A number as CSV text: integers exactly, others with 6 significant digits.
std::string csv_number(double v);
// Per-request CSV of one run (arrival, start, ttft, prefill, decode compute and stall).
void write_requests_csv(const RunResult& r, std::ostream& out);

}  // namespace tempo::placement
