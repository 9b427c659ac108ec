// tempo-replay: serve a workload through libtempo on a simulated device and compare
// commitment policies. See Documentation/tempo-replay.md.
#include <unistd.h>

#include <algorithm>
#include <cfloat>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>

#include "config/config_file.h"
#include "config/from_settings.h"
#include "config/settings.h"
#include "experiments.h"
#include "options.h"

namespace {

// The option ids beyond the short options' characters.
enum : int {
  kDefault = 256,
  kBlock,
  kSkip,
  kGpu,
  kDocs,
  kInterval,
  kRate,
  kCap,
  kActive,
  kFast,
  kBudget,
  kStaging,
  kDemand,
  kSlots,
  kSeed,
  kStore,
  kScale,
  kSpeedup,
  kHorizon,
  kTimeScale,
  kSkipN,
  kFirst,
  kInterference,
  kGpuKv,
  kKnownOutputs,
  kEngines,
  kHosts,
  kRouter,
  kCluster,
  kClusterRate,
  kClusterLatency,
  kTempod,
  kLayerWise,
  kLayerGroups,
  kSet,
  kConfig
};

const tempo::cli::Option kOptions[] = {
    {"experiment", 'e', "name",
     "compare (default), fig1, fig2, fig4, fig5, fig6, interference,\n"
     "cluster (the deployment without and with the cluster pool),\n"
     "layer-wise (whole-claim readiness and the three layer-wise modes)",
     'e'},
    {"default-comparison", 0, nullptr,
     "all policies, one model, 100% ratio, then the same with 4 engines\n"
     "sharing the device and budget (make run)",
     kDefault},
    {"workload", 'w', "name", "narrativeqa (default), loogle, trace", 'w'},
    {"trace", 't', "file", "JSONL trace (timestamp, input_length, output_length, hash_ids)", 't'},
    {"block-tokens", 0, "n", "trace block size in tokens (default 512)", kBlock},
    {"skip-malformed", 0, nullptr, "skip (and count) malformed trace lines", kSkip},
    {"time-scale", 0, "f", "trace arrivals (rebased to 0) times F (default 1)", kTimeScale},
    {"skip", 0, "n", "drop the trace's first N requests", kSkipN},
    {"first", 0, "n", "keep at most N trace requests (after --skip)", kFirst},
    {"model", 'm', "name", "llama-3.1-8b-instruct (default), qwen2.5-14b-instruct, or a .json",
     'm'},
    {"gpu", 0, "name", "h100-pcie-80gb (default), or a .json", kGpu},
    {"policy", 'p', "list",
     "comma-separated: demand, immediate, queue-K, tempo-static, tempo,\n"
     "tempo-risk[:W], dax-l1 (default: the seven commitment policies)",
     'p'},
    {"ratio", 'r', "pct", "prefix cache ratio, percent (default 100)", 'r'},
    {"documents", 0, "n", "documents in the set, 1-100000 (default 12, LooGLE 16)", kDocs},
    {"interval", 0, "dur", "fixed arrival interval (default 500ms)", kInterval},
    {"rate", 0, "r", "Poisson arrivals at R requests/s instead", kRate},
    {"output-cap", 0, "n",
     "generation limit (default 128; a trace keeps its own output\n"
     "lengths unless this is given)",
     kCap},
    {"max-active", 0, "n", "active sequences per engine (default 4)", kActive},
    {"engines", 0, "n",
     "N emulated engines (GPUs) on each host, sharing its device and\n"
     "budget, each its own queue (default 1)",
     kEngines},
    {"engines-per-host", 0, "n", "the same as --engines", kEngines},
    {"hosts", 0, "h", "sim: H hosts, each its own device, fast tier and budget (default 1)",
     kHosts},
    {"router", 0, "name",
     "round-robin (default) or prefix-affinity (requests that start with\n"
     "the same chunk go to the same engine)",
     kRouter},
    {"cluster", 0, nullptr,
     "sim: a cluster pool below every host's store (what one host saves,\n"
     "the others reuse)",
     kCluster},
    {"cluster-rate", 0, "bytes/s",
     "each host's rate to the pool (default 2.5GiB; implies --cluster)", kClusterRate},
    {"cluster-latency", 0, "dur", "per pool read or write-through (default 1ms; implies --cluster)",
     kClusterLatency},
    {"layer-wise", 0, "mode",
     "prefill group by group as each layer group's KV is ready: whole (one\n"
     "claim, committed whole), lead (one claim, committed by its lead TTR),\n"
     "per-group (a claim per group), off (default); sim and uring",
     kLayerWise},
    {"layer-groups", 0, "g", "layer groups per request with --layer-wise (1-64, default 4)",
     kLayerGroups},
    {"gpu-kv-memory", 0, nullptr,
     "admission also waits for GPU KV memory (90% of HBM after the weights)", kGpuKv},
    {"known-outputs", 0, nullptr,
     "the TTU estimator is given every request's true output length (an engine that knew "
     "them: the bound on what any TTU estimate can do; sim and uring)",
     kKnownOutputs},
    {"set", 0, "key=value",
     "a setting of the stack (Documentation/configuration.md), in order with\n"
     "the options below that name one; repeatable",
     kSet},
    {"config", 'c', "file", "settings from a configuration file, in order with --set", kConfig},
    {"fast-tier", 0, "bytes", "--set fast_tier_bytes (default 100GiB)", kFast},
    {"budget", 0, "bytes", "--set budget_bytes (default 50GiB)", kBudget},
    {"staging-rate", 0, "bytes/s",
     "--set staging_rate: the sim device's aggregate staging rate, where\n"
     "TTRs start (default 11GiB; TempoKV-Static's rate is static_rate)",
     kStaging},
    {"demand-rate", 0, "bytes/s", "--set demand_rate: the ordinary path (default 2GiB)", kDemand},
    {"slots", 0, "n", "--set staging_slots: concurrent staging operations (default 8)", kSlots},
    {"seed", 0, "n", "workload seed (default 1)", kSeed},
    {"device", 'd', "name",
     "sim (default: virtual time), uring (real I/O, wall clock) or daemon\n"
     "(uring served by a tempod started per policy, each of --engines a\n"
     "process of its own)",
     'd'},
    {"store", 0, "dir",
     "uring, daemon: the object store, kept between runs (default\n"
     "tempo-replay-store)",
     kStore},
    {"byte-scale", 0, "n",
     "uring, daemon: objects, fast tier and budget are 1/N of the model's\n"
     "(default 16)",
     kScale},
    {"speedup", 0, "k",
     "uring: the emulated GPU, its link, the arrivals and the stack's timers\n"
     "K times as fast (the real reads are not); results in the model's time\n"
     "(default 1)",
     kSpeedup},
    {"tempod", 0, "path", "daemon: the tempod binary (default: the one beside tempo-replay)",
     kTempod},
    {"jobs", 'j', "n",
     "sim: policies run side by side on N threads (default: the machine's\n"
     "hardware threads)",
     'j'},
    {"ttu-horizon", 0, "dur", "TTU projection horizon (default 20s; 0: the whole queue)", kHorizon},
    {"interference", 0, "w",
     "sim: START:END:FACTOR, the staging rate times FACTOR from START to END\n"
     "(e.g. 5s:15s:0.5)",
     kInterference},
    {"out", 'o', "dir", "output directory (default tempo-replay-out)", 'o'},
};

const tempo::cli::Tool kTool{
    "tempo-replay", "tempo-replay [options]",
    "Serves a workload through libtempo on a simulated (or real) device and compares\n"
    "commitment policies (Documentation/tempo-replay.md).",
    kOptions};

constexpr uint32_t kMaxDocuments = 100'000;
constexpr uint64_t kMinRateBps = 1ull << 20;

// The settings a replay runs: the sim stack's (device, provider, controller) and, with
// -d uring, the uring device's reads.
constexpr const char* kReplayKeys[] = {
    "fast_tier_bytes",   "budget_bytes",       "tick",        "staging_rate",
    "staging_slots",     "op_latency",         "demand_rate", "calibration_rate",
    "static_rate",       "rate_window",        "eviction",    "calibration_file",
    "uring.queue_depth", "uring.request_bytes"};

// The settings key an option names.
const char* setting_of(int option) {
  switch (option) {
    case kFast:
      return "fast_tier_bytes";
    case kBudget:
      return "budget_bytes";
    case kStaging:
      return "staging_rate";
    case kDemand:
      return "demand_rate";
    default:
      return "staging_slots";
  }
}

bool fail(const std::string& msg) {
  tempo::cli::usage_error("tempo-replay", msg);
  return false;
}

// Applies the options in command-line order; false (with a message) on a bad value.
bool apply_args(const tempo::cli::Args& args, tempo::ReplaySetup* s, std::string* experiment) {
  // The stack's settings, every default the table's: the options that name a setting and
  // --set/--config land here in command-line order.
  tempo::Settings settings;
  for (const tempo::cli::Given& given : args.given) {
    const int c = given.option->id;
    const std::string& arg = given.value;
    const char* name = given.option->long_name;
    std::string why;
    // The value as a whole number in [1, max], or a count from `min`; a real number.
    auto u32 = [&](uint32_t* out, uint32_t max = UINT32_MAX) {
      return tempo::cli::to_u32(name, arg, 1, max, out, &why) == 0 || fail(why);
    };
    auto count = [&](uint64_t* out, uint64_t min = 0) {
      return tempo::cli::to_u64(name, arg, min, UINT64_MAX, out, &why) == 0 || fail(why);
    };
    auto real = [&](double min, double max, double* out) {
      return tempo::cli::to_double(name, arg, min, max, out, &why) == 0 || fail(why);
    };
    auto bytes = [&](uint64_t* out) {
      const int64_t b = tempo::parse_bytes(arg);
      if (b <= 0) return fail("invalid byte count '" + arg + "' (e.g. 4096, 64KiB, 8GiB)");
      *out = static_cast<uint64_t>(b);
      return true;
    };
    // At least 1 MiB/s: at a few bytes a second one request's staging outlasts a century
    // of virtual time, and the run ticks through it for hours.
    auto rate = [&](double* out) {
      uint64_t b = 0;
      if (!bytes(&b)) return false;
      if (b < kMinRateBps) return fail("--" + std::string(name) + " below 1MiB (bytes/s)");
      *out = static_cast<double>(b);
      return true;
    };
    switch (c) {
      case 'e':
        *experiment = arg;
        break;
      case kDefault:
        *experiment = "compare";
        s->shared_engines_run = 4;
        break;
      case 'w':
        s->workload.name = arg;
        break;
      case 't':
        s->workload.name = "trace";
        s->workload.trace_path = arg;
        break;
      case kBlock:
        if (!u32(&s->workload.trace_block_tokens)) return false;
        break;
      case kSkip:
        s->workload.skip_malformed = true;
        break;
      case kTimeScale:
        if (!real(0, DBL_MAX, &s->workload.time_scale)) return false;
        if (!(s->workload.time_scale > 0)) return fail("--time-scale takes a positive factor");
        break;
      case kSkipN:
        if (!count(&s->workload.skip)) return false;
        break;
      case kFirst:
        if (!count(&s->workload.first, 1)) return false;
        break;
      case 'm':
        s->model = arg;
        break;
      case kGpu:
        s->gpu = arg;
        break;
      case 'p': {
        s->policies.clear();
        std::stringstream ss(arg);
        for (std::string p; std::getline(ss, p, ',');) {
          if (p != "dax-l1" && !tempo::parse_policy(p))
            return fail("unknown policy '" + p + "': accepted " +
                        std::string(tempo::policy_names_help()) + ", dax-l1");
          s->policies.push_back(p);
        }
        break;
      }
      case 'r': {
        double pct = 0;
        if (!real(0, 100, &pct)) return false;
        s->workload.prefix_cache_ratio = pct / 100;
        break;
      }
      case kDocs:
        // About 26 KB of workload a document: the cap keeps a mistyped count from
        // exhausting memory.
        if (!u32(&s->workload.documents, kMaxDocuments)) return false;
        break;
      case kInterval: {
        const tempo::TimeNs d = tempo::parse_duration(arg);
        if (d <= 0) return fail("invalid --interval '" + arg + "' (e.g. 500ms)");
        s->workload.arrivals.kind = tempo::ArrivalKind::kFixedInterval;
        s->workload.arrivals.interval = d;
        break;
      }
      case kRate:
        if (!real(0, DBL_MAX, &s->workload.arrivals.rate_per_s)) return false;
        if (!(s->workload.arrivals.rate_per_s > 0))
          return fail("--rate takes a positive number of requests/s");
        s->workload.arrivals.kind = tempo::ArrivalKind::kPoisson;
        break;
      case kCap:
        if (!u32(&s->workload.output_cap)) return false;
        s->engine.generation_limit = s->workload.output_cap;
        s->workload.cap_trace_outputs = true;
        break;
      case kActive:
        if (!u32(&s->engine.max_active)) return false;
        break;
      case kFast:
      case kBudget:
      case kStaging:
      case kDemand:
      case kSlots:
        if (settings.set(setting_of(c), arg, &why) != 0) return fail(why);
        break;
      case kSet: {
        const size_t eq = arg.find('=');
        if (eq == std::string::npos) return fail("--set takes key=value, not '" + arg + "'");
        if (settings.set(arg.substr(0, eq), arg.substr(eq + 1), &why) != 0) return fail(why);
        break;
      }
      case kConfig:
        if (tempo::load_config_file(settings, arg, &why) != 0) return fail(why);
        break;
      case kSeed:
        if (!count(&s->workload.seed)) return false;
        break;
      case 'o':
        s->out_dir = arg;
        break;
      case kGpuKv:
        s->gpu_kv_memory = true;
        break;
      case kKnownOutputs:
        s->engine.known_outputs = true;
        break;
      case kEngines:
      case kHosts: {
        const bool engines = c == kEngines;
        uint32_t* out = engines ? &s->deployment.engines_per_host : &s->deployment.hosts;
        uint64_t n = 0;
        if (!tempo::cli::parse_u64(arg, &n) || n == 0 || n > tempo::kMaxDeploymentSize)
          return fail(std::string(engines ? "--engines takes a number of engines"
                                          : "--hosts takes a number of hosts") +
                      " from 1 to " + std::to_string(tempo::kMaxDeploymentSize));
        *out = static_cast<uint32_t>(n);
        break;
      }
      case kRouter: {
        const auto r = tempo::parse_router(arg);
        if (!r) return fail("unknown router '" + arg + "': accepted round-robin, prefix-affinity");
        s->deployment.router = *r;
        break;
      }
      case kCluster:
        s->deployment.cluster.enabled = true;
        break;
      case kClusterRate:
        if (!rate(&s->deployment.cluster.rate_bps)) return false;
        s->deployment.cluster.enabled = true;
        break;
      case kClusterLatency: {
        const tempo::TimeNs d = tempo::parse_duration(arg);
        if (d < 0) return fail("invalid --cluster-latency '" + arg + "' (e.g. 1ms, 0)");
        s->deployment.cluster.latency = d;
        s->deployment.cluster.enabled = true;
        break;
      }
      case kInterference: {
        if (tempo::parse_interference(arg, &s->interference, &why) != 0) return fail(why);
        break;
      }
      case 'j':
        if (!u32(&s->jobs)) return false;
        break;
      case kHorizon: {
        const tempo::TimeNs d = tempo::parse_duration(arg);
        if (d < 0) return fail("invalid --ttu-horizon '" + arg + "' (e.g. 20s, 0: none)");
        s->engine.ttu_horizon = d == 0 ? tempo::kNever : d;
        break;
      }
      case 'd':
        if (arg != "sim" && arg != "uring" && arg != "daemon")
          return fail("--device takes sim, uring or daemon");
        s->device = arg;
        break;
      case kStore:
        s->store_dir = arg;
        break;
      case kTempod:
        s->tempod = arg;
        break;
      case kLayerWise: {
        const auto mode = tempo::parse_layer_wise(arg);
        if (!mode) return fail("--layer-wise takes off, whole, lead or per-group");
        s->engine.layer_wise = *mode;
        break;
      }
      case kLayerGroups:
        if (tempo::cli::to_u32(name, arg, 1, tempo::kMaxLayerGroups, &s->engine.layer_groups,
                               &why) != 0)
          return fail(why);
        break;
      case kSpeedup:
        if (!real(1, 1e6, &s->speedup)) return false;
        break;
      case kScale: {
        uint32_t n = 0;
        if (!u32(&n)) return false;
        s->byte_scale = n;
        break;
      }
    }
  }
  if (s->workload.name == "trace" && s->workload.trace_path.empty())
    return fail("the trace workload needs --trace FILE");
  const bool sliced = s->workload.time_scale != 1.0 || s->workload.skip || s->workload.first;
  if (s->workload.name != "trace" && (sliced || s->workload.skip_malformed))
    return fail("--time-scale, --skip, --first and --skip-malformed apply to traces only");
  if ((s->deployment.hosts > 1 || s->deployment.cluster.enabled) && s->device != "sim")
    return fail("--hosts and the cluster tier apply to the sim device only");
  if (s->speedup != 1 && s->device != "uring")
    return fail("--speedup applies to the uring device only");
  if (s->interference.active() && s->device != "sim")
    return fail("--interference applies to the sim device only");
  if (s->engine.known_outputs && s->device == "daemon")
    return fail(
        "--known-outputs applies to the sim and uring devices (the C ABI the daemon's engines "
        "use takes no waiting request's output length)");
  const bool layered =
      s->engine.layer_wise != tempo::LayerWise::kOff || *experiment == "layer-wise";
  if (layered && (s->device == "daemon" || s->deployment.hosts > 1 ||
                  s->deployment.cluster.enabled || s->deployment.engines_per_host > 1))
    return fail("--layer-wise runs one engine on the sim or uring device");
  std::string why;
  // A key the replay does not run would be a silent sink: refused, naming what it runs.
  for (const std::string& key : settings.explicit_keys) {
    if (key == "policy") return fail("the replay's policies are -p/--policy, not 'policy'");
    if (std::find(std::begin(kReplayKeys), std::end(kReplayKeys), key) == std::end(kReplayKeys)) {
      std::string keys;
      for (const char* k : kReplayKeys) keys += std::string(keys.empty() ? "" : ", ") + k;
      return fail("'" + key + "' is not a setting a replay runs: accepted " + keys);
    }
  }
  if (settings.validate(&why) != 0) return fail(why);
  // At least 1 MiB/s: at a few bytes a second one request's staging outlasts a century of
  // virtual time, and the run ticks through it for hours.
  for (const auto& [key, bps] : {std::pair{"staging_rate", settings.staging_rate_bps},
                                 std::pair{"demand_rate", settings.demand_rate_bps}})
    if (bps < kMinRateBps) return fail(std::string(key) + " below 1MiB (bytes/s)");
  s->stack = tempo::sim_stack_config(settings);
  s->uring = tempo::uring_device_options(settings);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  tempo::ReplaySetup setup = tempo::default_setup();
  setup.jobs = std::max(1u, std::thread::hardware_concurrency());
  std::string experiment = "compare";
  tempo::cli::Args args;
  if (const auto exit = tempo::cli::parse_or_exit(kTool, argc - 1, argv + 1, &args)) return *exit;
  if (!apply_args(args, &setup, &experiment)) return 2;
  setup.progress = isatty(STDERR_FILENO);
  std::string error;
  const int r = tempo::run_experiment(experiment, setup, &error);
  if (r != 0) {
    std::fprintf(stderr, "tempo-replay: %s\n", error.c_str());
    return 1;
  }
  std::printf("tempo-replay: CSVs in %s/%s/\n", setup.out_dir.c_str(), experiment.c_str());
  return 0;
}
