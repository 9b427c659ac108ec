// Behaviour specific to one policy, beyond the shared typed cases.
#include <gtest/gtest.h>

#include <random>

#include "policies/adaptive.h"
#include "policies/belady.h"
#include "policies/study_policies.h"
#include "policy/arc.h"
#include "policy_harness.h"

namespace tempo {
namespace {

std::vector<BlockId> random_trace(uint64_t seed, size_t n, BlockId universe) {
  std::mt19937_64 rng(seed);
  std::vector<BlockId> t(n);
  // Skewed: half the references go to an eighth of the ids.
  for (auto& id : t) id = (rng() % 2 == 0) ? rng() % (universe / 8) : rng() % universe;
  return t;
}

TEST(Lru, DenseAndHashedIdsMix) {
  // Small ids take the flat index, 64-bit content hashes the hash map; order is one list.
  auto p = make_study_policy("lru");
  const std::vector<BlockId> ids = {7, 0x9e3779b97f4a7c15ULL, 1u << 20, 3};
  for (size_t i = 0; i < ids.size(); ++i) p->add(ids[i], 1, static_cast<TimeNs>(i));
  p->record_access(7, 9);
  for (BlockId want : std::vector<BlockId>{0x9e3779b97f4a7c15ULL, 1u << 20, 3, 7}) {
    ASSERT_EQ(p->pick_victim(), std::optional<BlockId>(want));
    p->evict(want);
  }
  EXPECT_EQ(p->size(), 0u);
  EXPECT_EQ(p->stats().evictions, 4u);
}

TEST(PredictedReuse, MakesExactlyTheDecisionsOfLru) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const auto trace = random_trace(seed, 5000, 200);
    for (size_t cap : {4u, 16u, 64u}) {
      const auto lru = test::run_cache("lru", cap, trace);
      const auto pr = test::run_cache("predicted-reuse", cap, trace);
      ASSERT_EQ(pr.victims, lru.victims) << "seed " << seed << " capacity " << cap;
      ASSERT_FALSE(lru.victims.empty());
    }
  }
}

TEST(Ewma, DecidesDifferentlyFromLru) {
  // Hand-worked on {1,1,2,3,1,4,5,1,6,7,1} at capacity 2: lru evicts the regular block 1
  // at reference 3, ewma evicts block 2 (no gap known, so predicted never).
  const std::vector<BlockId> hot = {1, 1, 2, 3, 1, 4, 5, 1, 6, 7, 1};
  const auto lru = test::run_cache("lru", 2, hot);
  const auto ewma = test::run_cache("ewma", 2, hot);
  ASSERT_FALSE(lru.victims.empty());
  EXPECT_EQ(lru.victims.front(), 1u);
  EXPECT_EQ(ewma.victims.front(), 2u);
  EXPECT_EQ(ewma.victims, (std::vector<BlockId>{2, 3, 4, 5, 6}));
  // And on random traces the victim sequences differ too.
  const auto trace = random_trace(3, 4000, 128);
  EXPECT_NE(test::run_cache("ewma", 16, trace).victims, test::run_cache("lru", 16, trace).victims);
}

TEST(Ewma, OverdueBlockIsEvictedFirst) {
  auto p = make_study_policy("ewma");
  p->add(1, 1, 0);
  p->record_access(1, 1);  // gap 1: predicted at 2
  p->add(2, 1, 2);         // no gap: predicted never
  EXPECT_EQ(p->pick_victim(), std::optional<BlockId>(2));
  p->add(3, 1, 4);  // now 4: block 1 missed its touch by more than a whole gap
  EXPECT_EQ(p->pick_victim(), std::optional<BlockId>(1));
}

TEST(Ewma, HistoryCarriesTheGap) {
  auto p = make_study_policy("ewma");
  p->add_with_history(1, 1, 10, AccessHistory{3, 9, 4.0});   // predicted 13
  p->add_with_history(2, 1, 10, AccessHistory{3, 10, 8.0});  // predicted 18
  EXPECT_EQ(p->pick_victim(), std::optional<BlockId>(2));
}

