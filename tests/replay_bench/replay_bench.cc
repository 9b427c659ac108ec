// Replay speed of tempo-replay: simulated requests served per second of wall time, on the
// default comparison (12 NarrativeQA documents under all seven policies) and on the whole
// Figure 4 grid (two models x three prefix cache ratios x seven policies). The figures are
// `requests/s` (simulated requests per wall second) and the wall time per sweep.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
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

// `make run`'s comparison: 12 documents x 7 policies = 84 simulated requests per sweep.
void BM_DefaultComparison(benchmark::State& state) { run_sweep(state, {default_setup()}); }
BENCHMARK(BM_DefaultComparison)->Unit(benchmark::kMillisecond)->UseRealTime();

// Figure 4: 2 models x 3 ratios x 7 policies x 12 documents = 504 simulated requests.
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

// A Mooncake-format trace of `n` requests (the format of Documentation/tempo-replay.md):
// Poisson arrivals at `rate` per second; each prompt is the leading 4-24 blocks of one of
// 64 shared prefixes (prefix k drawn with weight 1/(k+1)) and then 1-4 blocks of its own;
// outputs of 16-256 tokens. Returns the file's path.
std::string synth_trace(uint64_t n, double rate, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(rate);
  std::vector<double> weights;
  for (int k = 0; k < 64; ++k) weights.push_back(1.0 / (k + 1));
  std::discrete_distribution<int> prefix(weights.begin(), weights.end());
  std::uniform_int_distribution<int> shared(4, 24), own(1, 4), output(16, 256);
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("bench_replay_" + std::to_string(getpid()) + ".jsonl"))
                               .string();
  std::ofstream f(path);
  double t_ms = 0;
  uint64_t unique = 1u << 20;
  for (uint64_t i = 0; i < n; ++i) {
    t_ms += gap(rng) * 1000;
    const int p = prefix(rng);
    const int s = shared(rng);
    const int o = own(rng);
    f << "{\"timestamp\": " << static_cast<uint64_t>(t_ms)
      << ", \"input_length\": " << (s + o) * 512 << ", \"output_length\": " << output(rng)
      << ", \"hash_ids\": [";
    for (int b = 0; b < s; ++b) f << (b ? ", " : "") << p * 64 + b;
    for (int b = 0; b < o; ++b) f << ", " << unique++;
    f << "]}\n";
  }
  return path;
}

// A 12,000-request trace under all seven policies (84,000 simulated requests), the
// policies side by side on the machine's hardware threads, as `tempo-replay -t` runs it.
void BM_Trace12k(benchmark::State& state) {
  ReplaySetup s = default_setup();
  s.workload.name = "trace";
  s.workload.trace_path = synth_trace(12'000, 1.2, 1);
  s.jobs = std::max(1u, std::thread::hardware_concurrency());
  run_sweep(state, {s});
  std::filesystem::remove(s.workload.trace_path);
}
BENCHMARK(BM_Trace12k)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);

}  // namespace
}  // namespace tempo

BENCHMARK_MAIN();
