#include "placement/physical_study.h"

#include <algorithm>
#include <stdexcept>

#include "placement/generators.h"
#include "placement/hardware.h"

namespace tempo::placement {

namespace {

std::string num(double v) { return csv_number(v); }
std::string num(uint64_t v) { return std::to_string(v); }

uint64_t block_bytes(const Workload& w, const ComputeCost& cost) {
  return cost.kv_bytes_per_token() * w.block_tokens;
}

TierShape physical(const StudyConfig& s, const Workload& w, const ComputeCost& cost) {
  return shape_for_bytes(s.physical, block_bytes(w, cost));
}

struct Run {
  RunResult result;
  RunSummary summary;
};

Run run(const Workload& w, const StudyConfig& s, const ComputeCost& cost, const TierShape& shape,
        const std::string& policy, const std::string& prefetch = "none",
        const std::string& baseline = "tiered", bool demand_priority = true) {
  SimConfig c = s.base;
  c.shape = shape;
  c.policy = policy;
  c.prefetch = prefetch;
  c.baseline = baseline;
  c.demand_priority = demand_priority;
  Run r{simulate(w, c, cost), {}};
  r.summary = summarize(r.result, w, shape, s.prices);
  return r;
}

// The workloads of the physical grid: the generated ones, then the trace if given.
std::vector<Workload> grid_workloads(const StudyConfig& s) {
  std::vector<Workload> out;
  for (const auto& name : s.workloads) {
    Workload w;
    if (make_named_workload(name, s.seed, &w) != 0) {
      throw std::invalid_argument("tempo-sim: unknown workload '" + name + "'");
    }
    out.push_back(std::move(w));
  }
  if (s.trace != nullptr) out.push_back(*s.trace);
  return out;
}

// The trace's growing prefixes: 1/8, 1/4, 1/2 and all of its requests.
std::vector<Workload> trace_prefixes(const StudyConfig& s) {
  std::vector<Workload> out;
  if (s.trace == nullptr) return out;
  const size_t n = s.trace->requests.size();
  for (size_t d : {8u, 4u, 2u, 1u}) out.push_back(first_requests(*s.trace, n / d));
  return out;
}

uint64_t recomputes(const RunResult& r) {
  return r.counters.reads_by_source[static_cast<int>(Source::kRecompute)];
}

// Reads not served from HBM.
uint64_t hbm_misses(const Run& r) {
  return r.summary.reads - r.result.counters.reads_by_source[static_cast<int>(Source::kHbm)];
}

}  // namespace

uint64_t compulsory_reads(const Workload& w) {
  std::vector<bool> seen(w.num_blocks, false);
  uint64_t n = 0;
  for (const Request& r : w.requests) {
    for (BlockId b : r.context) {
      if (!seen[b]) ++n;
      seen[b] = true;
    }
    for (BlockId b : r.input) seen[b] = true;
    for (BlockId b : r.output) seen[b] = true;
  }
  return n;
}

Workload first_requests(const Workload& w, size_t n) {
  Workload out = w;
  out.requests.resize(std::min(n, w.requests.size()));
  return out;
}

Table run_physical_grid(const StudyConfig& s, const ComputeCost& cost) {
  Table t =
      summary_table({"working_set_blocks", "ws_over_hbm", "misses", "recomputes", "compulsory"});
  for (const Workload& w : grid_workloads(s)) {
    const TierShape shape = physical(s, w, cost);
    const uint64_t ws = working_set_blocks(w);
    const uint64_t compulsory = compulsory_reads(w);
    auto add = [&](const Run& r) {
      add_row(t,
              {num(ws), num(static_cast<double>(ws) / static_cast<double>(shape.hbm_blocks)),
               num(hbm_misses(r)), num(recomputes(r.result)), num(compulsory)},
              r.summary);
    };
    for (const auto& p : s.policies) add(run(w, s, cost, shape, p));
    for (const char* b : {"gpu-only", "prefix-reuse", "full-cpu-offload"}) {
      add(run(w, s, cost, shape, "lru", "none", b));
    }
  }
  return t;
}

Table run_capacity_sweep(const StudyConfig& s, const ComputeCost& cost) {
  Table t = summary_table({"requests", "working_set_blocks", "ws_over_capacity", "compulsory",
                           "capacity_misses", "hbm_misses"});
  for (const Workload& w : trace_prefixes(s)) {
    const TierShape shape = physical(s, w, cost);
    const uint64_t ws = working_set_blocks(w);
    const uint64_t compulsory = compulsory_reads(w);
    for (const auto& p : s.policies) {
      const Run r = run(w, s, cost, shape, p);
      add_row(t,
              {num(static_cast<uint64_t>(w.requests.size())), num(ws),
               num(static_cast<double>(ws) / static_cast<double>(shape.total())), num(compulsory),
               num(recomputes(r.result) - compulsory), num(hbm_misses(r))},
              r.summary);
    }
  }
  return t;
}

Table run_physical_prefetch(const StudyConfig& s, const ComputeCost& cost) {
  Table t = summary_table({"requests", "link_priority"});
  for (const Workload& w : trace_prefixes(s)) {
    const TierShape shape = physical(s, w, cost);
    for (const char* pf : {"none", "causal", "oracle", "laxity"}) {
      for (bool demand_first : {false, true}) {
        add_row(t,
                {num(static_cast<uint64_t>(w.requests.size())), demand_first ? "demand" : "fifo"},
                run(w, s, cost, shape, "lru", pf, "tiered", demand_first).summary);
      }
    }
  }
  return t;
}

}  // namespace tempo::placement
