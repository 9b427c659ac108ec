// tempo-sim: the tiered KV placement simulator (HBM / DRAM / SSD).
//   tempo-sim list
//   tempo-sim run     [--workload W] [--policy P] [--prefetch X] [--baseline B] [shape] ...
//   tempo-sim export  [--workload W] --out FILE        access stream as CSV
//   tempo-sim study   --out DIR [--only a,b]           the experiment grids as CSV
// See Documentation/tempo-sim.md.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/exec_model.h"
#include "placement/experiments.h"
#include "placement/generators.h"
#include "placement/hardware.h"
#include "placement/metrics.h"
#include "placement/prefetch.h"
#include "placement/simulator.h"
#include "policy/eviction_policy.h"
#include "workload/trace.h"

using namespace tempo;
using namespace tempo::placement;

namespace {

const char* kUsage =
    "usage: tempo-sim list\n"
    "       tempo-sim run [--workload chat|chat-single|agent|docqa|trace] [--seed N]\n"
    "                     [--trace FILE.jsonl [--trace-block-tokens N (512)]]\n"
    "                     [--policy P] [--prefetch none|causal|oracle|laxity] [--depth N]\n"
    "                     [--baseline tiered|gpu-only|prefix-reuse|full-cpu-offload]\n"
    "                     [--link-priority fifo|demand]\n"
    "                     [--ratio R | --hbm N --dram N --ssd N] [--ewma-alpha A]\n"
    "                     [--csv FILE] [--requests-csv FILE] [--json] [common]\n"
    "       tempo-sim export [--workload W | --trace FILE] [--seed N] --out FILE [common]\n"
    "       tempo-sim study --out DIR [--only name,...] [--seed N]\n"
    "                       [--trace FILE.jsonl [--trace-block-tokens N]] [common]\n"
    "common: --model NAME|FILE (llama-3.1-8b-instruct) --gpu NAME|FILE (h100-pcie-80gb)\n"
    "        --host NAME|FILE (h100-pcie-server)\n"
    "        --data-dir DIR --pcie-gbps G --ssd-gbps G --ssd-latency-us U\n"
    "        --price-hbm USD --price-dram USD --price-ssd USD (per GB)\n";

struct Args {
  std::map<std::string, std::string> opt;
  bool has(const std::string& k) const { return opt.contains(k); }
  std::string get(const std::string& k, const std::string& def) const {
    auto it = opt.find(k);
    return it == opt.end() ? def : it->second;
  }
};

int fail(const std::string& msg) {
  std::cerr << "tempo-sim: " << msg << "\n";
  return EINVAL;
}

bool parse_number(const std::string& s, double* out) {
  char* end = nullptr;
  *out = std::strtod(s.c_str(), &end);
  return !s.empty() && end != nullptr && *end == '\0';
}

bool parse_count(const std::string& s, uint64_t* out) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) return false;
  *out = std::strtoull(s.c_str(), nullptr, 10);
  return true;
}

// Reads the number option `key` into *out when present; false with a message when bad.
bool number_opt(const Args& a, const std::string& key, double* out, std::string* err) {
  if (!a.has(key)) return true;
  if (!parse_number(a.get(key, ""), out)) {
    *err = "--" + key + ": not a number: '" + a.get(key, "") + "'";
    return false;
  }
  return true;
}

bool count_opt(const Args& a, const std::string& key, uint64_t* out, std::string* err) {
  if (!a.has(key)) return true;
  if (!parse_count(a.get(key, ""), out)) {
    *err = "--" + key + ": not a count: '" + a.get(key, "") + "'";
    return false;
  }
  return true;
}

struct Common {
  ExecModel model;
  SimConfig sim;
  TierPrices prices;
  TierBytes physical;  // the tiers of one GPU's share of the host
  uint64_t seed = 1;
};

