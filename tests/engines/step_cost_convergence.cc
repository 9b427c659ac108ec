// The online step-cost learner on a replay whose true costs are off the model files:
// prefill `--prefill` times and decode `--decode` times the roofline model's. A backlog of
// requests runs through a vLLM-like engine (FCFS admission into max_active slots; each
// admitted request's retrieval and prefill pass, then one decode step of the batch; fixed
// output length, so output prediction is exact and the error left is the step costs'). At
// every engine pass the TTU of the first waiting claims is estimated with the model files'
// costs (their linear fit, the learner's prior, held fixed) and with the learner's; once the run is
// over each estimate is compared with the time the request's retrieval actually began. Prints CSV:
// one row per pass with the mean relative TTU error of both, and the learned cost of a 3000-token
// prefill after 2000 cached and of a 4-sequence decode step over 16000 KV tokens, relative to the
// prior's. Every pass's true duration carries independent noise (normal, `--noise` standard
// deviation relative to its cost), as a real engine's measured steps do.
//   step_cost_convergence [--prefill F] [--decode F] [--noise S] [--passes N]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/rng.h"
#include "model/exec_model.h"
#include "runtime/output_length_history.h"
#include "runtime/step_cost_learner.h"
#include "runtime/ttu_estimator.h"
#include "step_cost_fit.h"

namespace {

using tempo::TimeNs;

constexpr uint32_t kMaxActive = 4;
constexpr uint32_t kOutput = 64;
constexpr size_t kRequests = 400;
constexpr size_t kTracked = 16;  // waiting claims whose TTU is scored at each pass

struct Request {
  uint64_t prompt = 0;
  uint64_t cached = 0;
  uint32_t generated = 0;
  bool prefilled = false;
  TimeNs retrieval_start = -1;
};

struct Estimate {
  size_t request;
  TimeNs now;
  TimeNs fixed;
  TimeNs learned;
};

struct Pass {
  double fixed_err = 0;
  double learned_err = 0;
  double prefill_scale = 1;
  double decode_scale = 1;
  std::vector<Estimate> estimates;
};

double flag(int argc, char** argv, const char* name, double fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::atof(argv[i + 1]);
  return fallback;
}

TimeNs scaled(double f, TimeNs t) {
  return static_cast<TimeNs>(std::llround(f * static_cast<double>(t)));
}

}  // namespace

