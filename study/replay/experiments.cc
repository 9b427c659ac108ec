#include "experiments.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "config/from_settings.h"
#include "csv/csv_writer.h"
#include "daemon_engines.h"
#include "model/exec_model_costs.h"
#include "report.h"
#include "serving_stack.h"

namespace tempo {

namespace {

constexpr uint64_t kGiB = 1ull << 30;

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

int make_dirs(const std::string& path) {
  std::string sofar;
  for (size_t i = 0; i <= path.size(); ++i) {
    if (i < path.size() && path[i] != '/') continue;
    sofar = path.substr(0, i);
    if (sofar.empty()) continue;
    if (mkdir(sofar.c_str(), 0755) != 0 && errno != EEXIST) return -errno;
  }
  return 0;
}

constexpr uint64_t kStoreBlockBytes = 4096;

// The model's step costs divided by a speedup (ReplaySetup::speedup).
class FasterCosts final : public StepCosts {
 public:
  FasterCosts(const ExecModel& model, double link_bps, double speedup)
      : costs_(model, link_bps), speedup_(speedup) {}
  TimeNs prefill_time(uint64_t new_tokens, uint64_t context_tokens) const override {
    return faster(costs_.prefill_time(new_tokens, context_tokens));
  }
  TimeNs decode_step_time(uint64_t batch, uint64_t total_context_tokens) const override {
    return faster(costs_.decode_step_time(batch, total_context_tokens));
  }
  TimeNs decode_steps_time(uint64_t batch, uint64_t total_context_tokens,
                           uint64_t steps) const override {
    return faster(costs_.decode_steps_time(batch, total_context_tokens, steps));
  }
  TimeNs retrieval_time(uint64_t bytes) const override {
    return faster(costs_.retrieval_time(bytes));
  }

 private:
  TimeNs faster(TimeNs t) const { return static_cast<TimeNs>(std::llround(double(t) / speedup_)); }

