// tempo-sim: the tiered KV placement simulator (HBM / DRAM / SSD).
//   tempo-sim list
//   tempo-sim run     [--workload W] [--policy P] [--prefetch X] [--baseline B] [shape] ...
//   tempo-sim export  [--workload W] --out FILE        access stream as CSV
//   tempo-sim study   --out DIR [--only a,b]           the experiment grids as CSV
// See Documentation/tempo-sim.md.
#include <algorithm>
#include <cerrno>
#include <cfloat>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/exec_model.h"
#include "options.h"
#include "placement/experiments.h"
#include "placement/generators.h"
#include "placement/hardware.h"
#include "placement/metrics.h"
#include "placement/prefetch.h"
#include "placement/simulator.h"
#include "policies/study_policies.h"
#include "workload/trace.h"

using namespace tempo;
using namespace tempo::placement;

namespace {

const cli::Option kCommonOptions[] = {
    {"model", 0, "name|file", "the model (default llama-3.1-8b-instruct)"},
    {"gpu", 0, "name|file", "the GPU (default h100-pcie-80gb)"},
    {"host", 0, "name|file", "the host (default h100-pcie-server)"},
    {"data-dir", 0, "dir", "where the model, GPU and host files are"},
    {"pcie-gbps", 0, "G", "the PCIe link in GB/s (default: the GPU's)"},
    {"ssd-gbps", 0, "G", "the SSD in GB/s"},
    {"ssd-latency-us", 0, "U", "the SSD's latency in microseconds"},
    {"price-hbm", 0, "USD", "HBM price per GB (default 187.50)"},
    {"price-dram", 0, "USD", "DRAM price per GB (default 3.50)"},
    {"price-ssd", 0, "USD", "SSD price per GB (default 0.08)"},
    {"seed", 0, "N", "workload seed (default 1)"},
    {"workload", 0, "W", "chat (default), chat-single, agent, docqa or trace"},
};
const cli::Option kTraceOptions[] = {
    {"trace", 0, "file.jsonl", "a request trace (the trace workload)"},
    {"trace-block-tokens", 0, "N", "the trace's block size in tokens (default 512)"},
};
const cli::Option kRunOptions[] = {
    {"policy", 0, "P", "the eviction policy of every tier (default lru; `tempo-sim list`)"},
    {"prefetch", 0, "X", "none (default), causal, oracle or laxity"},
    {"depth", 0, "N", "prefetch depth in blocks"},
    {"baseline", 0, "B", "tiered (default), gpu-only, prefix-reuse or full-cpu-offload"},
    {"link-priority", 0, "fifo|demand", "demand fetches first (default) or in order"},
    {"ratio", 0, "R", "the 1:8:64 shape with HBM = working set / R"},
    {"hbm", 0, "N", "HBM blocks (with --dram and --ssd: any shape)"},
    {"dram", 0, "N", "DRAM blocks"},
    {"ssd", 0, "N", "SSD blocks"},
    {"ewma-alpha", 0, "A", "the EWMA weight of history-keeping policies"},
    {"csv", 0, "file", "the summary as a one-row CSV"},
    {"requests-csv", 0, "file", "one CSV row per request"},
    {"json", 0, nullptr, "print one JSON object with exact counts instead of text"},
};
const cli::Option kExportOptions[] = {
    {"out", 0, "file", "the access stream as CSV (time,block_id,size_bytes); required"},
};
const cli::Option kStudyOptions[] = {
    {"out", 0, "dir", "one CSV per experiment grid goes here; required"},
    {"only", 0, "name,...", "run these experiments only (`tempo-sim list`)"},
};

struct Subcommand {
  const char* name;
  const char* usage;
  const char* summary;
  std::vector<std::span<const cli::Option>> options;
  int (*run)(const cli::Args& a);
};

constexpr double kMinRatio = 1e-3;

int bad_usage(const std::string& msg) { return cli::usage_error("tempo-sim", msg); }

int fail(const std::string& msg) {
  std::cerr << "tempo-sim: " << msg << "\n";
  return EINVAL;
}

// A summary value as a JSON number when it is one.
bool parse_number(const std::string& s, double* out) {
  char* end = nullptr;
  *out = std::strtod(s.c_str(), &end);
  return !s.empty() && end != nullptr && *end == '\0';
}

// Reads the number option `key` into *out when present; false with a message when bad.
bool number_opt(const cli::Args& a, const std::string& key, double* out, std::string* err) {
  return !a.has(key) || cli::to_double(key, a.get(key), -DBL_MAX, DBL_MAX, out, err) == 0;
}

bool count_opt(const cli::Args& a, const std::string& key, uint64_t* out, std::string* err) {
  return !a.has(key) || cli::to_u64(key, a.get(key), 0, UINT64_MAX, out, err) == 0;
}

struct Common {
  ExecModel model;
  SimConfig sim;
  TierPrices prices;
  TierBytes physical;  // the tiers of one GPU's share of the host
  uint64_t seed = 1;
};

int load_common(const cli::Args& a, Common* c) {
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
    return bad_usage(err);
  }
  if (a.has("pcie-gbps")) {
    if (!(pcie > 0)) return bad_usage("--pcie-gbps must be > 0");
    c->sim.pcie_up.bytes_per_sec = c->sim.pcie_down.bytes_per_sec = pcie * 1e9;
  }
  if (a.has("ssd-gbps")) {
    if (!(ssd > 0)) return bad_usage("--ssd-gbps must be > 0");
    c->sim.ssd.bytes_per_sec = ssd * 1e9;
  }
  if (!(c->prices.hbm_usd_per_gb >= 0 && c->prices.dram_usd_per_gb >= 0 &&
        c->prices.ssd_usd_per_gb >= 0))
    return bad_usage("--price-hbm, --price-dram and --price-ssd must be >= 0");
  if (a.has("ssd-latency-us")) {
    if (ssd_lat < 0) return bad_usage("--ssd-latency-us must be >= 0");
    c->sim.ssd.latency_ns = static_cast<TimeNs>(ssd_lat * 1e3);
  }
  return 0;
}

