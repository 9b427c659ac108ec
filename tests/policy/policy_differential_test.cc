// Differential tests: every policy that claims a textbook name replays random reference
// strings through the owner's loop (policy_harness.h) and must miss exactly as often as
// the reference written from the textbook definition (reference_policies.h).
#include <gtest/gtest.h>

#include "policy/arc.h"
#include "policy_harness.h"
#include "reference_policies.h"

namespace tempo {
namespace {

TEST(Differential, TextbookPoliciesMatchTheirReferences) {
  for (const auto& tb : reference::textbook_policies()) {
    for (uint64_t seed = 1; seed <= 120; ++seed) {
      const auto trace = reference::random_stream(seed, 300 + 17 * seed);
      for (size_t cap : {1u, 2u, 3u, 5u, 8u, 13u, 21u}) {
        ASSERT_EQ(test::run_cache(tb.policy, cap, trace).misses, tb.misses(cap, trace))
            << tb.policy << " seed " << seed << " capacity " << cap;
      }
    }
  }
}

TEST(Differential, ReferencesTellThePoliciesApart) {
  // Agreeing with one reference is not agreeing with any: on these streams every pair of
  // distinct references disagrees somewhere, and MIN never misses more than the others.
  const auto refs = reference::textbook_policies();
  std::vector<std::vector<uint64_t>> counts(refs.size());
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    const auto trace = reference::random_stream(seed, 1000);
    for (size_t i = 0; i < refs.size(); ++i) counts[i].push_back(refs[i].misses(5, trace));
  }
  for (size_t i = 0; i < refs.size(); ++i) {
    for (size_t j = 0; j < refs.size(); ++j) {
      if (refs[i].misses == refs[j].misses) continue;
      EXPECT_NE(counts[i], counts[j]) << refs[i].policy << " vs " << refs[j].policy;
    }
    for (size_t k = 0; k < counts[i].size(); ++k) EXPECT_LE(counts.back()[k], counts[i][k]);
  }
}

TEST(Arc, SmallestStreamWhereTheOrderOfAdaptAndReplaceMatters) {
  // Capacity 2, 0 0 1 2 1 0 (issue 16), p = 0: 0 misses (T1), 0 hits (T2 = {0}), 1 misses
  // (T1 = {1}), 2 misses: |T1| = 1 > p, 1 goes to B1. 1 returns from B1: p becomes 1
  // first, then REPLACE sees |T1| = |{2}| = 1, not > p, so T2's 0 goes to B2. 0 returns
  // from B2: p = 0, |T1| = 1 > p, 2 goes. 5 misses; adapting after the eviction (the old
  // variant) evicted 2 instead of 0 and then hit on 0: 4.
  const std::vector<BlockId> s = {0, 0, 1, 2, 1, 0};
  EXPECT_EQ(reference::arc_misses(2, s), 5u);
  const auto run = test::run_cache("arc", 2, s);
  EXPECT_EQ(run.misses, 5u);
  EXPECT_EQ(run.victims, (std::vector<BlockId>{1, 0, 2}));
}

}  // namespace
}  // namespace tempo
