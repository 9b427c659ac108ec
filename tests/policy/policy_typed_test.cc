// Every policy through the same cases. Expected miss counts were worked by hand on each
// reference string (the working is in Documentation/placement-study.md, "Policy tests").
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>

#include "policies/study_policies.h"
#include "policy_harness.h"

namespace tempo {
namespace {

// Hand-worked reference strings.
const std::vector<BlockId> kScan = {1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4};      // capacity 3
const std::vector<BlockId> kHot = {1, 1, 2, 3, 1, 4, 5, 1, 6, 7, 1};          // capacity 2
const std::vector<BlockId> kShift = {1, 1, 1, 1, 2, 3, 4, 2, 3, 4, 2, 3, 4};  // capacity 3
const std::vector<BlockId> kComeback = {1, 1, 2, 2, 2, 3, 3, 3, 1, 4, 1};     // capacity 2

struct Expect {
  const char* name;
  uint64_t scan, hot, shift, comeback;
};

struct Lru {
  static constexpr Expect e{"lru", 12, 10, 4, 5};
};
struct ReuseFrequency {
  static constexpr Expect e{"reuse-frequency", 12, 7, 10, 6};
};
struct ReuseFrequencyPersistent {
  static constexpr Expect e{"reuse-frequency-persistent", 12, 7, 10, 5};
};
struct PredictedReuse {
  static constexpr Expect e{"predicted-reuse", 12, 10, 4, 5};
};
struct Ewma {
  static constexpr Expect e{"ewma", 12, 7, 5, 6};
};
struct Arc {
  static constexpr Expect e{"arc", 12, 7, 6, 5};
};
struct Adaptive {
  static constexpr Expect e{"adaptive", 12, 9, 5, 5};
};
struct Min {
  static constexpr Expect e{"min", 6, 7, 4, 4};
};

template <typename P>
class EveryPolicy : public ::testing::Test {
 protected:
  std::unique_ptr<EvictionPolicy> make() { return make_study_policy(P::e.name, opts_); }
  TraceOracle oracle_{{}};
  PolicyOptions opts_{.capacity_entries = 4, .future = &oracle_};
};

using Policies = ::testing::Types<Lru, ReuseFrequency, ReuseFrequencyPersistent, PredictedReuse,
                                  Ewma, Arc, Adaptive, Min>;
TYPED_TEST_SUITE(EveryPolicy, Policies);

TYPED_TEST(EveryPolicy, IsRegisteredUnderItsName) {
  auto p = this->make();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->name(), TypeParam::e.name);
  const auto names = study_policy_names();
  EXPECT_NE(std::find(names.begin(), names.end(), TypeParam::e.name), names.end());
}

TYPED_TEST(EveryPolicy, EmptyHasNoVictim) {
  auto p = this->make();
  EXPECT_EQ(p->size(), 0u);
  EXPECT_FALSE(p->pick_victim().has_value());
  p->remove(7);
  p->evict(7);
  p->record_access(7, 1);
  EXPECT_EQ(p->size(), 0u);
  EXPECT_EQ(p->stats().removes, 0u);
  EXPECT_EQ(p->stats().accesses, 0u);
}

TYPED_TEST(EveryPolicy, AddRemoveAndStats) {
  auto p = this->make();
  p->add(1, 10, 0);
  p->add(2, 10, 1);
  p->add(2, 10, 2);  // already tracked: ignored
  EXPECT_EQ(p->size(), 2u);
  EXPECT_EQ(p->stats().adds, 2u);
  p->record_access(1, 3);
  EXPECT_EQ(p->stats().accesses, 1u);
  p->remove(1);
  EXPECT_EQ(p->size(), 1u);
  EXPECT_EQ(p->pick_victim(), std::optional<BlockId>(2));
  p->evict(2);
  EXPECT_EQ(p->size(), 0u);
  EXPECT_EQ(p->stats().removes, 2u);
  EXPECT_EQ(p->stats().evictions, 1u);
  EXPECT_EQ(p->stats().victims, 1u);
}

TYPED_TEST(EveryPolicy, VictimIsAlwaysTracked) {
  std::mt19937_64 rng(7);
  std::vector<BlockId> trace(2000);
  for (auto& id : trace) id = rng() % 40;
  const auto r = test::run_cache(TypeParam::e.name, 8, trace);
  EXPECT_EQ(r.victims.size(), r.misses - 8);
  EXPECT_GE(r.misses, test::run_cache("min", 8, trace).misses);
}

TYPED_TEST(EveryPolicy, CyclicScanLargerThanCache) {
  EXPECT_EQ(test::run_cache(TypeParam::e.name, 3, kScan).misses, TypeParam::e.scan);
}

TYPED_TEST(EveryPolicy, HotBlockAmongOneShotBlocks) {
  EXPECT_EQ(test::run_cache(TypeParam::e.name, 2, kHot).misses, TypeParam::e.hot);
}

TYPED_TEST(EveryPolicy, WorkingSetShiftsAwayFromOldHotBlock) {
  EXPECT_EQ(test::run_cache(TypeParam::e.name, 3, kShift).misses, TypeParam::e.shift);
}

TYPED_TEST(EveryPolicy, EvictedHotBlockComesBack) {
  EXPECT_EQ(test::run_cache(TypeParam::e.name, 2, kComeback).misses, TypeParam::e.comeback);
}

TYPED_TEST(EveryPolicy, DeterministicAcrossRuns) {
  std::mt19937_64 rng(11);
  std::vector<BlockId> trace(3000);
  for (auto& id : trace) id = rng() % 64;
  const auto a = test::run_cache(TypeParam::e.name, 16, trace);
  const auto b = test::run_cache(TypeParam::e.name, 16, trace);
  EXPECT_EQ(a.victims, b.victims);
}

}  // namespace
}  // namespace tempo