TEST(ReuseFrequency, HistoryCarriesTheCount) {
  for (const char* name : {"reuse-frequency", "reuse-frequency-persistent"}) {
    auto p = make_study_policy(name);
    p->add_with_history(1, 1, 0, AccessHistory{5, 0, -1});
    p->add(2, 1, 1);
    p->record_access(2, 2);
    p->record_access(2, 3);  // 3 references < 5
    EXPECT_EQ(p->pick_victim(), std::optional<BlockId>(2)) << name;
  }
}

TEST(ReuseFrequency, OnlyThePersistentVariantRemembersEvictedCounts) {
  for (bool persistent : {false, true}) {
    auto p = make_study_policy(persistent ? "reuse-frequency-persistent" : "reuse-frequency");
    p->add(1, 1, 0);
    for (TimeNs t = 1; t <= 4; ++t) p->record_access(1, t);  // 5 references
    p->evict(1);
    p->add(2, 1, 5);
    p->record_access(2, 6);  // 2 references
    p->add(1, 1, 7);         // back: 1 reference, or 6 when remembered
    EXPECT_EQ(p->pick_victim(), std::optional<BlockId>(persistent ? 2 : 1));
  }
}

TEST(Arc, GhostHitInB1GrowsRecencyTarget) {
  ArcPolicy arc(2);
  arc.add(1, 1, 0);
  arc.record_access(1, 1);                                  // T2 = {1}
  arc.add(2, 1, 2);                                         // T1 = {2}
  ASSERT_EQ(arc.pick_victim(), std::optional<BlockId>(2));  // |T1| = 1 > p = 0
  arc.evict(2);                                             // B1 = {2}
  arc.add(3, 1, 3);
  ASSERT_EQ(arc.pick_victim(), std::optional<BlockId>(3));
  arc.evict(3);  // B1 = {3, 2}
  EXPECT_EQ(arc.target_t1(), 0.0);
  arc.add(2, 1, 4);  // ghost hit in B1: p grows by max(1, |B2| / |B1|) = 1; 2 joins T2
  EXPECT_EQ(arc.target_t1(), 1.0);
  EXPECT_EQ(arc.pick_victim(), std::optional<BlockId>(1));  // T1 empty: T2's LRU
}

TEST(Arc, RemoveForgetsWhileEvictRemembers) {
  ArcPolicy arc(2);
  arc.add(1, 1, 0);
  arc.record_access(1, 1);  // T2
  arc.add(2, 1, 2);
  arc.evict(1);  // -> B2
  arc.add(3, 1, 3);
  arc.add(1, 1, 4);  // ghost hit in B2: p stays at its floor of 0, 1 goes to T2
  EXPECT_EQ(arc.target_t1(), 0.0);
  EXPECT_EQ(arc.size(), 3u);
  arc.remove(1);  // pinned: no ghost
  arc.add(1, 1, 5);
  EXPECT_EQ(arc.pick_victim(), std::optional<BlockId>(2));  // 1 is cold again, 2 is older
}