int main(int argc, char** argv) {
  const double prefill_f = flag(argc, argv, "--prefill", 1.3);
  const double decode_f = flag(argc, argv, "--decode", 0.7);
  const double noise = flag(argc, argv, "--noise", 0.1);
  const auto passes = static_cast<size_t>(flag(argc, argv, "--passes", 300));
  tempo::ExecModel model;
  std::string error;
  if (tempo::load_exec_model("llama-3.1-8b-instruct", "h100-pcie-80gb", &model, &error) != 0) {
    std::fprintf(stderr, "step_cost_convergence: %s\n", error.c_str());
    return 1;
  }
  const tempo::StepCostCoefficients prior = fit_step_costs(model, 0);
  const tempo::StepCostLearner fixed(prior, 1.0);
  tempo::StepCostLearner learner(prior);
  tempo::OutputLengthHistory history;
  for (int i = 0; i < 16; ++i) history.record(kOutput);

  tempo::Rng rng(13);
  tempo::Rng jitter(31);
  auto measured = [&](double f, TimeNs t) {
    return scaled(f * std::max(0.5, 1 + noise * jitter.normal()), t);
  };
  std::vector<Request> reqs(kRequests);
  for (Request& r : reqs) {
    r.prompt = rng.uniform_int(1000, 8000);
    r.cached = r.prompt / 512 * 256;
  }
  const uint64_t kv = model.kv_bytes_per_token();
  std::vector<size_t> active;
  size_t next = 0;
  TimeNs now = 0;
  std::vector<Pass> log;

  // One engine pass: scores the estimates from the state before it, then runs it.
  auto estimate = [&] {
    std::vector<tempo::RunningRequest> running;
    for (size_t i : active) {
      const Request& r = reqs[i];
      tempo::RunningRequest q;
      q.prompt_tokens_done = r.prefilled ? r.prompt : r.cached;
      q.prompt_tokens_remaining = r.prefilled ? 0 : r.prompt - r.cached;
      q.tokens_generated = r.generated;
      q.context_tokens = r.prompt + r.generated - (r.generated ? 1 : 0);
      q.retrieval_bytes_remaining = r.prefilled ? 0 : r.cached * kv;
      running.push_back(q);
    }
    std::vector<tempo::WaitingRequest> waiting;
    for (size_t i = next; i < reqs.size() && waiting.size() < kTracked; ++i) {
      tempo::WaitingRequest w;
      w.uncached_prompt_tokens = reqs[i].prompt - reqs[i].cached;
      w.cached_prompt_tokens = reqs[i].cached;
      w.claim = i + 1;
      w.retrieval_bytes = reqs[i].cached * kv;
      waiting.push_back(w);
    }
    const tempo::SchedulerSnapshot snap{running, waiting, kMaxActive, kOutput};
    std::vector<tempo::ClaimTtu> a, b;
    tempo::estimate_ttu(snap, fixed, history, &a);
    tempo::estimate_ttu(snap, learner, history, &b);
    Pass p;
    // The learned costs of a typical prefill and decode step against the prior's.
    p.prefill_scale = static_cast<double>(learner.prefill_time(3000, 2000)) /
                      static_cast<double>(fixed.prefill_time(3000, 2000));
    p.decode_scale = static_cast<double>(learner.decode_step_time(4, 16000)) /
                     static_cast<double>(fixed.decode_step_time(4, 16000));
    for (size_t k = 0; k < a.size(); ++k)
      p.estimates.push_back({a[k].claim - 1, now, a[k].ttu, b[k].ttu});
    log.push_back(std::move(p));
  };

  while (log.size() < passes && (next < reqs.size() || !active.empty())) {
    while (active.size() < kMaxActive && next < reqs.size()) active.push_back(next++);
    for (size_t i : active) {
      Request& r = reqs[i];
      if (r.prefilled) continue;
      estimate();
      r.retrieval_start = now;
      const TimeNs t = model.retrieval_time(r.cached * kv);
      const TimeNs p = measured(prefill_f, model.prefill_time(r.prompt - r.cached, r.cached));
      learner.observe({r.prompt - r.cached, r.cached, 0, 0}, p);
      now += t + p;
      r.prefilled = true;
      r.generated = 1;
    }
    estimate();
    uint64_t context = 0;
    for (size_t i : active) context += reqs[i].prompt + reqs[i].generated - 1;
    const TimeNs d = measured(decode_f, model.decode_step_time(active.size(), context));
    learner.observe({0, 0, active.size(), context}, d);
    now += d;
    for (size_t i : active) ++reqs[i].generated;
    std::erase_if(active, [&](size_t i) { return reqs[i].generated >= kOutput; });
  }

  std::printf("pass,fixed_ttu_error,learned_ttu_error,prefill_scale,decode_scale\n");
  for (size_t k = 0; k < log.size(); ++k) {
    double fe = 0, le = 0;
    size_t n = 0;
    for (const Estimate& e : log[k].estimates) {
      const TimeNs truth = reqs[e.request].retrieval_start - e.now;
      if (reqs[e.request].retrieval_start < 0 || truth <= 0) continue;
      fe += std::abs(static_cast<double>(e.fixed - truth)) / static_cast<double>(truth);
      le += std::abs(static_cast<double>(e.learned - truth)) / static_cast<double>(truth);
      ++n;
    }
    if (n == 0) continue;
    std::printf("%zu,%.5f,%.5f,%.4f,%.4f\n", k, fe / static_cast<double>(n),
                le / static_cast<double>(n), log[k].prefill_scale, log[k].decode_scale);
  }
  return 0;
}