  ExecModelCosts costs_;
  double speedup_;
};

// A time of a run sped up `k` times in the model's time (negative: never happened).
TimeNs slower(TimeNs t, double k) {
  return t < 0 ? t : static_cast<TimeNs>(std::llround(double(t) * k));
}

// A sped-up run's result in the model's time: every recorded time and the ledger's
// byte-time times k, then its summary made again.
void to_model_time(RunResult* r, double k, const Deployment& d) {
  for (RequestRecord& q : r->requests) {
    for (TimeNs* t :
         {&q.timing.arrival, &q.timing.first_token, &q.timing.finish, &q.admitted, &q.kv_available,
          &q.retrieval_start, &q.retrieval_end, &q.claim.reported, &q.claim.committed,
          &q.claim.ready, &q.claim.retrieval_requested, &q.claim.transfer_begin, &q.claim.ended})
      *t = slower(*t, k);
  }
  r->ledger_byte_seconds *= k;
  r->end_time = slower(r->end_time, k);
  // summarize_run adds these up from the records.
  r->reusable_bytes = r->hit_bytes = r->pool_hit_bytes = r->rejected = 0;
  r->engines.clear();
  summarize_run(r, d.hosts * d.engines_per_host, d.engines_per_host);
}

struct Loaded {
  ExecModel model;
  std::unique_ptr<StepCosts> costs;
  ReplayWorkload workload;
  uint32_t longest_output = 0;
  std::unique_ptr<UringBackend> uring;  // device "uring" only
};

int load(const ReplaySetup& s, Loaded* out, std::string* error) {
  if (const int r = load_exec_model(s.model, s.gpu, &out->model, error); r != 0) return r;
  if (!(s.speedup >= 1) || (s.speedup != 1 && s.device != "uring")) {
    *error = "--speedup takes a factor of at least 1, on the uring device only";
    return -EINVAL;
  }
  out->costs = std::make_unique<FasterCosts>(out->model, s.device_link_bps, s.speedup);
  if (const int r = build_workload(s.workload, out->model, &out->workload, error); r != 0) return r;
  for (ReplayRequest& q : out->workload.requests)
    q.arrival = static_cast<TimeNs>(std::llround(double(q.arrival) / s.speedup));
  for (const ReplayRequest& q : out->workload.requests)
    out->longest_output = std::max(out->longest_output, q.output_tokens);
  if (s.workload.skip_malformed)
    std::fprintf(
        stderr, "tempo-replay: %s: skipped %llu malformed line(s)%s%s\n",
        s.workload.trace_path.c_str(), static_cast<unsigned long long>(out->workload.skipped_lines),
        out->workload.skipped_lines ? ", the first: " : "", out->workload.first_skipped.c_str());
  if (s.device == "sim") return 0;
  // Real I/O on this machine: every object shrinks by byte_scale, to no less than one 4 KiB
  // block of the store. Results are scaled back up by byte_scale, so an object held at 4 KiB
  // would count as more bytes than the model's (a 32 MiB chunk at scale 2^20 as 4 GiB, its
  // transfer 128 times too long): such a scale is refused.
  uint64_t smallest = UINT64_MAX;
  for (const KvObject& o : out->workload.preloaded) smallest = std::min(smallest, o.bytes);
  if (smallest != UINT64_MAX && smallest / s.byte_scale < kStoreBlockBytes) {
    const uint64_t largest = smallest / kStoreBlockBytes;
    *error = "--byte-scale " + std::to_string(s.byte_scale) + " shrinks the " +
             std::to_string(smallest) + "-byte KV objects below the store's 4096-byte block: " +
             (largest > 0 ? "at most " + std::to_string(largest) + " for this model and workload"
                          : std::string("they are below it even at --byte-scale 1"));
    return -EINVAL;
  }
  auto shrink = [&](KvObject& o) { o.bytes /= s.byte_scale; };
  for (KvObject& o : out->workload.preloaded) shrink(o);
  for (ReplayRequest& q : out->workload.requests)
    for (KvObject& o : q.prefix_chunks) shrink(o);
  if (s.device == "daemon") return 0;  // the daemon opens the store and the fast tier
  UringBackendOptions u{s.store_dir, s.uring};
  u.device.fast_tier.kind = "dram";
  u.device.fast_tier.bytes = s.stack.device.capacity_bytes / s.byte_scale;
  u.device.staging_rate_bps = s.uring_calibration_bps;
  return UringBackend::create(u, &out->uring, error);
}

// One policy's run on the setup's device.
RunResult serve(const ReplaySetup& s, const Loaded& l, const std::string& policy) {
  EngineConfig e = s.engine;
  e.policy = policy;
  e.max_context_tokens = l.model.model().max_context_tokens;
  if (s.gpu_kv_memory) e.kv_capacity_tokens = l.model.kv_cache_capacity_tokens(0.9);
  // A trace's own output lengths, unless a cap was asked for.
  if (s.workload.name == "trace" && !s.workload.cap_trace_outputs)
    e.generation_limit = std::max(e.generation_limit, l.longest_output);
  if (s.device == "sim")
    return run_serving(l.workload, s.stack, e, *l.costs, s.interference, s.deployment);
  e.byte_scale = s.byte_scale;
  if (s.device == "daemon") {
    DaemonRunOptions d;
    d.tempod = s.tempod;
    d.store_dir = s.store_dir;
    d.fast_tier_bytes = s.stack.device.capacity_bytes / s.byte_scale;
    d.budget_bytes = s.stack.provider.budget_bytes / s.byte_scale;
    d.calibration_rate_bps = s.uring_calibration_bps;
    d.engines = s.deployment.engines_per_host;
    d.router = s.deployment.router;
    return run_daemon_engines(l.workload, e, *l.costs, d);
  }
  ProviderConfig p = s.stack.provider;
  p.budget_bytes /= s.byte_scale;
  p.calibration_rate_bps = s.uring_calibration_bps;
  p.static_rate_bps = s.uring_calibration_bps;
  ControllerConfig c = s.stack.controller;
  if (policy != "dax-l1") c.policy = *parse_policy(policy);
  // The stack's timers and the TTU horizon keep their length in the model's time.
  const auto faster = [&](TimeNs t) {
    return std::max<TimeNs>(kNsPerMs, static_cast<TimeNs>(std::llround(double(t) / s.speedup)));
  };
  p.rate_window_ns = faster(p.rate_window_ns);
  c.tick_ns = faster(c.tick_ns);
  if (e.ttu_horizon != kNever) e.ttu_horizon = faster(e.ttu_horizon);
  UringServingStack st(*l.uring, StackConfig{p, c});
  RunResult r = run_serving(l.workload, st, e, *l.costs, s.deployment);
  if (s.speedup != 1) to_model_time(&r, s.speedup, s.deployment);
  return r;
}

std::vector<std::string> policies_of(const ReplaySetup& s, std::vector<std::string> fallback) {
  return s.policies.empty() ? fallback : s.policies;
}

int run_grid(const std::vector<ReplaySetup>& setups,
             const std::vector<std::vector<std::pair<std::string, std::string>>>& labels,
             bool progress, std::vector<ExperimentRow>* rows, std::string* error) {
  size_t total = 0;
  for (const ReplaySetup& s : setups) total += policies_of(s, all_policies()).size();
  Progress bar(progress, total);
  std::mutex bar_lock;
  for (size_t i = 0; i < setups.size(); ++i) {
    Loaded l;
    if (const int r = load(setups[i], &l, error); r != 0) return r;
    const std::vector<std::string> policies = policies_of(setups[i], all_policies());
    // Each policy runs on its own stack over the shared, read-only workload and costs; the
    // uring device is one shared backend (and the daemon's store has one opener), so their
    // runs go one at a time.
    std::vector<RunResult> results(policies.size());
    std::vector<int> status(policies.size(), 0);
    std::vector<std::string> errors(policies.size());
    std::atomic<size_t> next{0};
    auto worker = [&] {
      for (size_t k = next++; k < policies.size(); k = next++) {
        try {
          results[k] = serve(setups[i], l, policies[k]);
        } catch (const std::invalid_argument& ex) {
          errors[k] = ex.what();
          status[k] = -EINVAL;
        } catch (const std::runtime_error& ex) {
          errors[k] = ex.what();
          status[k] = -EIO;
        }
        std::string what;
        for (const auto& [key, v] : labels[i]) what += v + " ";
        const std::lock_guard<std::mutex> hold(bar_lock);
        bar.step(what + policies[k]);
      }
    };
    const unsigned jobs = setups[i].device != "sim" ? 1 : std::max(1u, setups[i].jobs);
    std::vector<std::thread> threads;
    for (unsigned t = 1; t < std::min<size_t>(jobs, policies.size()); ++t)
      threads.emplace_back(worker);
    worker();
    for (std::thread& t : threads) t.join();
    for (size_t k = 0; k < policies.size(); ++k) {
      if (status[k] != 0) {
        *error = errors[k];
        return status[k];
      }
      rows->push_back(ExperimentRow{labels[i], std::move(results[k])});
    }
  }
  bar.finish();
  return 0;
}

int write_csvs(const std::string& dir, const std::vector<ExperimentRow>& rows, std::string* error) {
  if (const int r = make_dirs(dir); r != 0) {
    *error = "cannot create " + dir;
    return r;
  }
  if (write_summary_csv(dir + "/summary.csv", rows) != 0 ||
      write_requests_csv(dir + "/requests.csv", rows) != 0 ||
      write_engines_csv(dir + "/engines.csv", rows) != 0) {
    *error = "cannot write the CSVs under " + dir;
    return -EIO;
  }
  return 0;
}

// Figure 1: staging lead before submission for one SSD-resident 64k-token prefix.
int fig1(const ReplaySetup& s, std::string* error) {
  ExecModel model;
  if (const int r = load_exec_model(s.model, s.gpu, &model, error); r != 0) return r;
  const ExecModelCosts costs(model, s.device_link_bps);
  constexpr uint64_t kTokens = 65536, kQuestion = 64;
  const uint64_t chunk_bytes = 256 * model.kv_bytes_per_token();
  const std::string dir = s.out_dir + "/fig1";
  if (make_dirs(dir) != 0) return -EIO;
  CsvFile file(dir + "/fig1.csv", CsvWriter::Doubles::kSix);
  CsvWriter& f = file.csv();
  f << "lead_s"
    << "first_token_s"
    << "protected_gib_s"
    << "footprint_gib";
  f.end_row();
  for (double lead : {0.0, 0.25, 0.5, 1.0, 2.0, 4.0}) {
    SimStackConfig c = s.stack;
    c.controller.policy = *parse_policy("immediate");
    SimStack rt(c);
    EventQueue& events = rt.driver.events();
    Manifest m;
    for (uint64_t k = 1; k <= kTokens / 256; ++k) {
      rt.device.add_object(k, chunk_bytes);
      m.push_back({k, chunk_bytes});
    }
    ClaimId id = 0;
    rt.stack.report(m, sec_to_ns(lead), &id);  // staging starts `lead` before submission
    events.run_until(sec_to_ns(lead));
    const double byte_time = rt.stack.stats().provider.ledger_byte_seconds;
    RetrievalOutcome out{};
    rt.stack.request_retrieval(id, &out);
    while (rt.stack.readiness(id, &out) == -EAGAIN) events.run_next();
    const TimeNs ready = std::max(rt.driver.now(), sec_to_ns(lead));
    const TimeNs first =
        ready + costs.retrieval_time(manifest_bytes(m)) + costs.prefill_time(kQuestion, kTokens);
    f << lead << ns_to_sec(first - sec_to_ns(lead)) << byte_time / double(kGiB)
      << double(manifest_bytes(m)) / double(kGiB);
    f.end_row();
  }
  return file.close();
}

// Figure 2: a rank-one trigger commits at once; stage-ready time versus when the running
// predecessor completes, with and without a staging backlog ahead.
int fig2(const ReplaySetup& s, std::string* error) {
  ExecModel model;
  if (const int r = load_exec_model(s.model, s.gpu, &model, error); r != 0) return r;
  const uint64_t chunk_bytes = 256 * model.kv_bytes_per_token();
  const std::string dir = s.out_dir + "/fig2";
  if (make_dirs(dir) != 0) return -EIO;
  CsvFile file(dir + "/fig2.csv", CsvWriter::Doubles::kSix);
  CsvWriter& f = file.csv();
  f << "predecessor_s"
    << "footprint_gib"
    << "backlog_gib"
    << "stage_ready_s"
    << "margin_s";
  f.end_row();
  for (double predecessor : {0.5, 4.0}) {
    for (uint64_t footprint : {8, 12}) {
      for (uint64_t backlog_ops : {0, 4}) {
        SimStackConfig c = s.stack;
        c.controller.policy = *parse_policy("queue-1");
        SimStack rt(c);
        EventQueue& events = rt.driver.events();
        ObjectKey next = 1;
        auto claim_of = [&](uint64_t gib) {
          Manifest m;
          for (uint64_t b = 0; b < gib * kGiB; b += chunk_bytes) {
            rt.device.add_object(next, chunk_bytes);
            m.push_back({next++, chunk_bytes});
          }
          return m;
        };
        for (uint64_t i = 0; i < backlog_ops; ++i) {
          ClaimId b = 0;
          RetrievalOutcome out{};
          rt.stack.report(claim_of(8), 0, &b);
          rt.stack.request_retrieval(b, &out);  // committed operations ahead
        }
        ClaimId target = 0;
        rt.stack.report(claim_of(footprint), sec_to_ns(predecessor), &target);
        const ClaimId order[] = {target};
        rt.stack.update_order(order);  // the sole waiter: rank one, commits now
        RetrievalOutcome out{};
        while (rt.stack.readiness(target, &out) == -EAGAIN) events.run_next();
        ClaimView v;
        rt.stack.query(target, &v);
        const double x = ns_to_sec(v.timing.ready);
        f << predecessor << footprint << backlog_ops * 8 << x << predecessor - x;
        f.end_row();
      }
    }
  }
  return file.close();
}

int fig4(const ReplaySetup& s, std::string* error) {
  std::vector<ReplaySetup> setups;
  std::vector<std::vector<std::pair<std::string, std::string>>> labels;
  for (const char* model : {"qwen2.5-14b-instruct", "llama-3.1-8b-instruct"}) {
    for (double ratio : {0.5, 0.75, 1.0}) {
      ReplaySetup x = s;
      x.model = model;
      x.workload.prefix_cache_ratio = ratio;
      setups.push_back(x);
      labels.push_back({{"model", model}, {"ratio", fmt(ratio * 100)}});
    }
  }
  std::vector<ExperimentRow> rows;
  if (const int r = run_grid(setups, labels, s.progress, &rows, error); r != 0) return r;
  return write_csvs(s.out_dir + "/fig4", rows, error);
}

// Figure 5, and `make run`'s capacity sweep on the uring device. dax-l1 holds no protected
// capacity and, where no document is read twice (the document sets), fetches every object
// from the SSD tier whatever the fast tier's size: it runs at the first capacity only.
int fig5(const ReplaySetup& s, std::string* error) {
  std::vector<ReplaySetup> setups;
  std::vector<std::vector<std::pair<std::string, std::string>>> labels;
  for (uint64_t gib : {100, 50, 25}) {
    ReplaySetup x = s;
    x.stack.device.capacity_bytes = gib * kGiB;
    x.stack.provider.budget_bytes = gib * kGiB / 2;
    if (gib != 100 && s.workload.name != "trace") std::erase(x.policies, std::string("dax-l1"));
    if (x.policies.empty() && !s.policies.empty()) continue;
    setups.push_back(x);
    labels.push_back({{"fast_tier_gib", fmt(double(gib))}, {"budget_gib", fmt(double(gib) / 2)}});
  }
  std::vector<ExperimentRow> rows;
  if (const int r = run_grid(setups, labels, s.progress, &rows, error); r != 0) return r;
  return write_csvs(s.out_dir + "/fig5", rows, error);
}

int fig6(const ReplaySetup& s, std::string* error) {
  std::vector<ReplaySetup> setups;
  std::vector<std::vector<std::pair<std::string, std::string>>> labels;
  for (const char* workload : {"narrativeqa", "loogle"}) {
    for (double rate : {0.2, 0.5, 1.0, 2.0, 4.0}) {
      ReplaySetup x = s;
      x.workload.name = workload;
      x.workload.documents = 16;
      x.workload.output_cap = 32;
      x.engine.generation_limit = 32;
      x.workload.arrivals.kind = ArrivalKind::kFixedInterval;
      x.workload.arrivals.interval = sec_to_ns(1.0 / rate);
      if (x.policies.empty()) x.policies = {"tempo", "dax-l1"};
      setups.push_back(x);
      labels.push_back({{"workload", workload}, {"rate", fmt(rate)}});
    }
  }
  std::vector<ExperimentRow> rows;
  if (const int r = run_grid(setups, labels, s.progress, &rows, error); r != 0) return r;
  return write_csvs(s.out_dir + "/fig6", rows, error);
}

using Labels = std::vector<std::pair<std::string, std::string>>;

// An experiment of two setups side by side (a feature off, then on) under demand,
// immediate, tempo-static, tempo and tempo-risk unless --policy names others: runs them,
// prints `print`'s table and writes the CSVs under <name>/.
int side_by_side(const std::string& name, ReplaySetup off, ReplaySetup on,
                 const std::vector<Labels>& labels,
                 void (*print)(std::FILE*, const std::vector<ExperimentRow>&), std::string* error) {
  for (ReplaySetup* x : {&off, &on})
    if (x->policies.empty())
      x->policies = {"demand", "immediate", "tempo-static", "tempo", "tempo-risk"};
  std::vector<ExperimentRow> rows;
  if (const int r = run_grid({off, on}, labels, off.progress, &rows, error); r != 0) return r;
  print(stdout, rows);
  return write_csvs(off.out_dir + "/" + name, rows, error);
}

// Layer-wise loading (issue 13): on both models and the fig4 ratios, (a) whole-claim
// readiness, (b) the layer-wise engine with its claim committed whole, (c) the same claim
// committed by its lead TTR (set_layers), (d) one claim per layer group (vLLM's connector),
// under tempo and immediate unless --policy names others.
int layer_wise(const ReplaySetup& s, std::string* error) {
  std::vector<ReplaySetup> setups;
  std::vector<Labels> labels;
  for (const char* model : {"qwen2.5-14b-instruct", "llama-3.1-8b-instruct"}) {
    for (double ratio : {0.5, 0.75, 1.0}) {
      for (LayerWise mode :
           {LayerWise::kOff, LayerWise::kWhole, LayerWise::kLead, LayerWise::kPerGroup}) {
        ReplaySetup x = s;
        x.model = model;
        x.workload.prefix_cache_ratio = ratio;
        x.engine.layer_wise = mode;
        if (x.policies.empty()) x.policies = {"immediate", "tempo"};
        setups.push_back(x);
        labels.push_back({{"model", model},
                          {"ratio", fmt(ratio * 100)},
                          {"layer_wise", std::string(layer_wise_name(mode))},
                          {"layer_groups", std::to_string(s.engine.layer_groups)}});
      }
    }
  }
  std::vector<ExperimentRow> rows;
  if (const int r = run_grid(setups, labels, s.progress, &rows, error); r != 0) return r;
  print_layer_wise_table(stdout, rows);
  return write_csvs(s.out_dir + "/layer-wise", rows, error);
}

// What a learned staging rate adds: the setup's workload (40 documents unless --documents)
// with and without a background reader halving the device's rate from 5 s to 15 s (or the
// window of --interference).
int interference(const ReplaySetup& s, std::string* error) {
  ReplaySetup base = s;
  if (base.workload.documents == 0) base.workload.documents = 40;
  ReplaySetup halved = base;
  if (!halved.interference.active())
    halved.interference = Interference{5 * kNsPerSec, 15 * kNsPerSec, 0.5};
  base.interference = Interference{};
  const Interference& w = halved.interference;
  return side_by_side(
      "interference", base, halved,
      {{{"interference", "none"}, {"window_start_s", ""}, {"window_end_s", ""}, {"factor", "1"}},
       {{"interference", "reader"},
        {"window_start_s", fmt(ns_to_sec(w.start))},
        {"window_end_s", fmt(ns_to_sec(w.end))},
        {"factor", fmt(w.rate_factor)}}},
      print_summary_table, error);
}

// Replay across hosts (issue 17): the setup's deployment (2 hosts unless --hosts) without
// and with the cluster pool.
int cluster(const ReplaySetup& s, std::string* error) {
  ReplaySetup none = s;
  if (none.deployment.hosts == 1) none.deployment.hosts = 2;
  ReplaySetup pooled = none;
  pooled.deployment.cluster.enabled = true;
  none.deployment.cluster.enabled = false;
  const Deployment& d = pooled.deployment;
  auto labels = [&](const char* tier) {
    return Labels{{"cluster", tier},
                  {"hosts", std::to_string(d.hosts)},
                  {"engines_per_host", std::to_string(d.engines_per_host)},
                  {"router", router_name(d.router)},
                  {"cluster_rate_gib_s", fmt(d.cluster.rate_bps / double(kGiB))},
                  {"cluster_latency_ms", fmt(ns_to_sec(d.cluster.latency) * 1000)}};
  };
  return side_by_side("cluster", none, pooled, {labels("none"), labels("pool")},
                      print_cluster_table, error);
}

// The comparison; with shared_engines_run N (and one engine asked for), then the same
// policies with N engines sharing the device and budget and arrivals N times as often, so
// each engine sees the one-engine run's load.
int compare(const ReplaySetup& s, std::string* error) {
  std::vector<ExperimentRow> rows;
  if (const int r = run_comparison(s, &rows, error); r != 0) return r;
  print_summary_table(stdout, rows);
  const std::string dir = s.out_dir + "/compare";
  if (const int r = write_csvs(dir, rows, error); r != 0) return r;
  const uint32_t n = s.shared_engines_run;
  if (n < 2 || s.deployment.engines_per_host != 1 || s.deployment.hosts != 1) return 0;
  ReplaySetup shared = s;
  shared.deployment.engines_per_host = n;
  ArrivalSpec& a = shared.workload.arrivals;
  a.interval /= n;
  a.rate_per_s *= n;
  shared.workload.time_scale /= n;
  rows.clear();
  if (const int r = run_comparison(shared, &rows, error); r != 0) return r;
  std::printf("\n%u engines sharing one device and budget, arrivals %u times as often (%s):\n", n,
              n, router_name(shared.deployment.router));
  print_summary_table(stdout, rows);
  return write_csvs(dir + "/engines-" + std::to_string(n), rows, error);
}

}  // namespace

ReplaySetup default_setup() {
  ReplaySetup s;
  s.stack = sim_stack_config(Settings{});
  s.uring = uring_device_options(Settings{});
  s.engine = EngineConfig{"tempo", 4, 128};
  return s;
}

const std::vector<std::string>& all_policies() {
  static const std::vector<std::string> kAll = {"demand",       "immediate", "queue-1",   "queue-4",
                                                "tempo-static", "tempo",     "tempo-risk"};
  return kAll;
}

std::vector<std::string> experiment_names() {
  return {"compare", "fig1",         "fig2",    "fig4",      "fig5",
          "fig6",    "interference", "cluster", "layer-wise"};
}

int run_comparison(const ReplaySetup& setup, std::vector<ExperimentRow>* rows, std::string* error) {
  const std::vector<std::vector<std::pair<std::string, std::string>>> labels = {
      {{"model", setup.model}, {"workload", setup.workload.name}, {"device", setup.device}}};
  return run_grid({setup}, labels, setup.progress, rows, error);
}

int run_experiment(const std::string& name, const ReplaySetup& s, std::string* error) {
  if (name == "compare") return compare(s, error);
  if (name == "fig1") return fig1(s, error);
  if (name == "fig2") return fig2(s, error);
  if (name == "fig4") return fig4(s, error);
  if (name == "fig5") return fig5(s, error);
  if (name == "fig6") return fig6(s, error);
  if (name == "interference") return interference(s, error);
  if (name == "cluster") return cluster(s, error);
  if (name == "layer-wise") return layer_wise(s, error);
  *error = "unknown experiment '" + name +
           "': accepted compare, fig1, fig2, fig4, fig5, fig6, interference, cluster, layer-wise";
  return -EINVAL;
}

}  // namespace tempo