int load_common(const Args& a, Common* c) {
  std::string err;
  const std::string data_dir = a.get("data-dir", default_data_dir());
  if (int rc = load_exec_model(a.get("model", "llama-3.1-8b-instruct"),
                               a.get("gpu", "h100-pcie-80gb"), &c->model, &err, data_dir);
      rc != 0) {
    std::cerr << "tempo-sim: " << err << "\n";
    return -rc;
  }
  HostSpec host;
  if (int rc = load_host_spec(a.get("host", "h100-pcie-server"), data_dir, &host, &err); rc != 0) {
    std::cerr << "tempo-sim: " << err << "\n";
    return -rc;
  }
  if (physical_tier_bytes(c->model, host, &c->physical) != 0) return fail("bad host " + host.name);
  c->sim.pcie_up.bytes_per_sec = c->model.gpu().effective_host_link_bps();
  c->sim.pcie_down.bytes_per_sec = c->sim.pcie_up.bytes_per_sec;
  double pcie = 0, ssd = 0, ssd_lat = 0;
  if (!number_opt(a, "pcie-gbps", &pcie, &err) || !number_opt(a, "ssd-gbps", &ssd, &err) ||
      !number_opt(a, "ssd-latency-us", &ssd_lat, &err) ||
      !number_opt(a, "price-hbm", &c->prices.hbm_usd_per_gb, &err) ||
      !number_opt(a, "price-dram", &c->prices.dram_usd_per_gb, &err) ||
      !number_opt(a, "price-ssd", &c->prices.ssd_usd_per_gb, &err) ||
      !count_opt(a, "seed", &c->seed, &err)) {
    return fail(err);
  }
  if (a.has("pcie-gbps")) {
    if (!(pcie > 0)) return fail("--pcie-gbps must be > 0");
    c->sim.pcie_up.bytes_per_sec = c->sim.pcie_down.bytes_per_sec = pcie * 1e9;
  }
  if (a.has("ssd-gbps")) {
    if (!(ssd > 0)) return fail("--ssd-gbps must be > 0");
    c->sim.ssd.bytes_per_sec = ssd * 1e9;
  }
  if (a.has("ssd-latency-us")) {
    if (ssd_lat < 0) return fail("--ssd-latency-us must be >= 0");
    c->sim.ssd.latency_ns = static_cast<TimeNs>(ssd_lat * 1e3);
  }
  return 0;
}

int load_workload(const Args& a, const Common& c, Workload* w) {
  const std::string name = a.get("workload", a.has("trace") ? "trace" : "chat");
  if (name == "trace") {
    if (!a.has("trace")) return fail("--workload trace needs --trace FILE");
    TraceOptions o;
    o.kv_bytes_per_token = c.model.kv_bytes_per_token();
    uint64_t bt = o.block_tokens;
    std::string err;
    if (!count_opt(a, "trace-block-tokens", &bt, &err)) return fail(err);
    if (bt == 0 || bt > UINT32_MAX) return fail("--trace-block-tokens must be in [1, 2^32)");
    o.block_tokens = static_cast<uint32_t>(bt);
    std::vector<tempo::Request> reqs;
    TraceStats stats;
    if (int rc = load_trace(a.get("trace", ""), o, &reqs, &stats, &err); rc != 0) {
      std::cerr << "tempo-sim: " << err << "\n";
      return -rc;
    }
    if (make_from_trace(reqs, w) != 0) return fail("trace: inconsistent chunk sizes");
    return 0;
  }
  if (a.has("trace")) return fail("--trace goes with --workload trace");
  if (make_named_workload(name, c.seed, w) != 0) return fail("unknown workload '" + name + "'");
  return 0;
}

int cmd_list() {
  std::cout << "workloads:";
  for (const auto& n : named_workloads()) std::cout << ' ' << n;
  std::cout << "\npolicies:";
  for (const auto& n : eviction_policy_names()) std::cout << ' ' << n;
  std::cout << "\nprefetchers:";
  for (const auto& n : prefetcher_names()) std::cout << ' ' << n;
  std::cout << "\nbaselines:";
  for (const auto& n : baseline_names()) std::cout << ' ' << n;
  std::cout << "\nexperiments:";
  for (const auto& e : experiments()) std::cout << ' ' << e.name;
  std::cout << "\n";
  return 0;
}

nlohmann::ordered_json link_bytes_json(const LinkBytes& b) {
  return {{"pcie_up", b.pcie_up},
          {"pcie_down", b.pcie_down},
          {"ssd_read", b.ssd_read},
          {"ssd_write", b.ssd_write}};
}

