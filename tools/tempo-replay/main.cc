// tempo-replay: serve a workload through libtempo on a simulated device and compare
// commitment policies. See Documentation/tempo-replay.md.
#include <getopt.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>

#include "config/settings.h"
#include "experiments.h"

namespace {

void usage(std::FILE* out) {
  std::fprintf(
      out,
      "usage: tempo-replay [options]\n"
      "  -e, --experiment NAME   compare (default), fig1, fig2, fig4, fig5, fig6,\n"
      "                          interference, cluster (the deployment without and with\n"
      "                          the cluster pool)\n"
      "      --default-comparison  all policies, one model, 100%% ratio (make run)\n"
      "  -w, --workload NAME     narrativeqa (default), loogle, trace\n"
      "  -t, --trace FILE        JSONL trace (timestamp, input_length, output_length, hash_ids)\n"
      "      --block-tokens N    trace block size in tokens (default 512)\n"
      "      --skip-malformed    skip (and count) malformed trace lines\n"
      "      --time-scale F      trace arrivals (rebased to 0) times F (default 1)\n"
      "      --skip N            drop the trace's first N requests\n"
      "      --first N           keep at most N trace requests (after --skip)\n"
      "  -m, --model NAME        llama-3.1-8b-instruct (default), qwen2.5-14b-instruct, or a "
      ".json\n"
      "      --gpu NAME          h100-pcie-80gb (default), or a .json\n"
      "  -p, --policy LIST       comma-separated: demand, immediate, queue-K, tempo-static,\n"
      "                          tempo, tempo-risk[:W], dax-l1 (default: the seven\n"
      "                          commitment policies)\n"
      "  -r, --ratio PCT         prefix cache ratio, percent (default 100)\n"
      "      --documents N       documents in the set (default 12, LooGLE 16)\n"
      "      --interval DUR      fixed arrival interval (default 500ms)\n"
      "      --rate R            Poisson arrivals at R requests/s instead\n"
      "      --output-cap N      generation limit (default 128; a trace keeps its own\n"
      "                          output lengths unless this is given)\n"
      "      --max-active N      active sequences per engine (default 4)\n"
      "      --engines N         N emulated engines (GPUs) on each host, sharing its device\n"
      "                          and budget, each its own queue (default 1)\n"
      "      --engines-per-host N  the same as --engines\n"
      "      --hosts H           sim: H hosts, each its own device, fast tier and budget\n"
      "                          (default 1)\n"
      "      --router NAME       round-robin (default) or prefix-affinity (requests that\n"
      "                          start with the same chunk go to the same engine)\n"
      "      --cluster           sim: a cluster pool below every host's store (what one\n"
      "                          host saves, the others reuse)\n"
      "      --cluster-rate B/S  each host's rate to the pool (default 2.5GiB; implies\n"
      "                          --cluster)\n"
      "      --cluster-latency DUR  per pool read or write-through (default 1ms; implies\n"
      "                          --cluster)\n"
      "      --gpu-kv-memory     admission also waits for GPU KV memory (90%% of HBM\n"
      "                          after the weights)\n"
      "      --fast-tier BYTES   fast-tier capacity (default 100GiB)\n"
      "      --budget BYTES      protected-capacity budget (default 50GiB)\n"
      "      --staging-rate B/S  aggregate staging rate (default 11GiB)\n"
      "      --demand-rate B/S   ordinary-path rate (default 2GiB)\n"
      "      --slots N           concurrent staging operations (default 8)\n"
      "      --seed N            workload seed (default 1)\n"
      "  -d, --device NAME       sim (default: virtual time), uring (real I/O, wall clock)\n"
      "                          or daemon (uring served by a tempod started per policy,\n"
      "                          each of --engines a process of its own)\n"
      "      --store DIR         uring, daemon: the object store, kept between runs\n"
      "                          (default tempo-replay-store)\n"
      "      --byte-scale N      uring, daemon: objects, fast tier and budget are 1/N of\n"
      "                          the model's (default 16)\n"
      "      --tempod PATH       daemon: the tempod binary (default: beside tempo-replay)\n"
      "  -j, --jobs N            sim: policies run side by side on N threads\n"
      "                          (default: the machine's hardware threads)\n"
      "      --ttu-horizon DUR   TTU projection horizon (default 20s; 0: the whole queue)\n"
      "      --interference W    sim: START:END:FACTOR, the staging rate times FACTOR\n"
      "                          from START to END (e.g. 5s:15s:0.5)\n"
      "  -o, --out DIR           output directory (default tempo-replay-out)\n"
      "  -h, --help\n");
}

bool fail(const std::string& msg) {
  std::fprintf(stderr, "tempo-replay: %s\n", msg.c_str());
  return false;
}

bool parse_u32(const char* text, uint32_t* out) {
  char* end = nullptr;
  const unsigned long v = std::strtoul(text, &end, 10);
  if (!*text || *end || v == 0 || v > UINT32_MAX) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

bool parse_args(int argc, char** argv, tempo::ReplaySetup* s, std::string* experiment) {
  enum {
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
    kHorizon,
    kTimeScale,
    kSkipN,
    kFirst,
    kInterference,
    kGpuKv,
    kEngines,
    kHosts,
    kRouter,
    kCluster,
    kClusterRate,
    kClusterLatency,
    kTempod
  };
  static const option kOpts[] = {{"experiment", required_argument, nullptr, 'e'},
                                 {"default-comparison", no_argument, nullptr, kDefault},
                                 {"workload", required_argument, nullptr, 'w'},
                                 {"trace", required_argument, nullptr, 't'},
                                 {"block-tokens", required_argument, nullptr, kBlock},
                                 {"skip-malformed", no_argument, nullptr, kSkip},
                                 {"time-scale", required_argument, nullptr, kTimeScale},
                                 {"skip", required_argument, nullptr, kSkipN},
                                 {"first", required_argument, nullptr, kFirst},
                                 {"model", required_argument, nullptr, 'm'},
                                 {"gpu", required_argument, nullptr, kGpu},
                                 {"policy", required_argument, nullptr, 'p'},
                                 {"ratio", required_argument, nullptr, 'r'},
                                 {"documents", required_argument, nullptr, kDocs},
                                 {"interval", required_argument, nullptr, kInterval},
                                 {"rate", required_argument, nullptr, kRate},
                                 {"output-cap", required_argument, nullptr, kCap},
                                 {"max-active", required_argument, nullptr, kActive},
                                 {"fast-tier", required_argument, nullptr, kFast},
                                 {"budget", required_argument, nullptr, kBudget},
                                 {"staging-rate", required_argument, nullptr, kStaging},
                                 {"demand-rate", required_argument, nullptr, kDemand},
                                 {"slots", required_argument, nullptr, kSlots},
                                 {"seed", required_argument, nullptr, kSeed},
                                 {"out", required_argument, nullptr, 'o'},
                                 {"jobs", required_argument, nullptr, 'j'},
                                 {"ttu-horizon", required_argument, nullptr, kHorizon},
                                 {"interference", required_argument, nullptr, kInterference},
                                 {"gpu-kv-memory", no_argument, nullptr, kGpuKv},
                                 {"engines", required_argument, nullptr, kEngines},
                                 {"engines-per-host", required_argument, nullptr, kEngines},
                                 {"hosts", required_argument, nullptr, kHosts},
                                 {"router", required_argument, nullptr, kRouter},
                                 {"cluster", no_argument, nullptr, kCluster},
                                 {"cluster-rate", required_argument, nullptr, kClusterRate},
                                 {"cluster-latency", required_argument, nullptr, kClusterLatency},
                                 {"device", required_argument, nullptr, 'd'},
                                 {"store", required_argument, nullptr, kStore},
                                 {"byte-scale", required_argument, nullptr, kScale},
                                 {"tempod", required_argument, nullptr, kTempod},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  int c = 0;
  while ((c = getopt_long(argc, argv, "e:w:t:m:p:r:o:j:d:h", kOpts, nullptr)) != -1) {
    const std::string arg = optarg ? optarg : "";
    auto bytes = [&](uint64_t* out) {
      const int64_t b = tempo::parse_bytes(arg);
      if (b <= 0) return fail("invalid byte count '" + arg + "' (e.g. 4096, 64KiB, 8GiB)");
      *out = static_cast<uint64_t>(b);
      return true;
    };
    auto rate = [&](double* out) {
      uint64_t b = 0;
      if (!bytes(&b)) return false;
      *out = static_cast<double>(b);
      return true;
    };
    switch (c) {
      case 'e':
        *experiment = arg;
        break;
      case kDefault:
        *experiment = "compare";
        break;
      case 'w':
        s->workload.name = arg;
        break;
      case 't':
        s->workload.name = "trace";
        s->workload.trace_path = arg;
        break;
      case kBlock:
        if (!parse_u32(optarg, &s->workload.trace_block_tokens))
          return fail("invalid --block-tokens");
        break;
      case kSkip:
        s->workload.skip_malformed = true;
        break;
      case kTimeScale: {
        char* end = nullptr;
        const double f = std::strtod(optarg, &end);
        if (!*optarg || *end || !(f > 0) || !std::isfinite(f))
          return fail("--time-scale takes a positive factor");
        s->workload.time_scale = f;
        break;
      }
      case kSkipN:
      case kFirst: {
        char* end = nullptr;
        const unsigned long long n = std::strtoull(optarg, &end, 10);
        if (!*optarg || *end || optarg[0] == '-')
          return fail(std::string(c == kSkipN ? "--skip" : "--first") +
                      " takes a count of requests");
        (c == kSkipN ? s->workload.skip : s->workload.first) = n;
        break;
      }
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
        char* end = nullptr;
        const double pct = std::strtod(optarg, &end);
        if (*end || pct < 0 || pct > 100) return fail("--ratio takes a percentage from 0 to 100");
        s->workload.prefix_cache_ratio = pct / 100;
        break;
      }
      case kDocs:
        if (!parse_u32(optarg, &s->workload.documents)) return fail("invalid --documents");
        break;
      case kInterval: {
        const tempo::TimeNs d = tempo::parse_duration(arg);
        if (d <= 0) return fail("invalid --interval '" + arg + "' (e.g. 500ms)");
        s->workload.arrivals.kind = tempo::ArrivalKind::kFixedInterval;
        s->workload.arrivals.interval = d;
        break;
      }
      case kRate: {
        char* end = nullptr;
        const double r = std::strtod(optarg, &end);
        if (*end || !(r > 0)) return fail("--rate takes a positive number of requests/s");
        s->workload.arrivals.kind = tempo::ArrivalKind::kPoisson;
        s->workload.arrivals.rate_per_s = r;
        break;
      }
      case kCap:
        if (!parse_u32(optarg, &s->workload.output_cap)) return fail("invalid --output-cap");
        s->engine.generation_limit = s->workload.output_cap;
        s->workload.cap_trace_outputs = true;
        break;
      case kActive:
        if (!parse_u32(optarg, &s->engine.max_active)) return fail("invalid --max-active");
        break;
      case kFast:
        if (!bytes(&s->stack.device.capacity_bytes)) return false;
        break;
      case kBudget:
        if (!bytes(&s->stack.provider.budget_bytes)) return false;
        break;
      case kStaging:
        if (!rate(&s->stack.device.staging_rate_bps)) return false;
        s->stack.provider.calibration_rate_bps = s->stack.device.staging_rate_bps;
        s->stack.provider.static_rate_bps = s->stack.device.staging_rate_bps;
        break;
      case kDemand:
        if (!rate(&s->stack.device.demand_rate_bps)) return false;
        break;
      case kSlots:
        if (!parse_u32(optarg, &s->stack.device.staging_slots)) return fail("invalid --slots");
        break;
      case kSeed: {
        char* end = nullptr;
        s->workload.seed = std::strtoull(optarg, &end, 10);
        if (!*optarg || *end) return fail("invalid --seed");
        break;
      }
      case 'o':
        s->out_dir = arg;
        break;
      case kGpuKv:
        s->gpu_kv_memory = true;
        break;
      case kEngines:
      case kHosts: {
        const bool engines = c == kEngines;
        uint32_t* out = engines ? &s->deployment.engines_per_host : &s->deployment.hosts;
        if (!parse_u32(optarg, out) || *out > tempo::kMaxDeploymentSize)
          return fail(std::string(engines ? "--engines takes a number of engines"
                                          : "--hosts takes a number of hosts") +
                      " from 1 to " + std::to_string(tempo::kMaxDeploymentSize));
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
        std::string why;
        if (tempo::parse_interference(arg, &s->interference, &why) != 0) return fail(why);
        break;
      }
      case 'j':
        if (!parse_u32(optarg, &s->jobs)) return fail("--jobs takes a positive integer");
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
      case kScale: {
        uint32_t n = 0;
        if (!parse_u32(optarg, &n)) return fail("--byte-scale takes a positive integer");
        s->byte_scale = n;
        break;
      }
      case 'h':
        usage(stdout);
        std::exit(0);
      default:
        usage(stderr);
        return false;
    }
  }
  if (optind < argc) return fail(std::string("unexpected argument '") + argv[optind] + "'");
  if (s->workload.name == "trace" && s->workload.trace_path.empty())
    return fail("the trace workload needs --trace FILE");
  const bool sliced = s->workload.time_scale != 1.0 || s->workload.skip || s->workload.first;
  if (s->workload.name != "trace" && (sliced || s->workload.skip_malformed))
    return fail("--time-scale, --skip, --first and --skip-malformed apply to traces only");
  if ((s->deployment.hosts > 1 || s->deployment.cluster.enabled) && s->device != "sim")
    return fail("--hosts and the cluster tier apply to the sim device only");
  if (s->interference.active() && s->device != "sim")
    return fail("--interference applies to the sim device only");
  if (s->stack.provider.budget_bytes >= s->stack.device.capacity_bytes)
    return fail("--budget must be below --fast-tier");
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  tempo::ReplaySetup setup = tempo::default_setup();
  setup.jobs = std::max(1u, std::thread::hardware_concurrency());
  std::string experiment = "compare";
  if (!parse_args(argc, argv, &setup, &experiment)) return 2;
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
