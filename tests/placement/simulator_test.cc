#include "placement/simulator.h"

#include <gtest/gtest.h>

#include "fake_cost.h"
#include "placement/future.h"
#include "placement/prefetch.h"

namespace tempo::placement {
namespace {

// Two turns of one session: A computes block 0 and decodes block 1; B resumes from {0, 1},
// computes block 2 and decodes block 3. 16-token blocks of 16 kB.
Workload two_turns() {
  Workload w;
  w.name = "two-turns";
  w.block_tokens = 16;
  w.sessions = 1;
  w.num_blocks = 4;
  w.requests.push_back({0, 0, {}, {0}, 16, 16, {1}});
  w.requests.push_back({0, 0, {0, 1}, {2}, 16, 16, {3}});
  return w;
}

SimConfig links(TierShape shape) {
  SimConfig c;
  c.shape = shape;
  c.pcie_up = {16e9, 0};  // 1000 ns per block
  c.pcie_down = {16e9, 0};
  c.ssd = {4e9, 0};  // 4000 ns per block
  return c;
}

TEST(Simulator, HandWorkedTimeline) {
  test::FakeCost cost;
  const RunResult r = simulate(two_turns(), links({1, 1, 4}), cost);
  ASSERT_EQ(r.requests.size(), 2u);
  const RequestMetrics& a = r.requests[0];
  EXPECT_EQ(a.ttft, 16'000);  // 16 new tokens x 1 us
  EXPECT_EQ(a.decode_compute, 160'000);
  EXPECT_EQ(a.end, 176'000);
  const RequestMetrics& b = r.requests[1];
  EXPECT_EQ(b.start, 176'000);
  // Blocks 0 and 1 come from DRAM one after the other (2 x 1000 ns), then prefill of 16
  // new tokens over 32 cached ones: 16'000 + 3'200.
  EXPECT_EQ(b.ttft_wait[static_cast<int>(Tier::kDram)], 2'000);
  EXPECT_EQ(b.prefill_compute, 19'200);
  EXPECT_EQ(b.ttft, 21'200);
  // The pass over {0, 1, 2} (from 197'200) finds each block pushed to SSD by the one
  // before it, behind that demotion's SSD write: 0 ready at 206'200 (write 197'200-201'200,
  // read -205'200, PCIe -206'200), 1 at 214'200, 2 at 222'200: 25'000 ns, all SSD.
  EXPECT_EQ(b.decode_stall[static_cast<int>(Tier::kSsd)], 25'000);
  EXPECT_EQ(b.decode_stall[static_cast<int>(Tier::kDram)], 0);
  EXPECT_EQ(b.decode_compute, 160'000);
  EXPECT_EQ(b.end, 382'200);
  EXPECT_EQ(r.makespan, 382'200);
}

TEST(Simulator, GpuOnlyRecomputesWhatHbmLost) {
  test::FakeCost cost;
  SimConfig c = links({1, 1, 4});
  c.baseline = "gpu-only";
  const RunResult r = simulate(two_turns(), c, cost);
  EXPECT_EQ(r.shape.dram_blocks, 0u);
  const RequestMetrics& b = r.requests[1];
  EXPECT_EQ(b.recomputed_blocks, 2u);  // recomputing 0 evicts 1 from the 1-block HBM
  EXPECT_EQ(b.ttft, 48'000);           // (16 new + 32 recomputed) tokens x 1 us
}

TEST(Simulator, PrefixReuseRecomputesEverythingAfterTheFirstMiss) {
  test::FakeCost cost;
  Workload w = two_turns();
  w.num_blocks = 10;
  w.requests[1].context = {9, 1};  // 9 was never computed; 1 is cached in HBM
  SimConfig c = links({2, 0, 0});
  EXPECT_EQ(simulate(w, c, cost).requests[1].recomputed_blocks, 1u);
  c.baseline = "prefix-reuse";  // a radix cache cannot use 1 behind the missing 9
  const RunResult radix = simulate(w, c, cost);
  EXPECT_EQ(radix.requests[1].recomputed_blocks, 2u);
  EXPECT_EQ(radix.requests[1].ttft, (16 + 32) * 1000);
}

TEST(Simulator, FullOffloadStreamsEveryRead) {
  test::FakeCost cost;
  SimConfig c = links({1, 1, 4});
  c.baseline = "full-cpu-offload";
  const RunResult r = simulate(two_turns(), c, cost);
  EXPECT_EQ(r.shape.hbm_blocks, 0u);
  EXPECT_EQ(r.counters.reads_by_source[0], 0u);
  EXPECT_GT(r.counters.demand.pcie_up, 0u);
}

TEST(Simulator, RejectsUnknownNames) {
  test::FakeCost cost;
  SimConfig c = links({1, 1, 4});
  c.prefetch = "psychic";
  EXPECT_THROW(simulate(two_turns(), c, cost), std::invalid_argument);
  c = links({1, 1, 4});
  c.baseline = "gpu-maybe";
  EXPECT_THROW(simulate(two_turns(), c, cost), std::invalid_argument);
}

TEST(Simulator, MinIsABoundOnHbmMissesOfEveryPolicy) {
  test::FakeCost cost;
  Workload w = two_turns();
  // A third turn re-reading everything, so eviction order matters.
  w.requests.push_back({0, 0, {0, 1, 2, 3}, {4}, 16, 32, {5, 6}});
  w.num_blocks = 7;
  uint64_t min_misses = 0;
  {
    SimConfig c = links({2, 2, 8});
    c.policy = "min";
    const auto r = simulate(w, c, cost);
    min_misses = r.counters.reads_by_source[1] + r.counters.reads_by_source[2] +
                 r.counters.reads_by_source[3];
  }
  for (const auto& p : study_policy_names()) {
    SimConfig c = links({2, 2, 8});
    c.policy = p;
    const auto r = simulate(w, c, cost);
    EXPECT_LE(min_misses, r.counters.reads_by_source[1] + r.counters.reads_by_source[2] +
                              r.counters.reads_by_source[3])
        << p;
  }
}

TieredCacheConfig cache_config() {
  TieredCacheConfig c;
  c.shape = {1, 4, 0};
  c.block_bytes = 1000;
  c.pcie_up = {1e9, 0};
  c.pcie_down = {1e9, 0};
  c.ssd = {1e9, 0};
  return c;
}

TEST(LaxityPrefetch, NeverEvictsABlockNeededSooner) {
  for (bool victim_first : {true, false}) {
    TieredCache cache(cache_config());
    cache.write(20, 0);
    cache.write(10, 0);  // HBM {10}, DRAM {20}
    const std::vector<Access> stream =
        victim_first ? std::vector<Access>{{10, 0, AccessKind::kPrefillRead, 0},
                                           {20, 0, AccessKind::kPrefillRead, 0}}
                     : std::vector<Access>{{20, 0, AccessKind::kPrefillRead, 0},
                                           {10, 0, AccessKind::kPrefillRead, 0}};
    StreamFuture future(stream, 32);
    auto lax = make_prefetcher("laxity", 0);
    KnownList known({{0, 2, 1000}});
    PrefetchView v{cache, stream, future, 0, known, 1000, 1000};
    lax->plan(v);
    // 20 may only displace 10 when 10 is needed after it.
    EXPECT_EQ(cache.where(20), victim_first ? Tier::kDram : Tier::kHbm);
  }
}

TEST(LaxityPrefetch, WaitsUntilLaxityRunsOut) {
  TieredCache cache(cache_config());
  cache.write(20, 0);
  cache.write(10, 0);
  const std::vector<Access> stream{{20, 0, AccessKind::kPrefillRead, 0}};
  StreamFuture future(stream, 32);
  auto lax = make_prefetcher("laxity", 0);
  // Needed 5000 ns from now, ready in 1000 ns, next decision in 1000 ns: too early.
  KnownList known({{0, 1, 6000}});
  PrefetchView early{cache, stream, future, 0, known, 1000, 2000};
  lax->plan(early);
  EXPECT_EQ(cache.where(20), Tier::kDram);
  // At 4500 the laxity (6000 - 4500 - 1000 = 500) is below the 1000 ns to the next point.
  PrefetchView late{cache, stream, future, 0, known, 4500, 5500};
  lax->plan(late);
  EXPECT_EQ(cache.where(20), Tier::kHbm);
  EXPECT_EQ(cache.ready_at(20), 5500);
}

TEST(OraclePrefetch, ReadsTheFutureAndEvictsRegardless) {
  TieredCache cache(cache_config());
  cache.write(20, 0);
  cache.write(10, 0);
  const std::vector<Access> stream{{10, 0, AccessKind::kPrefillRead, 0},
                                   {20, 0, AccessKind::kPrefillRead, 0}};
  StreamFuture future(stream, 32);
  auto oracle = make_prefetcher("oracle", 2);
  KnownList none;
  PrefetchView v{cache, stream, future, 0, none, 0, 0};
  oracle->plan(v);
  EXPECT_EQ(cache.where(20), Tier::kHbm);  // even though 10, needed first, goes down
  EXPECT_EQ(cache.where(10), Tier::kDram);
}

TEST(CausalPrefetch, PredictsTheLastRunStartsOver) {
  TieredCache cache(cache_config());
  cache.write(20, 0);
  cache.write(10, 0);  // HBM {10}, DRAM {20}
  const std::vector<Access> stream;
  StreamFuture future(stream, 32);
  auto causal = make_prefetcher("causal", 1);
  causal->on_read(20);  // a run 20, 10 ...
  causal->on_read(10);
  KnownList none;
  PrefetchView v{cache, stream, future, 0, none, 0, 0};
  causal->plan(v);  // ... is predicted to start again at 20
  EXPECT_EQ(cache.where(20), Tier::kHbm);
  EXPECT_EQ(cache.where(10), Tier::kDram);
}

TEST(CausalPrefetch, PredictsTheNextUnreadRunFromWhereThisRunEndedBefore) {
  TieredCacheConfig c = cache_config();
  c.shape = {2, 4, 0};
  TieredCache cache(c);
  for (BlockId b : {3, 4, 1, 2}) cache.write(b, 0);  // HBM {1, 2}, DRAM {3, 4}
  const std::vector<Access> stream;
  StreamFuture future(stream, 32);
  auto causal = make_prefetcher("causal", 2);
  KnownList none;
  PrefetchView v{cache, stream, future, 0, none, 0, 0};
  causal->on_read(1);  // run 1 2, then run 3 4: a run ending at 2 was followed by 3
  causal->on_read(2);
  causal->plan(v);
  causal->on_read(3);
  causal->on_read(4);
  causal->plan(v);  // (guessed 3 4 would restart: not what followed 1 2, so no repeats)
  EXPECT_EQ(cache.where(3), Tier::kDram);
  causal->on_read(1);
  causal->on_read(2);
  causal->plan(v);  // ended at 2 again: 3 4 come next
  EXPECT_EQ(cache.where(3), Tier::kHbm);
  EXPECT_EQ(cache.where(4), Tier::kHbm);
  EXPECT_EQ(cache.counters().prefetches, 2u);
}

TEST(KnownList, ContainsExactlyTheSpansPositions) {
  const KnownList k({{2, 4, 0}, {4, 5, 10}, {9, 12, 20}});
  std::vector<uint64_t> in;
  for (uint64_t p = 0; p < 14; ++p) {
    if (k.contains(p)) in.push_back(p);
  }
  EXPECT_EQ(in, (std::vector<uint64_t>{2, 3, 4, 9, 10, 11}));
}

}  // namespace
}  // namespace tempo::placement
