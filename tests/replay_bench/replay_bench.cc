// Replay speed of tempo-replay: simulated requests served per second of wall time, on the
// default comparison (12 NarrativeQA documents under all seven policies) and on the whole
// Figure 4 grid (two models x three prefix cache ratios x seven policies). The figures are
// `requests/s` (simulated requests per wall second) and the wall time per sweep.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "experiments.h"

namespace tempo {
namespace {

uint64_t served(const std::vector<ExperimentRow>& rows) {
  uint64_t n = 0;
  for (const ExperimentRow& r : rows) n += r.result.requests.size();
  return n;
}

void run_sweep(benchmark::State& state, const std::vector<ReplaySetup>& setups) {
  uint64_t requests = 0;
  for (auto _ : state) {
    for (const ReplaySetup& s : setups) {
      std::vector<ExperimentRow> rows;
      std::string error;
      if (run_comparison(s, &rows, &error) != 0) {
        state.SkipWithError(error.c_str());
        return;
      }
      requests += served(rows);
      benchmark::DoNotOptimize(rows.data());
    }
  }
  state.counters["requests"] =
      benchmark::Counter(static_cast<double>(requests), benchmark::Counter::kIsRate);
}

// `make run`'s comparison: 12 documents x 6 policies = 72 simulated requests per sweep.
void BM_DefaultComparison(benchmark::State& state) { run_sweep(state, {default_setup()}); }
BENCHMARK(BM_DefaultComparison)->Unit(benchmark::kMillisecond)->UseRealTime();

// Figure 4: 2 models x 3 ratios x 6 policies x 12 documents = 432 simulated requests.
void BM_Figure4Grid(benchmark::State& state) {
  std::vector<ReplaySetup> setups;
  for (const char* model : {"qwen2.5-14b-instruct", "llama-3.1-8b-instruct"}) {
    for (double ratio : {0.5, 0.75, 1.0}) {
      ReplaySetup s = default_setup();
      s.model = model;
      s.workload.prefix_cache_ratio = ratio;
      setups.push_back(s);
    }
  }
  run_sweep(state, setups);
}
BENCHMARK(BM_Figure4Grid)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace tempo

BENCHMARK_MAIN();
