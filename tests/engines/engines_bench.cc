// Costs on the scheduler's path, each beside a physical reference measured in the same run:
//  - the chain hash of a 32k-token prompt (128 chunks of 256) through libtempo.so, against
//    copying the same 128 KiB of token ids (memory bandwidth);
//  - the per-step runtime call with 4 running and 1,000 or 10,000 waiting requests (every one
//    with a claim) through libtempo.so, against the model's own decode step for those 4
//    sequences (the GPU work the call runs beside). As an engine's steady state: between two
//    calls the clock moves on by that decode step and every running sequence generates a
//    token; the waiting queue stays as it was.
// Prints one line per figure: median microseconds over the repetitions, and the ratio.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "model/exec_model.h"
#include "step_cost_fit.h"
#include "tempo/tempo.h"
#include "tempo/tempo_sim.h"

namespace {

template <typename F>
double median_us(int reps, F&& f) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// The median and the 90th percentile of `call`'s microseconds, `prepare` run untimed before
// each call.
template <typename P, typename F>
std::pair<double, double> step_us(int reps, P&& prepare, F&& call) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    prepare();
    const auto a = std::chrono::steady_clock::now();
    call();
    t.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return {t[t.size() / 2], t[t.size() * 9 / 10]};
}

int fail(const char* what, int r) {
  std::fprintf(stderr, "engines_bench: %s: %d\n", what, r);
  return 1;
}

}  // namespace

int main() {
  std::vector<uint32_t> tokens(32768);
  std::iota(tokens.begin(), tokens.end(), 7u);
  std::vector<uint32_t> copy(tokens.size());
  std::vector<uint64_t> keys(tokens.size() / 256);
  const tempo_key_namespace ns{"meta-llama/Llama-3.1-8B-Instruct", "bfloat16", 0, 1, {0, 0}};
  uint64_t seed = 0;
  if (const int r = tempo_key_seed(&ns, &seed); r != 0) return fail("tempo_key_seed", r);
  size_t n = 0;
  const double hash_us = median_us(201, [&] {
    tempo_key_chain(seed, tokens.data(), tokens.size(), 256, keys.data(), keys.size(), &n);
  });
  const double copy_us = median_us(201, [&] {
    std::memcpy(copy.data(), tokens.data(), tokens.size() * sizeof(uint32_t));
    asm volatile("" : : "r"(copy.data()) : "memory");
  });
  std::printf(
      "chain hash, 32768 tokens (%zu keys): %.1f us; memcpy of the same 128 KiB: %.1f us; "
      "ratio %.1fx\n",
      n, hash_us, copy_us, hash_us / copy_us);

  tempo::ExecModel model;
  std::string error;
  if (tempo::load_exec_model("llama-3.1-8b-instruct", "h100-pcie-80gb", &model, &error) != 0)
    return fail(error.c_str(), -EINVAL);
  const tempo::StepCostCoefficients f = tempo::fit_step_costs(model, 0);
  const tempo::TimeNs decode = model.decode_step_time(4, 4 * 3010);
  // Under tempo the point projection alone; under tempo-risk the spread's 32 more.
  for (const size_t queue : {size_t{1000}, size_t{10000}})
    for (const char* policy : {"tempo", "tempo-risk"}) {
      tempo_config* cfg = nullptr;
      tempo_ctx* ctx = nullptr;
      tempo_config_new(&cfg);
      tempo_config_set(cfg, "fast_tier_bytes", "64GiB");
      tempo_config_set(cfg, "budget_bytes", "32GiB");
      tempo_config_set(cfg, "policy", policy);
      if (const int r = tempo_ctx_new(cfg, &ctx); r != 0) return fail("tempo_ctx_new", r);
      std::vector<tempo_object> objs(queue);
      for (uint64_t i = 0; i < objs.size(); ++i) objs[i] = {i + 1, 32ull << 20};
      if (const int r = tempo_sim_add_objects(ctx, objs.data(), objs.size()); r != 0)
        return fail("tempo_sim_add_objects", r);
      std::vector<tempo_waiting_seq> waiting(queue);
      for (uint64_t i = 0; i < waiting.size(); ++i) {
        tempo_claim_id id = 0;
        if (const int r = tempo_claim_report(ctx, &objs[i], 1, 60'000'000'000, &id); r != 0)
          return fail("tempo_claim_report", r);
        waiting[i] = {2000 + 7 * i, 256, id, 32ull << 20};
      }
      std::vector<tempo_running_seq> running(4);
      for (uint64_t i = 0; i < running.size(); ++i)
        running[i] = {3000, 3000, uint32_t(10 + i), 0, 0};
      const tempo_runtime_config rc{{f.prefill_pass_ns,
                                     f.prefill_token_ns,
                                     f.prefill_pair_ns,
                                     f.decode_pass_ns,
                                     f.decode_seq_ns,
                                     f.decode_context_ns,
                                     f.retrieval_bps,
                                     {0, 0}},
                                    4,
                                    128,
                                    1,
                                    0,
                                    {0, 0, 0, 0}};
      tempo_runtime* rt = nullptr;
      if (const int r = tempo_runtime_new(ctx, &rc, &rt); r != 0)
        return fail("tempo_runtime_new", r);
      // A history to draw from: outputs of 12 to 117 tokens.
      for (uint32_t out = 4; out < 40; ++out) tempo_runtime_finished(rt, out * 3);
      tempo_step step{};
      step.running = running.data();
      step.running_count = running.size();
      step.waiting = waiting.data();
      step.waiting_count = waiting.size();
      step.duration_ns = decode;
      step.decode_seqs = 4;
      step.decode_context_tokens = 4 * 3010;
      int status = 0;
      status |= tempo_runtime_step(rt, &step);  // the first step reports what it knows
      const auto [median, p90] = step_us(
          101,
          [&] {
            status |= tempo_sim_advance(ctx, decode);
            for (tempo_running_seq& r : running)
              r.tokens_generated = 10 + (r.tokens_generated - 9) % 100;
          },
          [&] { status |= tempo_runtime_step(rt, &step); });
      if (status != 0) return fail("tempo_runtime_step", status);
      std::printf(
          "runtime step under %s, 4 running + %zu waiting claims: %.1f us (p90 %.1f us); the "
          "model's decode step of those 4: %.1f us; ratio %.4f (p90 %.4f)\n",
          policy, queue, median, p90, static_cast<double>(decode) / 1e3,
          median * 1e3 / static_cast<double>(decode), p90 * 1e3 / static_cast<double>(decode));
      tempo_runtime_free(rt);
      tempo_ctx_unref(ctx);
      tempo_config_free(cfg);
    }
  // The roofline model's fit for the shipped model files: a runtime's prior.
  for (const char* name : {"llama-3.1-8b-instruct", "qwen2.5-14b-instruct"}) {
    if (tempo::load_exec_model(name, "h100-pcie-80gb", &model, &error) != 0)
      return fail(error.c_str(), -EINVAL);
    const tempo::StepCostCoefficients c = tempo::fit_step_costs(model, 0);
    std::printf(
        "prior %s on h100-pcie-80gb: prefill_pass_ns %.0f prefill_token_ns %.1f "
        "prefill_pair_ns %.4f decode_pass_ns %.0f decode_seq_ns %.1f "
        "decode_context_ns %.3f retrieval_bps %.4g\n",
        name, c.prefill_pass_ns, c.prefill_token_ns, c.prefill_pair_ns, c.decode_pass_ns,
        c.decode_seq_ns, c.decode_context_ns, c.retrieval_bps);
  }
  return 0;
}