int load_workload(const cli::Args& a, const Common& c, Workload* w) {
  const std::string name = a.get("workload", a.has("trace") ? "trace" : "chat");
  if (name == "trace") {
    if (!a.has("trace")) return bad_usage("--workload trace needs --trace FILE");
    TraceOptions o;
    o.kv_bytes_per_token = c.model.kv_bytes_per_token();
    std::string err;
    if (a.has("trace-block-tokens") &&
        cli::to_u32("trace-block-tokens", a.get("trace-block-tokens"), 1, UINT32_MAX,
                    &o.block_tokens, &err) != 0)
      return bad_usage(err);
    std::vector<tempo::Request> reqs;
    TraceStats stats;
    if (int rc = load_trace(a.get("trace", ""), o, &reqs, &stats, &err); rc != 0) {
      std::cerr << "tempo-sim: " << err << "\n";
      return -rc;
    }
    // As tempo-replay rejects them: a request past the model's context is no request it
    // serves (one of 2^24 output tokens used to grow the simulation by gigabytes).
    const uint64_t max_context = c.model.model().max_context_tokens;
    const size_t before = reqs.size();
    std::erase_if(reqs, [&](const tempo::Request& r) {
      return r.input_tokens + uint64_t{r.output_tokens} > max_context;
    });
    if (reqs.size() < before)
      std::cerr << "tempo-sim: " << before - reqs.size() << " of " << before
                << " requests left out: prompt + output over the model's " << max_context
                << " tokens of context\n";
    if (reqs.empty()) return fail("trace " + a.get("trace", "") + ": no requests");
    if (make_from_trace(reqs, w) != 0) return fail("trace: inconsistent chunk sizes");
    return 0;
  }
  if (a.has("trace")) return bad_usage("--trace goes with --workload trace");
  if (make_named_workload(name, c.seed, w) != 0)
    return bad_usage("unknown workload '" + name + "'");
  return 0;
}

int cmd_list() {
  std::cout << "workloads:";
  for (const auto& n : named_workloads()) std::cout << ' ' << n;
  std::cout << "\npolicies:";
  for (const auto& n : study_policy_names()) std::cout << ' ' << n;
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

int cmd_run(const cli::Args& a) {
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
    return bad_usage("--link-priority must be fifo or demand");
  }
  s.demand_priority = priority == "demand";
  const bool json = a.has("json");
  std::string err;
  double ratio = 0;
  if (!number_opt(a, "ratio", &ratio, &err) || !number_opt(a, "ewma-alpha", &s.ewma_alpha, &err) ||
      (a.has("depth") &&
       cli::to_u32("depth", a.get("depth"), 0, UINT32_MAX, &s.prefetch_depth, &err) != 0)) {
    return bad_usage(err);
  }
  // Below 1/1000 the HBM (and the 8x and 64x tiers after it) pass any real block count.
  if (a.has("ratio") && !(ratio >= kMinRatio))
    return bad_usage("--ratio must be >= 0.001 (HBM at most 1000 x the working set)");
  if (a.has("ewma-alpha") && !(s.ewma_alpha > 0 && s.ewma_alpha <= 1))
    return bad_usage("--ewma-alpha must be in (0, 1]");
  // The physical shape of the hardware files unless a ratio or a shape is given.
  s.shape = a.has("ratio")
                ? shape_for_ratio(working_set_blocks(w), ratio)
                : shape_for_bytes(c.physical, c.model.kv_bytes_per_token() * w.block_tokens);
  if (a.has("hbm") || a.has("dram") || a.has("ssd")) {
    TierShape shape{0, 0, 0};
    if (!count_opt(a, "hbm", &shape.hbm_blocks, &err) ||
        !count_opt(a, "dram", &shape.dram_blocks, &err) ||
        !count_opt(a, "ssd", &shape.ssd_blocks, &err)) {
      return bad_usage(err);
    }
    s.shape = shape;
  }
  ExecModelCost cost(c.model);
  RunResult r;
  try {
    r = simulate(w, s, cost);
  } catch (const std::invalid_argument& e) {
    return bad_usage(e.what());
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
    f.close();
    if (!f) return fail("cannot write " + a.get("csv", ""));
  }
  if (a.has("requests-csv")) {
    std::ofstream f(a.get("requests-csv", ""));
    write_requests_csv(r, f);
    f.close();
    if (!f) return fail("cannot write " + a.get("requests-csv", ""));
  }
  return 0;
}