// `run --json`: exact counts (reads by source, misses, bytes per link) and every summary
// metric, as one JSON object.
nlohmann::ordered_json run_json(const RunResult& r, const RunSummary& sum) {
  const CacheCounters& c = r.counters;
  const auto& by = c.reads_by_source;
  uint64_t reads = 0;
  for (uint64_t n : by) reads += n;
  LinkBytes total = c.demand;
  total.pcie_up += c.prefetch.pcie_up;
  total.pcie_down += c.prefetch.pcie_down;
  total.ssd_read += c.prefetch.ssd_read;
  total.ssd_write += c.prefetch.ssd_write;
  nlohmann::ordered_json summary;
  const auto cols = summary_columns();
  const auto vals = summary_values(sum);
  for (size_t i = 0; i < cols.size(); ++i) {
    double v = 0;
    summary[cols[i]] =
        parse_number(vals[i], &v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(vals[i]);
  }
  return {{"workload", r.workload},
          {"policy", r.policy},
          {"prefetch", r.prefetch},
          {"baseline", r.baseline},
          {"shape",
           {{"hbm_blocks", r.shape.hbm_blocks},
            {"dram_blocks", r.shape.dram_blocks},
            {"ssd_blocks", r.shape.ssd_blocks}}},
          {"block_bytes", r.block_bytes},
          {"accesses", r.accesses},
          {"reads", reads},
          {"writes", c.writes},
          {"write_hits", c.write_hits},
          {"reads_from",
           {{"hbm", by[static_cast<int>(Source::kHbm)]},
            {"dram", by[static_cast<int>(Source::kDram)]},
            {"ssd", by[static_cast<int>(Source::kSsd)]},
            {"recompute", by[static_cast<int>(Source::kRecompute)]}}},
          {"misses", reads - by[static_cast<int>(Source::kHbm)]},
          {"promotions", c.promotions},
          {"demotions", c.demotions},
          {"drops", c.drops},
          {"link_bytes",
           {{"demand", link_bytes_json(c.demand)},
            {"prefetch", link_bytes_json(c.prefetch)},
            {"total", link_bytes_json(total)}}},
          {"prefetches", c.prefetches},
          {"prefetch_hits", c.prefetch_hits},
          {"prefetch_wasted", c.prefetch_wasted},
          {"prefetches_overtaken", c.prefetches_overtaken},
          {"summary", summary}};
}

int cmd_run(const Args& a) {
  Common c;
  if (int rc = load_common(a, &c)) return rc;
  Workload w;
  if (int rc = load_workload(a, c, &w)) return rc;
  SimConfig s = c.sim;
  s.policy = a.get("policy", "lru");
  s.prefetch = a.get("prefetch", "none");
  s.baseline = a.get("baseline", "tiered");
  const std::string priority = a.get("link-priority", "demand");
  if (priority != "fifo" && priority != "demand") {
    return fail("--link-priority must be fifo or demand");
  }
  s.demand_priority = priority == "demand";
  const bool json = a.has("json");
  std::string err;
  double ratio = 0;
  uint64_t depth = s.prefetch_depth;
  if (!number_opt(a, "ratio", &ratio, &err) || !count_opt(a, "depth", &depth, &err) ||
      !number_opt(a, "ewma-alpha", &s.ewma_alpha, &err)) {
    return fail(err);
  }
  if (a.has("ratio") && !(ratio > 0)) return fail("--ratio must be > 0");
  s.prefetch_depth = static_cast<uint32_t>(depth);
  // The physical shape of the hardware files unless a ratio or a shape is given.
  s.shape = a.has("ratio")
                ? shape_for_ratio(working_set_blocks(w), ratio)
                : shape_for_bytes(c.physical, c.model.kv_bytes_per_token() * w.block_tokens);
  if (a.has("hbm") || a.has("dram") || a.has("ssd")) {
    TierShape shape{0, 0, 0};
    if (!count_opt(a, "hbm", &shape.hbm_blocks, &err) ||
        !count_opt(a, "dram", &shape.dram_blocks, &err) ||
        !count_opt(a, "ssd", &shape.ssd_blocks, &err)) {
      return fail(err);
    }
    s.shape = shape;
  }
  ExecModelCost cost(c.model);
  RunResult r;
  try {
    r = simulate(w, s, cost);
  } catch (const std::invalid_argument& e) {
    return fail(e.what());
  }
  const RunSummary sum = summarize(r, w, s.shape, c.prices);
  if (json) {
    std::cout << run_json(r, sum).dump(2) << "\n";
  } else {
    const auto cols = summary_columns();
    const auto vals = summary_values(sum);
    for (size_t i = 0; i < cols.size(); ++i) std::cout << cols[i] << ": " << vals[i] << "\n";
  }
  if (a.has("csv")) {
    std::ofstream f(a.get("csv", ""));
    write_summary_csv_header(f);
    write_summary_csv_row(sum, f);
    if (!f) return fail("cannot write " + a.get("csv", ""));
  }
  if (a.has("requests-csv")) {
    std::ofstream f(a.get("requests-csv", ""));
    write_requests_csv(r, f);
    if (!f) return fail("cannot write " + a.get("requests-csv", ""));
  }
  return 0;
}

int cmd_export(const Args& a) {
  Common c;
  if (int rc = load_common(a, &c)) return rc;
  if (!a.has("out")) return fail("export needs --out FILE");
  Workload w;
  if (int rc = load_workload(a, c, &w)) return rc;
  std::ofstream f(a.get("out", ""));
  if (!f || write_access_csv(w, c.model.kv_bytes_per_token() * w.block_tokens, f) != 0) {
    return fail("cannot write " + a.get("out", ""));
  }
  return 0;
}

int cmd_study(const Args& a) {
  Common c;
  if (int rc = load_common(a, &c)) return rc;
  if (!a.has("out")) return fail("study needs --out DIR");
  const std::filesystem::path dir = a.get("out", "");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return fail("cannot create " + dir.string() + ": " + ec.message());
  std::vector<std::string> only;
  if (a.has("only")) {
    std::stringstream ss(a.get("only", ""));
    for (std::string n; std::getline(ss, n, ',');) only.push_back(n);
    for (const auto& n : only) {
      bool known = false;
      for (const auto& e : experiments()) known = known || e.name == n;
      if (!known) return fail("unknown experiment '" + n + "'");
    }
  }
  StudyConfig sc;
  sc.seed = c.seed;
  sc.base = c.sim;
  sc.prices = c.prices;
  sc.physical = c.physical;
  Workload trace;
  if (a.has("trace")) {
    if (int rc = load_workload(a, c, &trace)) return rc;
    sc.trace = &trace;
  }
  ExecModelCost cost(c.model);
  for (const auto& e : experiments()) {
    if (!only.empty() && std::find(only.begin(), only.end(), e.name) == only.end()) continue;
    const Table t = e.run(sc, cost);
    const auto path = dir / (e.name + ".csv");
    std::ofstream f(path);
    t.write_csv(f);
    if (!f) return fail("cannot write " + path.string());
    std::cout << path.string() << ": " << t.rows.size() << " rows\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << kUsage;
    return EINVAL;
  }
  const std::string cmd = argv[1];
  Args a;
  for (int i = 2; i < argc; ++i) {
    std::string k = argv[i];
    if (k == "--json") {  // the one flag without a value
      a.opt["json"] = "";
      continue;
    }
    if (k.rfind("--", 0) != 0 || i + 1 >= argc) {
      std::cerr << "tempo-sim: expected --option VALUE, got '" << k << "'\n" << kUsage;
      return EINVAL;
    }
    a.opt[k.substr(2)] = argv[++i];
  }
  const std::vector<std::string> common = {
      "model",     "gpu",        "data-dir",  "pcie-gbps", "ssd-gbps", "ssd-latency-us",
      "price-hbm", "price-dram", "price-ssd", "seed",      "workload", "host"};
  std::vector<std::string> allowed = common;
  if (cmd == "run" || cmd == "export") {
    allowed.emplace_back("trace");
    allowed.emplace_back("trace-block-tokens");
  }
  if (cmd == "run") {
    for (const char* k : {"policy", "prefetch", "depth", "baseline", "link-priority", "ratio",
                          "hbm", "dram", "ssd", "ewma-alpha", "csv", "requests-csv", "json"}) {
      allowed.emplace_back(k);
    }
  } else if (cmd == "export") {
    allowed.emplace_back("out");
  } else if (cmd == "study") {
    for (const char* k : {"out", "only", "trace", "trace-block-tokens"}) allowed.emplace_back(k);
  }
  for (const auto& [k, v] : a.opt) {
    if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
      std::cerr << "tempo-sim: unknown option --" << k << " for '" << cmd << "'\n" << kUsage;
      return EINVAL;
    }
  }
  if (cmd == "list") return cmd_list();
  if (cmd == "run") return cmd_run(a);
  if (cmd == "export") return cmd_export(a);
  if (cmd == "study") return cmd_study(a);
  if (cmd == "help" || cmd == "--help") {
    std::cout << kUsage;
    return 0;
  }
  std::cerr << "tempo-sim: unknown command '" << cmd << "'\n" << kUsage;
  return EINVAL;
}
