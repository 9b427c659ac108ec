// One TTU projection over a full scheduler snapshot: 4 running requests and 10,000
// waiting requests with claims (NarrativeQA-like lengths), Llama-3.1-8B on an H100 PCIe.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "model/exec_model.h"
#include "model/exec_model_costs.h"
#include "runtime/ttu_estimator.h"

namespace tempo {
namespace {

void BM_TtuPass(benchmark::State& state) {
  ExecModel em;
  std::string err;
  if (load_exec_model("llama-3.1-8b-instruct", "h100-pcie-80gb", &em, &err) != 0) {
    state.SkipWithError(err.c_str());
    return;
  }
  const ExecModelCosts costs(em);
  const auto waiting_count = static_cast<size_t>(state.range(0));
  std::vector<RunningRequest> running(4);
  for (size_t i = 0; i < running.size(); ++i) {
    running[i].prompt_tokens_done = 16'000 + 4'000 * i;
    running[i].tokens_generated = static_cast<uint32_t>(10 + 20 * i);
    running[i].context_tokens = running[i].prompt_tokens_done + running[i].tokens_generated;
  }
  std::vector<WaitingRequest> waiting(waiting_count);
  for (size_t i = 0; i < waiting.size(); ++i) {
    const uint64_t cached = 256 * (62 + (i * 37) % 200);  // 16k..67k tokens
    waiting[i].claim = i + 1;
    waiting[i].cached_prompt_tokens = cached;
    waiting[i].uncached_prompt_tokens = 40 + i % 200;
    waiting[i].retrieval_bytes = cached * em.kv_bytes_per_token();
  }
  OutputLengthHistory history(256);
  for (uint32_t i = 0; i < 256; ++i) history.record(20 + (i * 53) % 108);
  std::vector<ClaimTtu> out;
  out.reserve(waiting.size());
  for (auto _ : state) {
    const int rc = estimate_ttu({running, waiting, 4, 128}, costs, history, &out);
    benchmark::DoNotOptimize(rc);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["claims"] = static_cast<double>(out.size());
  state.counters["last_ttu_s"] = ns_to_sec(out.back().ttu);
}
BENCHMARK(BM_TtuPass)->Arg(10'000)->Arg(100)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tempo

BENCHMARK_MAIN();
