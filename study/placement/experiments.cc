#include "placement/experiments.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <ostream>
#include <stdexcept>

#include "csv/csv_writer.h"
#include "placement/generators.h"
#include "placement/physical_study.h"

namespace tempo::placement {

namespace {

std::string num(double v) { return csv_number(v); }
std::string num(uint64_t v) { return std::to_string(v); }

Workload load(const std::string& name, uint64_t seed) {
  Workload w;
  if (make_named_workload(name, seed, &w) != 0) {
    throw std::invalid_argument("tempo-sim: unknown workload '" + name + "'");
  }
  return w;
}

RunSummary run_one(const Workload& w, const StudyConfig& s, const ComputeCost& cost,
                   const TierShape& shape, const std::string& policy,
                   const std::string& prefetch = "none", const std::string& baseline = "tiered") {
  SimConfig c = s.base;
  c.shape = shape;
  c.policy = policy;
  c.prefetch = prefetch;
  c.baseline = baseline;
  return summarize(simulate(w, c, cost), w, shape, s.prices);
}

bool is_static(const std::string& p) {
  return p == "lru" || p == "reuse-frequency" || p == "reuse-frequency-persistent" ||
         p == "predicted-reuse" || p == "ewma";
}

}  // namespace

Table summary_table(const std::vector<std::string>& extra_columns) {
  Table t;
  t.columns = extra_columns;
  const auto cols = summary_columns();
  t.columns.insert(t.columns.end(), cols.begin(), cols.end());
  return t;
}

void add_row(Table& t, std::vector<std::string> extra, const RunSummary& s) {
  const auto v = summary_values(s);
  extra.insert(extra.end(), v.begin(), v.end());
  t.rows.push_back(std::move(extra));
}

TierShape shape_for_ratio(uint64_t working_set_blocks, double ratio) {
  const auto hbm = std::max<uint64_t>(
      1, static_cast<uint64_t>(std::llround(static_cast<double>(working_set_blocks) / ratio)));
  return {hbm, 8 * hbm, 64 * hbm};
}

void Table::write_csv(std::ostream& out) const {
  CsvWriter csv(out, CsvWriter::Doubles::kSix);
  csv.cells(columns).end_row();
  for (const auto& r : rows) csv.cells(r).end_row();
}

Table run_policy_grid(const StudyConfig& s, const ComputeCost& cost) {
  Table t = summary_table({"ratio"});
  for (const auto& name : s.workloads) {
    const Workload w = load(name, s.seed);
    const TierShape shape = shape_for_ratio(working_set_blocks(w), s.default_ratio);
    for (const auto& p : s.policies)
      add_row(t, {num(s.default_ratio)}, run_one(w, s, cost, shape, p));
    for (const char* b : {"gpu-only", "prefix-reuse", "full-cpu-offload"}) {
      add_row(t, {num(s.default_ratio)}, run_one(w, s, cost, shape, "lru", "none", b));
    }
  }
  return t;
}

Table run_single_session(const StudyConfig& s, const ComputeCost& cost) {
  Table t = summary_table({"ratio"});
  const Workload w = load("chat-single", s.seed);
  const TierShape shape = shape_for_ratio(working_set_blocks(w), s.default_ratio);
  for (const auto& p : s.policies)
    add_row(t, {num(s.default_ratio)}, run_one(w, s, cost, shape, p));
  return t;
}

Table run_ratio_sweep(const StudyConfig& s, const ComputeCost& cost) {
  Table t;
  t.columns = {"workload",
               "ratio",
               "hbm_blocks",
               "dram_blocks",
               "ssd_blocks",
               "blocks_per_session",
               "sessions_hbm_only",
               "sessions_tiered",
               "session_gain",
               "usd_per_session_hbm_only",
               "usd_per_session_tiered",
               "cost_reduction",
               "ttft_p99_tiered_ms",
               "ttft_p99_hbm_only_ms",
               "hit_hbm",
               "hit_dram",
               "hit_ssd",
               "recompute_share"};
  for (const auto& name : s.workloads) {
    const Workload w = load(name, s.seed);
    const uint64_t ws = working_set_blocks(w);
    for (double r : {8.0, 16.0, 24.0, 32.0, 48.0, 64.0, 73.0, 96.0, 128.0}) {
      const TierShape shape = shape_for_ratio(ws, r);
      const RunSummary tiered = run_one(w, s, cost, shape, "lru");
      const RunSummary hbm = run_one(w, s, cost, shape, "lru", "none", "gpu-only");
      const CapacityModel& c = tiered.capacity;
      t.rows.push_back({name, num(r), num(shape.hbm_blocks), num(shape.dram_blocks),
                        num(shape.ssd_blocks), num(c.blocks_per_session), num(c.sessions_hbm_only),
                        num(c.sessions_tiered), num(c.session_gain()),
                        num(c.usd_per_session_hbm_only), num(c.usd_per_session_tiered),
                        num(c.cost_reduction()), num(tiered.ttft_p99_ms), num(hbm.ttft_p99_ms),
                        num(tiered.hit_hbm), num(tiered.hit_dram), num(tiered.hit_ssd),
                        num(tiered.recompute_share)});
    }
  }
  return t;
}

Table run_cost_frontier(const StudyConfig& s, const ComputeCost& cost) {
  constexpr uint64_t kBudget = 192, kStep = 16;
  Table t;
  t.columns = {"workload",    "policy",      "hbm_blocks",
               "dram_blocks", "ssd_blocks",  "usd_per_1k_sessions",
               "ttft_p99_ms", "ttft_p50_ms", "migration_bytes",
               "tpot_ms",     "on_frontier"};
  for (const auto& name : s.workloads) {
    const Workload w = load(name, s.seed);
    for (const char* p : {"lru", "reuse-frequency", "ewma", "adaptive"}) {
      struct Point {
        TierShape shape;
        double usd, p99;
        RunSummary r;
      };
      std::vector<Point> pts;
      for (uint64_t h = kStep; h <= kBudget; h += kStep) {
        for (uint64_t d = 0; h + d <= kBudget; d += kStep) {
          const TierShape shape{h, d, kBudget - h - d};
          RunSummary r = run_one(w, s, cost, shape, p);
          pts.push_back({shape, r.capacity.usd_per_session_tiered * 1000, r.ttft_p99_ms, r});
        }
      }
      for (const Point& a : pts) {
        bool dominated = false;
        for (const Point& b : pts) {
          if (b.usd <= a.usd && b.p99 <= a.p99 && (b.usd < a.usd || b.p99 < a.p99)) {
            dominated = true;
            break;
          }
        }
        t.rows.push_back({name, p, num(a.shape.hbm_blocks), num(a.shape.dram_blocks),
                          num(a.shape.ssd_blocks), num(a.usd), num(a.p99), num(a.r.ttft_p50_ms),
                          num(a.r.migration_bytes), num(a.r.tpot_ms), dominated ? "0" : "1"});
      }
    }
  }
  return t;
}

Table run_ssd_depth(const StudyConfig& s, const ComputeCost& cost) {
  Table t;
  t.columns = {"workload",        "hbm_blocks",       "dram_blocks",  "ssd_blocks",
               "ttft_p99_ms",     "slo_ms",           "meets_slo",    "headroom_ms",
               "sessions_tiered", "ttft_wait_ssd_ms", "stall_ssd_ms", "hit_ssd",
               "recompute_share"};
  for (const auto& name : s.workloads) {
    const Workload w = load(name, s.seed);
    const double slo = run_one(w, s, cost, {32, 0, 0}, "lru", "none", "gpu-only").ttft_p99_ms;
    for (uint64_t d : {8, 16, 32, 64, 128, 256, 512, 1024}) {
      const RunSummary r = run_one(w, s, cost, {32, 64, d}, "lru");
      t.rows.push_back({name, "32", "64", num(d), num(r.ttft_p99_ms), num(slo),
                        r.ttft_p99_ms <= slo ? "1" : "0", num(slo - r.ttft_p99_ms),
                        num(r.capacity.sessions_tiered), num(r.ttft_wait_ssd_ms),
                        num(r.stall_ssd_ms), num(r.hit_ssd), num(r.recompute_share)});
    }
  }
  return t;
}

Table run_prefetch_grid(const StudyConfig& s, const ComputeCost& cost) {
  Table t = summary_table({"hbm_ratio"});
  for (const auto& name : s.workloads) {
    const Workload w = load(name, s.seed);
    const uint64_t ws = working_set_blocks(w);
    for (double r : {128.0, 73.0, 32.0, 16.0, 8.0}) {
      const TierShape shape = shape_for_ratio(ws, r);
      for (const char* pf : {"none", "causal", "oracle", "laxity"}) {
        add_row(t, {num(r)}, run_one(w, s, cost, shape, "lru", pf));
      }
    }
  }
  return t;
}

Table run_link_priority(const StudyConfig& s, const ComputeCost& cost) {
  Table t = summary_table({"hbm_ratio", "link_priority"});
  for (const auto& name : s.workloads) {
    const Workload w = load(name, s.seed);
    const uint64_t ws = working_set_blocks(w);
    for (double r : {73.0, 16.0}) {
      const TierShape shape = shape_for_ratio(ws, r);
      add_row(t, {num(r), "fifo"}, run_one(w, s, cost, shape, "lru", "none"));
      for (const char* pf : {"oracle", "laxity"}) {
        for (bool demand_first : {false, true}) {
          StudyConfig sc = s;
          sc.base.demand_priority = demand_first;
          add_row(t, {num(r), demand_first ? "demand" : "fifo"},
                  run_one(w, sc, cost, shape, "lru", pf));
        }
      }
    }
  }
  return t;
}

Table run_goals(const StudyConfig& s, const ComputeCost& cost) {
  Table t;
  t.columns = {"goal", "workload", "subject", "value", "reference", "reference_value", "met"};
  // Policy goals at several HBM sizes, so "every workload" is not one lucky point.
  std::map<std::string, std::map<std::string, double>> bytes;  // key "workload@ratio"
  for (const auto& name : s.workloads) {
    const Workload w = load(name, s.seed);
    const uint64_t ws = working_set_blocks(w);
    for (double r : {128.0, 73.0, 32.0}) {
      const std::string key = name + "@R" + num(r);
      const TierShape shape = shape_for_ratio(ws, r);
      for (const auto& p : s.policies) {
        bytes[key][p] = static_cast<double>(run_one(w, s, cost, shape, p).migration_bytes);
      }
    }
  }
  std::map<std::string, double> worst_ratio;  // per static policy: max over keys of bytes/best
  std::map<std::string, std::string> worst_key;
  for (const auto& [key, by] : bytes) {
    double best = std::numeric_limits<double>::max();
    std::string best_p;
    for (const auto& [p, b] : by) {
      if (is_static(p) && b < best) {
        best = b;
        best_p = p;
      }
    }
    const double adaptive = by.at("adaptive");
    t.rows.push_back({"adaptive_within_5pct_of_best_static", key, "adaptive", num(adaptive), best_p,
                      num(best), adaptive <= 1.05 * best ? "1" : "0"});
    t.rows.push_back({"gap_best_static_to_min", key, best_p, num(best), "min", num(by.at("min")),
                      num(by.at("min") > 0 ? best / by.at("min") : 0)});
    for (const auto& [p, b] : by) {
      if (!is_static(p)) continue;
      const double ratio = b / best;
      if (ratio > worst_ratio[p]) {
        worst_ratio[p] = ratio;
        worst_key[p] = key;
      }
    }
  }
  for (const auto& [p, ratio] : worst_ratio) {
    const std::string& key = worst_key[p];
    const double a = bytes[key].at("adaptive");
    const double sp = bytes[key].at(p);
    t.rows.push_back({"adaptive_beats_static_on_its_worst_workload", key, "adaptive", num(a), p,
                      num(sp), a < sp ? "1" : "0"});
  }
  // Laxity prefetch versus none.
  for (const auto& name : s.workloads) {
    const Workload w = load(name, s.seed);
    const uint64_t ws = working_set_blocks(w);
    for (double r : {73.0, 16.0}) {
      const TierShape shape = shape_for_ratio(ws, r);
      const RunSummary none = run_one(w, s, cost, shape, "lru", "none");
      const RunSummary lax = run_one(w, s, cost, shape, "lru", "laxity");
      const std::string key = name + "@R" + num(r);
      const double wait_none = none.ttft_wait_dram_ms + none.ttft_wait_ssd_ms;
      const double wait_lax = lax.ttft_wait_dram_ms + lax.ttft_wait_ssd_ms;
      t.rows.push_back({"laxity_lowers_ttft_fetch_wait", key, "laxity", num(wait_lax), "none",
                        num(wait_none), wait_lax < wait_none ? "1" : "0"});
      t.rows.push_back({"laxity_keeps_decode_stall", key, "laxity", num(lax.tpot_stall_ms), "none",
                        num(none.tpot_stall_ms),
                        lax.tpot_stall_ms <= none.tpot_stall_ms ? "1" : "0"});
      t.rows.push_back({"laxity_lowers_ttft_mean", key, "laxity", num(lax.ttft_mean_ms), "none",
                        num(none.ttft_mean_ms), lax.ttft_mean_ms < none.ttft_mean_ms ? "1" : "0"});
      t.rows.push_back({"laxity_lowers_ttft_p99", key, "laxity", num(lax.ttft_p99_ms), "none",
                        num(none.ttft_p99_ms), lax.ttft_p99_ms < none.ttft_p99_ms ? "1" : "0"});
      t.rows.push_back({"laxity_keeps_demand_fetch_p99", key, "laxity",
                        num(lax.demand_fetch_p99_us), "none", num(none.demand_fetch_p99_us),
                        lax.demand_fetch_p99_us <= none.demand_fetch_p99_us ? "1" : "0"});
    }
  }
  return t;
}

std::vector<Experiment> experiments() {
  return {{"policy_grid", run_policy_grid},
          {"single_session", run_single_session},
          {"ratio_sweep", run_ratio_sweep},
          {"cost_frontier", run_cost_frontier},
          {"ssd_depth", run_ssd_depth},
          {"prefetch_grid", run_prefetch_grid},
          {"link_priority", run_link_priority},
          {"goals", run_goals},
          {"physical_grid", run_physical_grid},
          {"capacity_sweep", run_capacity_sweep},
          {"physical_prefetch", run_physical_prefetch}};
}

}  // namespace tempo::placement
