// Control-plane cost at scale: 10,000 outstanding claims of 32 objects each. Targets: a
// full re-evaluation pass well under 1 ms (the tick is 50 ms), the worst-case pass (every
// claim decided by its exact TTR) under 2 ms, and report/revise and one TTR projection in
// microseconds.
#include <benchmark/benchmark.h>

#include <map>
#include <random>

#include "stack/sim_stack.h"

namespace tempo {
namespace {

constexpr int kClaims = 10'000;
constexpr int kObjectsPerClaim = 32;
constexpr uint64_t kObjectBytes = 32ull << 20;  // a 256-token chunk of Llama-3.1-8B KV

std::unique_ptr<SimStack> tempo_stack() {
  SimStackConfig c;
  c.device.capacity_bytes = 1ull << 50;
  c.provider.budget_bytes = 1ull << 49;
  c.controller.policy = *parse_policy("tempo");
  return std::make_unique<SimStack>(c);
}

// The sizes of the claims' objects.
enum class Sizes : int {
  kAlike = 0,  // kObjectBytes each: every claim reads one run of 32 equal chunks
  // Each document's chunks are of one model, drawn from five (14, 28, 32, 48 and 80 MiB per
  // 256 tokens), and each claim's last chunk is partial (a random number of 4 KiB pages
  // below a chunk): claims read a run of 31 equal chunks and one smaller, of sizes that
  // differ from claim to claim.
  kMixed = 1,
  kEach = 2,  // every object of its own size, 16 to 48 MiB in 4 KiB steps: 32 runs of one
};

// kClaims manifests sharing prefixes: every 8th claim starts a new document, the others
// reuse its first half. Their objects are added to the device, keys from *next on.
std::vector<Manifest> shared_prefix_claims(SimDevice& device, ObjectKey* next,
                                           Sizes sizes = Sizes::kAlike) {
  static constexpr uint64_t kChunkMiB[] = {14, 28, 32, 48, 80};
  std::mt19937_64 rng(11);
  std::vector<Manifest> manifests;
  uint64_t chunk = kObjectBytes;
  for (int i = 0; i < kClaims; ++i) {
    Manifest m;
    const ObjectKey base = (i % 8 == 0) ? *next : manifests.back().front().key;
    if (i % 8 == 0 && sizes == Sizes::kMixed) chunk = kChunkMiB[rng() % 5] << 20;
    for (int j = 0; j < kObjectsPerClaim; ++j) {
      const ObjectKey k = (j < kObjectsPerClaim / 2 && i % 8 != 0) ? base + j : (*next)++;
      uint64_t bytes = kObjectBytes;
      if (sizes == Sizes::kMixed)
        bytes = j + 1 < kObjectsPerClaim ? chunk : 4096 * (1 + rng() % (chunk / 4096 - 1));
      if (sizes == Sizes::kEach) bytes = (16ull << 20) + (rng() % 8192) * 4096;
      if (device.object_size(k) < 0) device.add_object(k, bytes);
      m.push_back({k, static_cast<uint64_t>(device.object_size(k))});
    }
    manifests.push_back(m);
  }
  return manifests;
}

// A claim of 64 objects (the first of `first_bytes`, the others kObjectBytes) that commits
// at once (laxity < 0): 64 staging operations outstanding.
void commit_backlog(SimStack& rt, ObjectKey* next, uint64_t first_bytes) {
  Manifest backlog;
  for (int j = 0; j < 64; ++j) {
    const uint64_t bytes = j == 0 ? first_bytes : kObjectBytes;
    rt.device.add_object(*next, bytes);
    backlog.push_back({(*next)++, bytes});
  }
  ClaimId id = 0;
  rt.stack.controller().report(backlog, 0, &id);
}

void count_state(benchmark::State& state, SimStack& rt) {
  state.counters["planned"] = static_cast<double>(rt.stack.controller().stats().planned);
  state.counters["outstanding_ops"] =
      static_cast<double>(rt.stack.provider().stats().outstanding_ops);
}

// A stack with kClaims PLANNED claims (TTUs 10 s to 10,000 s out, so none is eligible under
// `tempo`), a committed backlog of 64 staging operations, and the runtime's order set.
struct Fixture {
  Fixture() : rt(tempo_stack()) {
    std::mt19937_64 rng(7);
    ObjectKey next = 1;
    manifests = shared_prefix_claims(rt->device, &next);
    commit_backlog(*rt, &next, kObjectBytes);
    for (int i = 0; i < kClaims; ++i) {
      ClaimId id = 0;
      rt->stack.controller().report(manifests[i],
                                    (10 + static_cast<TimeNs>(rng() % 10'000)) * kNsPerSec, &id);
      ids.push_back(id);
      records.push_back(&rt->stack.controller().claim(id)->staging);
    }
    rt->stack.controller().update_order(ids);
  }
  std::unique_ptr<SimStack> rt;
  std::vector<Manifest> manifests;
  std::vector<ClaimId> ids;
  std::vector<const ClaimStaging*> records;  // the claims' records in the book
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

void BM_EvaluationPass(benchmark::State& state) {
  Fixture& f = fixture();
  for (auto _ : state) f.rt->stack.controller().evaluate();
  state.counters["claims"] = static_cast<double>(f.rt->stack.controller().stats().planned);
}
BENCHMARK(BM_EvaluationPass)->Unit(benchmark::kMicrosecond);

void BM_TtrProjection(benchmark::State& state) {
  Fixture& f = fixture();
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(f.rt->stack.provider().ttr(*f.records[i], TtrMode::kStateAware));
    i = (i + 1) % f.records.size();
  }
  state.counters["outstanding_ops"] =
      static_cast<double>(f.rt->stack.provider().stats().outstanding_ops);
}
BENCHMARK(BM_TtrProjection)->Unit(benchmark::kMicrosecond);

void BM_ClaimRevise(benchmark::State& state) {
  Fixture& f = fixture();
  size_t i = 0;
  TimeNs ttu = 5000 * kNsPerSec;
  for (auto _ : state) {
    f.rt->stack.controller().revise(f.ids[i], ttu);
    i = (i + 1) % f.ids.size();
    ttu += kNsPerMs;
  }
}
BENCHMARK(BM_ClaimRevise)->Unit(benchmark::kMicrosecond);

void BM_ClaimReportAndCancel(benchmark::State& state) {
  Fixture& f = fixture();
  size_t i = 0;
  for (auto _ : state) {
    ClaimId id = 0;
    f.rt->stack.controller().report(f.manifests[i], 20'000 * kNsPerSec, &id);
    f.rt->stack.controller().cancel(id);
    i = (i + 1) % f.manifests.size();
  }
}
BENCHMARK(BM_ClaimReportAndCancel)->Unit(benchmark::kMicrosecond);

// The worst case for the pass: every claim's TTU lies between the bounds of its
// projection (the work-conservation bounds settle none of them) and above its TTR, so
// no claim commits and each is decided by its exact TTR. The backlog is 64 operations:
// one of 4 GiB (it holds a slot throughout, so claims finish before the queue drains)
// and 63 of 32 MiB; 8 slots. A TTU is its claim's TTR plus 1 ms. The claims' objects are
// of `sizes` (shared_prefix_claims).
struct WorstCase {
  explicit WorstCase(Sizes sizes) : rt(tempo_stack()) {
    Controller& ctl = rt->stack.controller();
    ObjectKey next = 1;
    commit_backlog(*rt, &next, 4ull << 30);
    for (const Manifest& m : shared_prefix_claims(rt->device, &next, sizes)) {
      ClaimId id = 0;
      ctl.report(m, 10'000 * kNsPerSec, &id);
      ctl.revise(
          id, *rt->stack.provider().ttr(ctl.claim(id)->staging, TtrMode::kStateAware) + kNsPerMs);
      ids.push_back(id);
    }
    ctl.update_order(ids);
    small = next;
  }
  // A 4 KiB claim that commits at once: the queue changes, so every claim's TTR moves.
  void commit_small() {
    rt->device.add_object(small, 4096);
    ClaimId id = 0;
    rt->stack.controller().report({{small++, 4096}}, -kNsPerSec, &id);
  }
  std::unique_ptr<SimStack> rt;
  std::vector<ClaimId> ids;
  ObjectKey small = 0;
};

// The fixture for argument `sizes` (Sizes), built on first use.
WorstCase& worst_case(int64_t sizes) {
  static std::map<int64_t, WorstCase> fixtures;
  return fixtures.try_emplace(sizes, static_cast<Sizes>(sizes)).first->second;
}

// The argument: the claims' object sizes (Sizes: 0 alike, 1 mixed chunk sizes, 2 each its
// own).
void BM_WorstCasePass(benchmark::State& state) {
  WorstCase& w = worst_case(state.range(0));
  for (auto _ : state) w.rt->stack.controller().evaluate();
  count_state(state, *w.rt);
}
BENCHMARK(BM_WorstCasePass)->DenseRange(0, 2)->Unit(benchmark::kMicrosecond);

void BM_WorstCasePassAfterCommit(benchmark::State& state) {
  WorstCase& w = worst_case(state.range(0));
  for (auto _ : state) w.commit_small();
  count_state(state, *w.rt);
}
BENCHMARK(BM_WorstCasePassAfterCommit)
    ->DenseRange(0, 2)
    ->Unit(benchmark::kMicrosecond)
    ->Iterations(100);

}  // namespace
}  // namespace tempo

BENCHMARK_MAIN();
