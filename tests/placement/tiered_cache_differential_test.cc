// The textbook policies through TieredCache, the way tempo-sim drives them: one HBM tier
// (a block dropped from it is recomputed when read again), every access a demand read.
// Misses (recomputes) must equal the references of tests/policy/reference_policies.h; this
// is what catches an owner that loses a policy's state, such as a perfect LFU whose count
// was reset when its block was dropped.
#include <gtest/gtest.h>

#include "../policy/reference_policies.h"
#include "placement/tiered_cache.h"
#include "policies/belady.h"

namespace tempo::placement {
namespace {

uint64_t tiered_misses(const std::string& policy, size_t capacity,
                       const std::vector<BlockId>& trace) {
  TraceOracle oracle(trace);
  TieredCacheConfig c;
  c.shape = {capacity, 0, 0};
  c.block_bytes = 1000;
  c.policy = policy;
  c.policy_options.future = &oracle;
  c.pcie_up = c.pcie_down = c.ssd = {1e9, 0};
  TieredCache cache(c);
  for (size_t i = 0; i < trace.size(); ++i) {
    oracle.advance(i);
    cache.read(trace[i], static_cast<TimeNs>(i));
  }
  return cache.counters().reads_by_source[static_cast<int>(Source::kRecompute)];
}

TEST(TieredCacheDifferential, TextbookPoliciesMatchTheirReferences) {
  for (const auto& tb : reference::textbook_policies()) {
    for (uint64_t seed = 1; seed <= 60; ++seed) {
      const auto trace = reference::random_stream(seed, 400 + 13 * seed);
      for (size_t cap : {1u, 2u, 4u, 7u, 16u}) {
        ASSERT_EQ(tiered_misses(tb.policy, cap, trace), tb.misses(cap, trace))
            << tb.policy << " seed " << seed << " capacity " << cap;
      }
    }
  }
}

TEST(TieredCacheDifferential, PersistentCountsSurviveADrop) {
  // Capacity 2: 1 1 (count 2), 2 2 2 (3), 3 drops 1 (2 < 3) and reaches 3; 1 returns and
  // drops 2 (the older of two 3s). A perfect LFU counts 1 at 3 (2 + this one), an in-cache
  // LFU at 1. 4 then drops 3 (the older 3) under the first and 1 under the second, so the
  // last 1 hits only under the perfect LFU: 5 misses against 6.
  const std::vector<BlockId> s = {1, 1, 2, 2, 2, 3, 3, 3, 1, 4, 1};
  EXPECT_EQ(tiered_misses("reuse-frequency-persistent", 2, s), 5u);
  EXPECT_EQ(tiered_misses("reuse-frequency", 2, s), 6u);
}

}  // namespace
}  // namespace tempo::placement