TEST(Adaptive, RegretShiftsWeightAwayFromTheExpertThatWasWrong) {
  auto made = make_study_policy("adaptive", PolicyOptions{.capacity_entries = 2});
  auto& p = dynamic_cast<AdaptivePolicy&>(*made);
  ASSERT_EQ(p.num_experts(), 3u);
  EXPECT_EQ(p.expert_name(0), "lru");
  EXPECT_EQ(p.expert_name(1), "reuse-frequency-persistent");
  EXPECT_EQ(p.expert_name(2), "ewma");
  EXPECT_DOUBLE_EQ(p.weight(0), 1.0 / 3);
  p.add(1, 1, 0);
  p.record_access(1, 1);
  p.add(2, 1, 2);
  // lru says 1, frequency and ewma say 2. The first draw, 0.618, falls in frequency's
  // third of the weight.
  ASSERT_EQ(p.pick_victim(), std::optional<BlockId>(2));
  p.evict(2);
  p.add(3, 1, 3);
  // lru says 1; frequency (1 has 2 references) and ewma (3 has no gap yet) say 3. The
  // second draw, 0.236, falls in lru's third.
  ASSERT_EQ(p.pick_victim(), std::optional<BlockId>(1));
  p.evict(1);
  p.add(2, 1, 4);  // frequency's victim came back: frequency loses weight
  EXPECT_LT(p.weight(1), p.weight(0));
  EXPECT_DOUBLE_EQ(p.weight(0), p.weight(2));
  ASSERT_EQ(p.pick_victim(), std::optional<BlockId>(3));  // all three agree: no draw
  p.evict(3);
  p.add(1, 1, 5);  // lru's victim came back too: ewma now leads
  EXPECT_GT(p.weight(2), p.weight(0));
  EXPECT_GT(p.weight(2), p.weight(1));
  EXPECT_NEAR(p.weight(0) + p.weight(1) + p.weight(2), 1.0, 1e-12);
}

TEST(Adaptive, PeekingDoesNotUseUpADraw) {
  auto p = make_study_policy("adaptive", PolicyOptions{.capacity_entries = 2});
  p->add(1, 1, 0);
  p->record_access(1, 1);
  p->add(2, 1, 2);
  // Experts disagree; however often the owner asks, the answer is the first draw's.
  EXPECT_EQ(p->pick_victim(), std::optional<BlockId>(2));
  EXPECT_EQ(p->pick_victim(), std::optional<BlockId>(2));
  EXPECT_EQ(p->pick_victim(), std::optional<BlockId>(2));
}

TEST(Adaptive, RejectsBadExperts) {
  EXPECT_EQ(make_study_policy("adaptive", PolicyOptions{.adaptive_experts = {}}), nullptr);
  EXPECT_EQ(make_study_policy("adaptive", PolicyOptions{.adaptive_experts = {"lru", "adaptive"}}),
            nullptr);
  EXPECT_EQ(make_study_policy("adaptive", PolicyOptions{.adaptive_experts = {"lru", "nope"}}),
            nullptr);
  EXPECT_NE(make_study_policy("adaptive", PolicyOptions{.adaptive_experts = {"lru", "arc"}}),
            nullptr);
}

TEST(Belady, NeverWorseThanAnyPolicy) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    const auto trace = random_trace(seed, 3000, 100);
    const uint64_t min = test::run_cache("min", 12, trace).misses;
    for (const auto& name : study_policy_names()) {
      EXPECT_LE(min, test::run_cache(name, 12, trace).misses) << name;
    }
  }
}

TEST(TraceOracle, AnswersNextUseAsOfTheCursor) {
  TraceOracle o({5, 6, 5, 7, 6});
  EXPECT_EQ(o.next_use(5), 0u);  // before anything: first occurrence
  EXPECT_EQ(o.next_use(9), FutureOracle::kNoFutureUse);
  o.advance(0);
  EXPECT_EQ(o.next_use(5), 2u);
  EXPECT_EQ(o.next_use(6), 1u);
  o.advance(1);
  o.advance(2);
  EXPECT_EQ(o.next_use(5), FutureOracle::kNoFutureUse);
  EXPECT_EQ(o.next_use(6), 4u);
  EXPECT_EQ(o.next_use(7), 3u);
}

TEST(Registry, RejectsUnknownNamesAndBadOptions) {
  EXPECT_EQ(make_study_policy("mru"), nullptr);
  EXPECT_EQ(make_study_policy("min"), nullptr);  // needs a future
  EXPECT_EQ(make_study_policy("ewma", PolicyOptions{.ewma_alpha = 0}), nullptr);
  EXPECT_EQ(make_study_policy("ewma", PolicyOptions{.ewma_alpha = 1.5}), nullptr);
  EXPECT_EQ(make_study_policy("adaptive", PolicyOptions{.adaptive_learning_rate = 0}), nullptr);
  EXPECT_NE(make_study_policy("lru"), nullptr);
}

}  // namespace
}  // namespace tempo
