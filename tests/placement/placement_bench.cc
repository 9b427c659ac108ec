// Throughput of the placement simulator (block accesses per second, one core) and of each
// eviction policy on its own. The bar: >= 10 M block accesses/s for lru.
#include <benchmark/benchmark.h>

#include <random>
#include <unordered_set>

#include "placement/compute_cost.h"
#include "placement/generators.h"
#include "placement/simulator.h"
#include "policies/belady.h"
#include "policies/study_policies.h"

namespace tempo::placement {
namespace {

class FlatCost final : public ComputeCost {
 public:
  TimeNs prefill(uint64_t n, uint64_t c) const override {
    return static_cast<TimeNs>(n * 40'000 + c * 10);
  }
  TimeNs decode_step(uint64_t c) const override { return 10'000'000 + static_cast<TimeNs>(c); }
  uint64_t kv_bytes_per_token() const override { return 131072; }
};

void BM_Simulate(benchmark::State& state, const char* workload, const char* policy,
                 const char* prefetch) {
  Workload w;
  make_named_workload(workload, 1, &w);
  SimConfig c;
  c.shape = {16, 128, 1024};
  c.policy = policy;
  c.prefetch = prefetch;
  FlatCost cost;
  uint64_t accesses = 0;
  for (auto _ : state) {
    const RunResult r = simulate(w, c, cost);
    accesses += r.accesses;
    benchmark::DoNotOptimize(r.makespan);
  }
  state.SetItemsProcessed(static_cast<int64_t>(accesses));
}
BENCHMARK_CAPTURE(BM_Simulate, chat_lru, "chat", "lru", "none")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Simulate, agent_lru, "agent", "lru", "none")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Simulate, docqa_lru, "docqa", "lru", "none")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Simulate, chat_adaptive, "chat", "adaptive", "none")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Simulate, chat_lru_laxity, "chat", "lru", "laxity")
    ->Unit(benchmark::kMillisecond);

// One policy as a 64-entry cache over a skewed reference string.
void BM_Policy(benchmark::State& state, const char* name) {
  std::mt19937_64 rng(3);
  std::vector<BlockId> trace(1 << 16);
  for (auto& id : trace) id = (rng() % 2 == 0) ? rng() % 32 : rng() % 512;
  TraceOracle oracle(trace);
  PolicyOptions o;
  o.capacity_entries = 64;
  o.future = &oracle;
  uint64_t n = 0;
  for (auto _ : state) {
    state.PauseTiming();
    TraceOracle fresh(trace);
    o.future = &fresh;
    auto p = make_study_policy(name, o);
    std::unordered_set<BlockId> resident;
    state.ResumeTiming();
    for (size_t i = 0; i < trace.size(); ++i) {
      fresh.advance(i);
      const BlockId id = trace[i];
      if (resident.contains(id)) {
        p->record_access(id, static_cast<TimeNs>(i));
        continue;
      }
      if (resident.size() == 64) {
        const BlockId v = *p->pick_victim();
        p->evict(v);
        resident.erase(v);
      }
      p->add(id, 1, static_cast<TimeNs>(i));
      resident.insert(id);
    }
    n += trace.size();
  }
  state.SetItemsProcessed(static_cast<int64_t>(n));
}
BENCHMARK_CAPTURE(BM_Policy, lru, "lru");
BENCHMARK_CAPTURE(BM_Policy, reuse_frequency, "reuse-frequency");
BENCHMARK_CAPTURE(BM_Policy, predicted_reuse, "predicted-reuse");
BENCHMARK_CAPTURE(BM_Policy, ewma, "ewma");
BENCHMARK_CAPTURE(BM_Policy, arc, "arc");
BENCHMARK_CAPTURE(BM_Policy, adaptive, "adaptive");
BENCHMARK_CAPTURE(BM_Policy, min, "min");

}  // namespace
}  // namespace tempo::placement

BENCHMARK_MAIN();