int cmd_export(const cli::Args& a) {
  Common c;
  if (int rc = load_common(a, &c)) return rc;
  if (!a.has("out")) return bad_usage("export needs --out FILE");
  Workload w;
  if (int rc = load_workload(a, c, &w)) return rc;
  std::ofstream f(a.get("out", ""));
  const int r = f ? write_access_csv(w, c.model.kv_bytes_per_token() * w.block_tokens, f) : -EIO;
  f.close();
  if (r != 0 || !f) return fail("cannot write " + a.get("out", ""));
  return 0;
}

int cmd_study(const cli::Args& a) {
  Common c;
  if (int rc = load_common(a, &c)) return rc;
  if (!a.has("out")) return bad_usage("study needs --out DIR");
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
      if (!known) return bad_usage("unknown experiment '" + n + "'");
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
    f.close();
    if (!f) return fail("cannot write " + path.string());
    std::cout << path.string() << ": " << t.rows.size() << " rows\n";
  }
  return 0;
}

const Subcommand kSubcommands[] = {
    {"list",
     "tempo-sim list",
     "Prints the registered workloads, policies, prefetchers, baselines and experiments.",
     {},
     [](const cli::Args&) { return cmd_list(); }},
    {"run",
     "tempo-sim run [--workload W] [--trace FILE.jsonl [--trace-block-tokens N]] [--policy P]\n"
     "                     [--prefetch X] [--depth N] [--baseline B] [--link-priority "
     "fifo|demand]\n"
     "                     [--ratio R | --hbm N --dram N --ssd N] [--ewma-alpha A]\n"
     "                     [--csv FILE] [--requests-csv FILE] [--json] [common options]",
     "Simulates one configuration and prints every summary metric.",
     {kRunOptions, kTraceOptions, kCommonOptions},
     cmd_run},
    {"export",
     "tempo-sim export [--workload W | --trace FILE] --out FILE [common options]",
     "Writes the workload's access stream as CSV for external cache simulators.",
     {kExportOptions, kTraceOptions, kCommonOptions},
     cmd_export},
    {"study",
     "tempo-sim study --out DIR [--only name,...] [--trace FILE.jsonl] [common options]",
     "Runs the experiment grids and writes one CSV each into DIR.",
     {kStudyOptions, kTraceOptions, kCommonOptions},
     cmd_study},
};

void usage(std::FILE* to) {
  std::fprintf(to, "usage: tempo-sim <command> [<options>]\n\ncommands:\n");
  for (const Subcommand& c : kSubcommands) std::fprintf(to, "    %-8s %s\n", c.name, c.summary);
  std::fprintf(to, "\n`tempo-sim <command> --help` for its options; `tempo-sim --version`.\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const std::string cmd = argv[1];
  if (cmd == "help" || cmd == "--help" || cmd == "-h") {
    usage(stdout);
    return 0;
  }
  if (cmd == "--version") {
    cli::print_version("tempo-sim");
    return 0;
  }
  for (const Subcommand& c : kSubcommands) {
    if (cmd != c.name) continue;
    std::vector<cli::Option> options;
    for (std::span<const cli::Option> part : c.options)
      options.insert(options.end(), part.begin(), part.end());
    const std::string name = "tempo-sim " + cmd;
    const cli::Tool tool{name.c_str(), c.usage, c.summary, options};
    cli::Args a;
    if (const auto exit = cli::parse_or_exit(tool, argc - 2, argv + 2, &a)) return *exit;
    return c.run(a);
  }
  std::cerr << "tempo-sim: unknown command '" << cmd << "'\n";
  usage(stderr);
  return 2;
}
