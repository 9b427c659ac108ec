#include "placement/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>

#include "csv/csv_writer.h"

namespace tempo::placement {

namespace {
double gb(uint64_t blocks, uint64_t block_bytes) {
  return static_cast<double>(blocks) * static_cast<double>(block_bytes) / 1e9;
}
double ms(double ns) { return ns / 1e6; }
}  // namespace

CapacityModel capacity_model(const TierShape& shape, uint64_t block_bytes,
                             double blocks_per_session, const TierPrices& p) {
  CapacityModel c;
  c.blocks_per_session = blocks_per_session;
  if (blocks_per_session <= 0 || shape.hbm_blocks == 0) return c;
  c.sessions_hbm_only = static_cast<double>(shape.hbm_blocks) / blocks_per_session;
  c.sessions_tiered = static_cast<double>(shape.total()) / blocks_per_session;
  const double hbm_cost = gb(shape.hbm_blocks, block_bytes) * p.hbm_usd_per_gb;
  const double tier_cost = hbm_cost + gb(shape.dram_blocks, block_bytes) * p.dram_usd_per_gb +
                           gb(shape.ssd_blocks, block_bytes) * p.ssd_usd_per_gb;
  c.usd_per_session_hbm_only = hbm_cost / c.sessions_hbm_only;
  c.usd_per_session_tiered = tier_cost / c.sessions_tiered;
  return c;
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

RunSummary summarize(const RunResult& r, const Workload& w, const TierShape& configured,
                     const TierPrices& prices) {
  RunSummary s;
  s.workload = r.workload;
  s.policy = r.policy;
  s.prefetch = r.prefetch;
  s.baseline = r.baseline;
  s.shape = r.shape;
  s.accesses = r.accesses;
  const auto& c = r.counters;
  for (uint64_t n : c.reads_by_source) s.reads += n;
  const double reads = std::max<double>(1, static_cast<double>(s.reads));
  s.hit_hbm = static_cast<double>(c.reads_by_source[0]) / reads;
  s.hit_dram = static_cast<double>(c.reads_by_source[1]) / reads;
  s.hit_ssd = static_cast<double>(c.reads_by_source[2]) / reads;
  s.recompute_share = static_cast<double>(c.reads_by_source[3]) / reads;
  s.pcie_up_bytes = c.demand.pcie_up + c.prefetch.pcie_up;
  s.pcie_down_bytes = c.demand.pcie_down + c.prefetch.pcie_down;
  s.ssd_read_bytes = c.demand.ssd_read + c.prefetch.ssd_read;
  s.ssd_write_bytes = c.demand.ssd_write + c.prefetch.ssd_write;
  s.migration_bytes = c.demand.total() + c.prefetch.total();
  s.prefetch_bytes = c.prefetch.total();
  s.prefetches = c.prefetches;
  s.prefetch_hits = c.prefetch_hits;
  s.prefetch_wasted = c.prefetch_wasted;
  s.prefetches_overtaken = c.prefetches_overtaken;

  std::vector<double> ttft;
  double tokens = 0, compute = 0, stall_d = 0, stall_s = 0, stall_r = 0, wait_d = 0, wait_s = 0;
  for (const auto& m : r.requests) {
    ttft.push_back(ms(static_cast<double>(m.ttft)));
    tokens += m.output_tokens;
    compute += static_cast<double>(m.decode_compute);
    stall_d += static_cast<double>(m.decode_stall[static_cast<int>(Tier::kDram)]);
    stall_s += static_cast<double>(m.decode_stall[static_cast<int>(Tier::kSsd)]);
    stall_r += static_cast<double>(m.decode_stall[static_cast<int>(Tier::kNone)]);
    wait_d += static_cast<double>(m.ttft_wait[static_cast<int>(Tier::kDram)]);
    wait_s += static_cast<double>(m.ttft_wait[static_cast<int>(Tier::kSsd)]);
  }
  s.ttft_p50_ms = percentile(ttft, 0.50);
  s.ttft_p99_ms = percentile(ttft, 0.99);
  double sum = 0;
  for (double x : ttft) sum += x;
  const double n = std::max<double>(1, static_cast<double>(ttft.size()));
  s.ttft_mean_ms = sum / n;
  s.ttft_wait_dram_ms = ms(wait_d) / n;
  s.ttft_wait_ssd_ms = ms(wait_s) / n;
  const double tk = std::max(1.0, tokens);
  s.tpot_compute_ms = ms(compute) / tk;
  s.stall_dram_ms = ms(stall_d) / tk;
  s.stall_ssd_ms = ms(stall_s) / tk;
  s.stall_recompute_ms = ms(stall_r) / tk;
  s.tpot_stall_ms = s.stall_dram_ms + s.stall_ssd_ms + s.stall_recompute_ms;
  s.tpot_ms = s.tpot_compute_ms + s.tpot_stall_ms;
  std::vector<double> fetch;
  fetch.reserve(r.demand_fetch_latency.size());
  for (TimeNs t : r.demand_fetch_latency) fetch.push_back(static_cast<double>(t) / 1e3);
  s.demand_fetch_p99_us = percentile(fetch, 0.99);
  s.throughput_tok_s = r.makespan > 0 ? tokens / ns_to_sec(r.makespan) : 0;
  const double ws = static_cast<double>(working_set_blocks(w));
  s.capacity =
      capacity_model(configured, r.block_bytes, ws / std::max<uint32_t>(1, w.sessions), prices);
  return s;
}

std::string csv_number(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) {
    return std::to_string(static_cast<int64_t>(v));
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::vector<std::string> summary_columns() {
  return {"workload",
          "policy",
          "prefetch",
          "baseline",
          "hbm_blocks",
          "dram_blocks",
          "ssd_blocks",
          "accesses",
          "reads",
          "hit_hbm",
          "hit_dram",
          "hit_ssd",
          "recompute_share",
          "pcie_up_bytes",
          "pcie_down_bytes",
          "ssd_read_bytes",
          "ssd_write_bytes",
          "migration_bytes",
          "prefetch_bytes",
          "ttft_p50_ms",
          "ttft_p99_ms",
          "ttft_mean_ms",
          "ttft_wait_dram_ms",
          "ttft_wait_ssd_ms",
          "tpot_ms",
          "tpot_compute_ms",
          "tpot_stall_ms",
          "stall_dram_ms",
          "stall_ssd_ms",
          "stall_recompute_ms",
          "demand_fetch_p99_us",
          "throughput_tok_s",
          "prefetches",
          "prefetch_hits",
          "prefetch_wasted",
          "blocks_per_session",
          "sessions_hbm_only",
          "sessions_tiered",
          "usd_per_session_hbm_only",
          "usd_per_session_tiered",
          "prefetches_overtaken"};
}

std::vector<std::string> summary_values(const RunSummary& s) {
  const auto& c = s.capacity;
  auto n = [](double v) { return csv_number(v); };
  auto u = [](uint64_t v) { return std::to_string(v); };
  return {s.workload,
          s.policy,
          s.prefetch,
          s.baseline,
          u(s.shape.hbm_blocks),
          u(s.shape.dram_blocks),
          u(s.shape.ssd_blocks),
          u(s.accesses),
          u(s.reads),
          n(s.hit_hbm),
          n(s.hit_dram),
          n(s.hit_ssd),
          n(s.recompute_share),
          u(s.pcie_up_bytes),
          u(s.pcie_down_bytes),
          u(s.ssd_read_bytes),
          u(s.ssd_write_bytes),
          u(s.migration_bytes),
          u(s.prefetch_bytes),
          n(s.ttft_p50_ms),
          n(s.ttft_p99_ms),
          n(s.ttft_mean_ms),
          n(s.ttft_wait_dram_ms),
          n(s.ttft_wait_ssd_ms),
          n(s.tpot_ms),
          n(s.tpot_compute_ms),
          n(s.tpot_stall_ms),
          n(s.stall_dram_ms),
          n(s.stall_ssd_ms),
          n(s.stall_recompute_ms),
          n(s.demand_fetch_p99_us),
          n(s.throughput_tok_s),
          u(s.prefetches),
          u(s.prefetch_hits),
          u(s.prefetch_wasted),
          n(c.blocks_per_session),
          n(c.sessions_hbm_only),
          n(c.sessions_tiered),
          n(c.usd_per_session_hbm_only),
          n(c.usd_per_session_tiered),
          u(s.prefetches_overtaken)};
}

void write_summary_csv_header(std::ostream& o) {
  CsvWriter(o, CsvWriter::Doubles::kSix).cells(summary_columns()).end_row();
}

void write_summary_csv_row(const RunSummary& s, std::ostream& o) {
  CsvWriter(o, CsvWriter::Doubles::kSix).cells(summary_values(s)).end_row();
}

void write_requests_csv(const RunResult& r, std::ostream& o) {
  CsvWriter csv(o, CsvWriter::Doubles::kSix);
  for (const char* col :
       {"request", "session", "arrival_ms", "start_ms", "ttft_ms", "prefill_compute_ms",
        "ttft_wait_dram_ms", "ttft_wait_ssd_ms", "decode_compute_ms", "stall_dram_ms",
        "stall_ssd_ms", "stall_recompute_ms", "output_tokens", "recomputed_blocks"})
    csv << col;
  csv.end_row();
  for (size_t i = 0; i < r.requests.size(); ++i) {
    const auto& m = r.requests[i];
    auto f = [](TimeNs t) { return static_cast<double>(t) / 1e6; };
    csv << i << m.session << f(m.arrival) << f(m.start) << f(m.ttft) << f(m.prefill_compute)
        << f(m.ttft_wait[1]) << f(m.ttft_wait[2]) << f(m.decode_compute) << f(m.decode_stall[1])
        << f(m.decode_stall[2]) << f(m.decode_stall[3]) << m.output_tokens << m.recomputed_blocks;
    csv.end_row();
  }
}

}  // namespace tempo::placement
