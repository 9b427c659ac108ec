#include "controller/controller.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <span>
#include <vector>

#include "stack/sim_stack.h"

namespace tempo {
namespace {

// Device: 10,000 B fast tier, 1000 B/s, 2 slots, no latency; budget 5000 B.
SimStackConfig small(const char* policy) {
  SimStackConfig c;
  c.device = SimDeviceConfig{10'000, 1000.0, 2, 0, 200.0, "lru"};
  c.provider = ProviderConfig{5000, 1000.0, 1000.0, 2 * kNsPerSec, 0};
  c.controller = ControllerConfig{*parse_policy(policy), 50 * kNsPerMs};
  return c;
}

class ControllerTest : public ::testing::Test {
 protected:
  void make(const char* policy, TimeNs retain_ns = 10 * kNsPerSec, uint64_t retain = 1024) {
    SimStackConfig c = small(policy);
    c.controller.retain_ns = retain_ns;
    c.controller.retain_claims = retain;
    rt = std::make_unique<SimStack>(c);
    for (ObjectKey k = 1; k <= 40; ++k) rt->device.add_object(k, 100);
  }
  static Manifest objs(ObjectKey first, ObjectKey count) {
    Manifest m;
    for (ObjectKey k = first; k < first + count; ++k) m.push_back({k, 100});
    return m;
  }
  ClaimId report(const Manifest& m, TimeNs ttu) {
    ClaimId id = 0;
    EXPECT_EQ(rt->stack.controller().report(m, ttu, &id), 0);
    return id;
  }
  ClaimState state(ClaimId id) { return rt->stack.controller().claim(id)->state; }
  Controller& ctl() { return rt->stack.controller(); }
  std::optional<TimeNs> laxity(ClaimId id) { return ctl().laxity(id, rt->driver.clock().now()); }
  std::unique_ptr<SimStack> rt;
};

TEST_F(ControllerTest, DemandCommitsOnlyWhenRetrievalIsRequested) {
  make("demand");
  const ClaimId a = report(objs(1, 5), 0);
  rt->driver.events().run_until(kNsPerSec);
  EXPECT_EQ(state(a), ClaimState::kPlanned);
  RetrievalOutcome out{};
  ASSERT_EQ(ctl().request_retrieval(a, &out), 0);
  EXPECT_EQ(out, RetrievalOutcome::kWait);
  EXPECT_EQ(state(a), ClaimState::kStaging);
  rt->driver.events().run_all();
  EXPECT_EQ(state(a), ClaimState::kStageReady);
  // 500 B in two slots at 1000 B/s from t = 1 s.
  EXPECT_EQ(ctl().claim(a)->timing.ready, 1500 * kNsPerMs);
}

TEST_F(ControllerTest, ImmediateCommitsAtReport) {
  make("immediate");
  const ClaimId a = report(objs(1, 2), 10 * kNsPerSec);
  EXPECT_EQ(state(a), ClaimState::kStaging);
  EXPECT_EQ(ctl().claim(a)->timing.committed, 0);
}

TEST_F(ControllerTest, QueueKCommitsTheFirstKOfTheWaitingQueue) {
  make("queue-1");
  const ClaimId a = report(objs(1, 2), 10 * kNsPerSec);
  const ClaimId b = report(objs(3, 2), 10 * kNsPerSec);
  EXPECT_EQ(state(a), ClaimState::kPlanned);
  // A request without a claim is first in the queue: nobody is within K = 1.
  const ClaimId order1[] = {kNoClaim, b, a};
  ASSERT_EQ(ctl().update_order(order1), 0);
  EXPECT_EQ(state(a), ClaimState::kPlanned);
  EXPECT_EQ(state(b), ClaimState::kPlanned);
  const ClaimId order2[] = {b, a};
  ASSERT_EQ(ctl().update_order(order2), 0);
  EXPECT_EQ(state(b), ClaimState::kStaging);
  EXPECT_EQ(state(a), ClaimState::kPlanned);
}

// The same order again (an engine hands its queue on every step) places nothing and runs no
// pass; the same claims at other places (another engine's queue) do.
TEST_F(ControllerTest, TheSameOrderAgainRunsNoPassButTheSameClaimsElsewhereDo) {
  make("queue-1");
  const ClaimId a = report(objs(1, 2), 10 * kNsPerSec);
  const ClaimId b = report(objs(3, 2), 10 * kNsPerSec);
  const ClaimId c = report(objs(5, 2), 10 * kNsPerSec);
  const std::vector<ClaimId> abc{a, b, c};
  ASSERT_EQ(ctl().update_order(abc), 0);
  EXPECT_EQ(state(a), ClaimState::kStaging);
  const uint64_t passes = ctl().stats().evaluations;
  ASSERT_EQ(ctl().update_order(abc), 0);
  EXPECT_EQ(ctl().stats().evaluations, passes);
  // A claim of the order ended meanwhile: the same order is still taken, and unchanged.
  ASSERT_EQ(ctl().cancel(c), 0);
  ASSERT_EQ(ctl().update_order(abc), 0);
  EXPECT_EQ(state(b), ClaimState::kPlanned);
  // a and b as the heads of two engines' queues: the same ids, each first in its queue.
  const std::vector<ClaimId> first{a}, second{b, c};
  const std::span<const ClaimId> two[] = {first, second};
  ASSERT_EQ(ctl().update_orders(two), 0);
  EXPECT_EQ(state(b), ClaimState::kStaging);
  // An id never reported is refused even where the rest repeats the order.
  const std::vector<ClaimId> unknown{a, b, c, c + 100};
  EXPECT_EQ(ctl().update_order(unknown), -ENOENT);
}

// Several engines' queues (tempod's clients, the replay's engines on one host): K counts
// places of each engine's own queue, however long or short the others are.
TEST_F(ControllerTest, QueueKCommitsEachEnginesFirstK) {
  make("queue-1");
  const ClaimId a = report(objs(1, 2), 10 * kNsPerSec);
  const ClaimId b = report(objs(3, 2), 10 * kNsPerSec);
  const ClaimId c = report(objs(5, 2), 10 * kNsPerSec);
  const ClaimId d = report(objs(7, 2), 10 * kNsPerSec);
  // Engine 0 is empty, engine 1 holds a then b, engine 2 a request without a claim, then c,
  // then d. The round robin is a, kNoClaim, b, c, d: its first place, but only a is first in
  // its own queue.
  const std::vector<ClaimId> none, one{a, b}, two{kNoClaim, c, d};
  const std::span<const ClaimId> orders[] = {none, one, two};
  ASSERT_EQ(ctl().update_orders(orders), 0);
  EXPECT_EQ(state(a), ClaimState::kStaging);
  EXPECT_EQ(state(b), ClaimState::kPlanned);
  EXPECT_EQ(state(c), ClaimState::kPlanned);
  EXPECT_EQ(state(d), ClaimState::kPlanned);
  // Engine 2's first request is admitted: c is first in its queue, d still second.
  const std::vector<ClaimId> later{c, d};
  const std::span<const ClaimId> orders2[] = {none, one, later};
  ASSERT_EQ(ctl().update_orders(orders2), 0);
  EXPECT_EQ(state(c), ClaimState::kStaging);
  EXPECT_EQ(state(b), ClaimState::kPlanned);
  EXPECT_EQ(state(d), ClaimState::kPlanned);
}

TEST_F(ControllerTest, TempoCommitsWhenLaxityReachesZero) {
  make("tempo");
  // 500 B alone on an idle device: TTR 0.5 s. TTU 2 s: laxity 1.5 s.
  const ClaimId a = report(objs(1, 5), 2 * kNsPerSec);
  EXPECT_EQ(*laxity(a), 1500 * kNsPerMs);
  rt->driver.events().run_until(1 * kNsPerSec);
  EXPECT_EQ(*laxity(a), 500 * kNsPerMs);  // TTU adjusted for elapsed time
  rt->driver.events().run_all();
  // The 50 ms tick first sees laxity <= 0 at t = 1.5 s; staging then ends at 2.0 s.
  EXPECT_EQ(ctl().claim(a)->timing.committed, 1500 * kNsPerMs);
  EXPECT_EQ(ctl().claim(a)->timing.ready, 2 * kNsPerSec);
}

TEST_F(ControllerTest, TempoCommitsWhenLaxityReachesZeroBetweenTicks) {
  make("tempo");
  // TTR 0.5 s, TTU 1.53 s: laxity reaches 0 at 1.03 s, between the ticks at 1.0 and 1.05 s.
  // The tick at 1.0 s finds it due within a tick and the controller wakes at 1.03 s.
  const ClaimId a = report(objs(1, 5), 1530 * kNsPerMs);
  rt->driver.events().run_until(1010 * kNsPerMs);
  EXPECT_EQ(state(a), ClaimState::kPlanned);
  EXPECT_EQ(ctl().next_due(), 1030 * kNsPerMs);
  rt->driver.events().run_all();
  EXPECT_EQ(ctl().claim(a)->timing.committed, 1030 * kNsPerMs);
  EXPECT_EQ(ctl().claim(a)->timing.ready, 1530 * kNsPerMs);
  // The same under tempo-risk with a point TTU: its rule meets it at the same instant.
  make("tempo-risk");
  const ClaimId b = report(objs(1, 5), 1530 * kNsPerMs);
  rt->driver.events().run_all();
  EXPECT_EQ(ctl().claim(b)->timing.committed, 1030 * kNsPerMs);
}

TEST_F(ControllerTest, CommitmentOrderCanDifferFromRequestOrder) {
  make("tempo");
  // First in the queue: 200 B, TTU 5 s, TTR 0.2 s. Second: TTU 6 s but 3800 B (its first
  // two objects are the first claim's), TTR 3.8 s: its laxity reaches 0 at 2.2 s.
  const ClaimId first = report(objs(3, 2), 5 * kNsPerSec);
  const ClaimId second = report(objs(3, 38), 6 * kNsPerSec);
  const ClaimId order[] = {first, second};
  ctl().update_order(order);
  rt->driver.events().run_all();
  EXPECT_EQ(ctl().claim(second)->timing.committed, 2200 * kNsPerMs);
  // The second's staging brought the first's objects in by 2.4 s: TTR 0, so the first
  // commits only when its TTU runs out, already stage-ready.
  EXPECT_EQ(ctl().claim(first)->timing.committed, 5 * kNsPerSec);
  EXPECT_EQ(ctl().claim(first)->timing.ready, 5 * kNsPerSec);
}

TEST_F(ControllerTest, CapacityBlockedClaimDoesNotBlockALaterOne) {
  make("immediate");
  const ClaimId big = report(objs(1, 40), 0);  // 4000 B of the 5000 B budget
  const ClaimId blocked = report(objs(1, 1), 0);
  (void)blocked;
  rt->device.add_object(100, 1500);
  rt->device.add_object(101, 900);
  const ClaimId too_big = report(Manifest{{100, 1500}}, 0);
  const ClaimId fits = report(Manifest{{101, 900}}, 0);
  const ClaimId order[] = {big, too_big, fits};
  ctl().update_order(order);
  EXPECT_EQ(state(big), ClaimState::kStaging);
  EXPECT_EQ(state(too_big), ClaimState::kPlanned);
  EXPECT_TRUE(ctl().claim(too_big)->deferred);
  EXPECT_EQ(state(fits), ClaimState::kStaging);
  EXPECT_EQ(rt->stack.provider().ledger().bytes(), 4900u);
}

TEST_F(ControllerTest, OrdinaryPathIsFinalAndNeverCommits) {
  make("demand");
  rt->device.add_object(100, 4500);
  rt->device.add_object(101, 1000);
  const ClaimId big = report(Manifest{{100, 4500}}, 0);
  const ClaimId late = report(Manifest{{101, 1000}}, 0);
  RetrievalOutcome out{};
  ctl().request_retrieval(big, &out);
  ASSERT_EQ(state(big), ClaimState::kStaging);
  ASSERT_EQ(ctl().request_retrieval(late, &out), 0);
  EXPECT_EQ(out, RetrievalOutcome::kOrdinary);
  EXPECT_EQ(state(late), ClaimState::kOrdinary);
  rt->driver.events().run_all();
  ctl().begin_transfer(big);
  ctl().end_transfer(big);  // capacity is back...
  EXPECT_EQ(rt->stack.provider().ledger().bytes(), 0u);
  EXPECT_EQ(state(late), ClaimState::kOrdinary);  // ...but the ordinary choice stands
  EXPECT_EQ(ctl().revise(late, 0), -EINVAL);
  EXPECT_EQ(ctl().request_retrieval(late, &out), 0);
  EXPECT_EQ(out, RetrievalOutcome::kOrdinary);
  EXPECT_EQ(ctl().stats().ordinary, 1u);
  EXPECT_EQ(ctl().stats().capacity_deferrals, 1u);
}

TEST_F(ControllerTest, CancelOfCommittedClaimHoldsProtectionUntilStagingEnds) {
  make("immediate");
  const ClaimId a = report(objs(1, 10), 0);  // 1000 B: ready at 1 s
  rt->driver.events().run_until(200 * kNsPerMs);
  ASSERT_EQ(ctl().cancel(a), 0);
  EXPECT_EQ(state(a), ClaimState::kStaging);
  EXPECT_EQ(rt->stack.provider().ledger().bytes(), 1000u);
  EXPECT_EQ(ctl().cancel(a), -EALREADY);
  rt->driver.events().run_all();
  EXPECT_EQ(state(a), ClaimState::kCancelled);
  EXPECT_EQ(ctl().claim(a)->timing.ended, kNsPerSec);
  EXPECT_EQ(rt->stack.provider().ledger().bytes(), 0u);
  EXPECT_EQ(rt->device.stats().pins, 0u);
}

TEST_F(ControllerTest, CancelDuringTransferReleasesAtTransferEnd) {
  make("immediate");
  const ClaimId a = report(objs(1, 2), 0);
  rt->driver.events().run_all();
  ASSERT_EQ(ctl().begin_transfer(a), 0);
  ASSERT_EQ(ctl().cancel(a), 0);
  EXPECT_EQ(rt->stack.provider().ledger().bytes(), 200u);
  ASSERT_EQ(ctl().end_transfer(a), 0);
  EXPECT_EQ(state(a), ClaimState::kCancelled);
  EXPECT_EQ(rt->stack.provider().ledger().bytes(), 0u);
}

TEST_F(ControllerTest, FullLifecycleAndMisuse) {
  make("immediate");
  const ClaimId a = report(objs(1, 2), 0);
  RetrievalOutcome out{};
  EXPECT_EQ(ctl().begin_transfer(a), -EAGAIN);  // still staging
  rt->driver.events().run_all();
  ASSERT_EQ(ctl().request_retrieval(a, &out), 0);
  EXPECT_EQ(out, RetrievalOutcome::kReady);
  ASSERT_EQ(ctl().begin_transfer(a), 0);
  EXPECT_EQ(ctl().begin_transfer(a), -EINVAL);
  EXPECT_EQ(ctl().request_retrieval(a, &out), -EINVAL);
  ASSERT_EQ(ctl().end_transfer(a), 0);
  EXPECT_EQ(state(a), ClaimState::kReleased);
  EXPECT_EQ(ctl().end_transfer(a), -EINVAL);  // double release
  EXPECT_EQ(ctl().cancel(a), -EINVAL);        // cancel after transfer
  EXPECT_EQ(ctl().revise(a, 5), -EINVAL);
  EXPECT_EQ(ctl().revise(999, 5), -ENOENT);
  EXPECT_EQ(ctl().cancel(999), -ENOENT);
  EXPECT_EQ(ctl().request_retrieval(999, &out), -ENOENT);
  const ClaimId bad_order[] = {a, 999};
  EXPECT_EQ(ctl().update_order(bad_order), -ENOENT);
  ClaimId id = 0;
  EXPECT_EQ(ctl().report(Manifest{}, 0, &id), -EINVAL);
  EXPECT_EQ(ctl().stats().released, 1u);
  EXPECT_EQ(rt->device.stats().pins, 0u);
}

TEST_F(ControllerTest, InvalidObjectsFailTheClaim) {
  make("immediate");
  const ClaimId a = report(Manifest{{555, 100}}, 0);
  EXPECT_EQ(state(a), ClaimState::kFailed);
  RetrievalOutcome out{};
  EXPECT_EQ(ctl().request_retrieval(a, &out), -ENOENT);
}

TEST_F(ControllerTest, StagingFailureFailsOverToTheOrdinaryPath) {
  make("immediate");
  rt->device.inject_stage_error(2, -EIO);
  const ClaimId a = report(objs(1, 3), 0);
  rt->driver.events().run_all();
  EXPECT_EQ(state(a), ClaimState::kOrdinary);
  EXPECT_EQ(ctl().claim(a)->error, -EIO);
  EXPECT_EQ(rt->stack.provider().ledger().bytes(), 0u);
  EXPECT_EQ(rt->device.stats().pins, 0u);
  RetrievalOutcome out{};
  ASSERT_EQ(ctl().request_retrieval(a, &out), 0);
  EXPECT_EQ(out, RetrievalOutcome::kOrdinary);
}

TEST_F(ControllerTest, RevisionAfterCommitDoesNotRevoke) {
  make("tempo");
  const ClaimId a = report(objs(1, 5), 0);
  ASSERT_EQ(state(a), ClaimState::kStaging);
  EXPECT_EQ(ctl().revise(a, 100 * kNsPerSec), 0);
  EXPECT_EQ(state(a), ClaimState::kStaging);
}

TEST_F(ControllerTest, TempoStaticIgnoresTheBacklog) {
  make("tempo-static");
  const ClaimId backlog = report(objs(1, 30), 0);  // commits now: 3000 B, 3 s of staging
  ASSERT_EQ(state(backlog), ClaimState::kStaging);
  // 500 B: static TTR 0.5 s; the state-aware TTR would be 3.5 s.
  const ClaimId a = report(objs(31, 5), 2 * kNsPerSec);
  EXPECT_EQ(state(a), ClaimState::kPlanned);
  EXPECT_EQ(*laxity(a), 1500 * kNsPerMs);
}

TEST_F(ControllerTest, EndedClaimsAreErasedOnceTheirRetentionWindowPasses) {
  make("demand", kNsPerSec);
  const ClaimId a = report(objs(1, 2), 0);
  const ClaimId b = report(objs(3, 2), 0);
  ASSERT_EQ(ctl().cancel(a), 0);
  rt->driver.events().run_until(600 * kNsPerMs);
  ASSERT_EQ(ctl().cancel(b), 0);
  rt->driver.events().run_until(1100 * kNsPerMs);
  EXPECT_EQ(ctl().held_claims(), 2u);  // nothing erases until the next report or pass
  const ClaimId c = report(objs(5, 2), 0);
  EXPECT_EQ(ctl().claim(a), nullptr);  // ended at 0: past its 1 s
  ASSERT_NE(ctl().claim(b), nullptr);  // ended at 0.6 s: still held
  EXPECT_EQ(state(b), ClaimState::kCancelled);
  EXPECT_EQ(ctl().held_claims(), 2u);      // b and c
  EXPECT_EQ(ctl().stats().cancelled, 2u);  // counters keep what was erased
  EXPECT_EQ(ctl().revise(a, 0), -ENOENT);  // an erased claim is unknown
  const ClaimId order[] = {a, c};          // ... but ordering it is harmless
  EXPECT_EQ(ctl().update_order(order), 0);
  const ClaimId never[] = {c + 1};
  EXPECT_EQ(ctl().update_order(never), -ENOENT);
}

TEST_F(ControllerTest, AtMostTheRetentionCountOfEndedClaimsIsHeld) {
  make("demand", 3600 * kNsPerSec, 3);
  std::vector<ClaimId> ids;
  for (int i = 0; i < 10; ++i) {
    ids.push_back(report(objs(1, 4), 0));
    ASSERT_EQ(ctl().cancel(ids.back()), 0);
  }
  // The tenth report erased down to 3 ended claims (before the tenth ended), then it ended.
  EXPECT_EQ(ctl().held_claims(), 4u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(ctl().claim(ids[i]), nullptr) << i;
  for (int i = 6; i < 10; ++i) EXPECT_EQ(state(ids[i]), ClaimState::kCancelled) << i;
  // Under churn the book stays at live + retention, however many claims come and go.
  std::vector<ClaimId> live;
  for (int i = 0; i < 10'000; ++i) {
    live.push_back(report(objs(1 + i % 30, 4), 3600 * kNsPerSec));
    if (live.size() > 50) {
      ASSERT_EQ(ctl().cancel(live.front()), 0);
      live.erase(live.begin());
    }
    ASSERT_LE(ctl().held_claims(), live.size() + 3 + 1);
  }
  EXPECT_EQ(ctl().stats().live, 50u);
}

TEST_F(ControllerTest, EndedClaimsStopAgeingTheirTtu) {
  make("demand");
  const ClaimId a = report(objs(1, 2), 5 * kNsPerSec);
  rt->driver.events().run_until(kNsPerSec);
  ASSERT_EQ(rt->stack.cancel(a), 0);
  rt->driver.events().run_until(3 * kNsPerSec);
  ClaimView v;
  ASSERT_EQ(rt->stack.query(a, &v), 0);
  EXPECT_EQ(v.ttu, 4 * kNsPerSec);  // as it stood when it ended at 1 s
  EXPECT_FALSE(v.laxity);
  EXPECT_FALSE(v.ttr);
}

TEST(ControllerSources, ARemoteClaimCommitsEarlierThanAnEqualLocalOne) {
  SimStackConfig c = small("tempo");
  // The pool: 8 slots, 400 B/s, 50 ms per request.
  c.remote = SimRemote{{8, 400.0, 50 * kNsPerMs}, {8, 400.0, 50 * kNsPerMs}};
  SimStack rt(c);
  Manifest local, remote;
  for (ObjectKey k = 1; k <= 5; ++k) {
    rt.device.add_object(k, 100);
    rt.device.add_object(100 + k, 100, Source::kRemote);
    local.push_back({k, 100});
    remote.push_back({100 + k, 100});
  }
  Controller& ctl = rt.stack.controller();
  ClaimId l = 0, r = 0;
  ASSERT_EQ(ctl.report(local, 5 * kNsPerSec, &l), 0);
  ASSERT_EQ(ctl.report(remote, 5 * kNsPerSec, &r), 0);
  // Same bytes, same TTU. SSD: 500 B at 1000 B/s, TTR 0.5 s. Pool: 50 ms, then 500 B at
  // 400 B/s: TTR 1.3 s, so its laxity reaches zero 0.8 s sooner.
  EXPECT_EQ(*ctl.laxity(l, rt.driver.clock().now()), 4500 * kNsPerMs);
  EXPECT_EQ(*ctl.laxity(r, rt.driver.clock().now()), 3700 * kNsPerMs);
  rt.driver.run_all();
  EXPECT_EQ(ctl.claim(r)->timing.committed, 3700 * kNsPerMs);
  EXPECT_EQ(ctl.claim(l)->timing.committed, 4500 * kNsPerMs);
  // Both are ready by their TTU.
  EXPECT_EQ(ctl.claim(r)->timing.ready, 5 * kNsPerSec);
  EXPECT_EQ(ctl.claim(l)->timing.ready, 5 * kNsPerSec);
}

TEST_F(ControllerTest, ALayerWiseClaimCommitsLaterAndItsGroupsStillLandInTime) {
  make("tempo");
  // Eight 100 B objects, two slots sharing 1000 B/s: pairs land at 0.2, 0.4, 0.6, 0.8 s.
  const ClaimId a = report(objs(1, 8), 2 * kNsPerSec);
  EXPECT_EQ(*laxity(a), 1200 * kNsPerMs);
  // Four groups of two, needed 200 ms apart: lead max(0.2, 0.4 - 0.2, 0.6 - 0.4,
  // 0.8 - 0.6) = 0.2 s.
  ASSERT_EQ(ctl().set_layers(a, 4, 200 * kNsPerMs), 0);
  EXPECT_EQ(*laxity(a), 1800 * kNsPerMs);
  rt->driver.events().run_all();
  EXPECT_EQ(ctl().claim(a)->timing.committed, 1800 * kNsPerMs);
  // Its first group lands at its TTU (2.0 s), the last (2.6 s) when prefill needs it.
  EXPECT_EQ(ctl().claim(a)->timing.ready, 2600 * kNsPerMs);
  EXPECT_EQ(ctl().set_layers(a, 2, 0), 0);  // committed: ignored
  EXPECT_EQ(ctl().set_layers(999, 2, 0), -ENOENT);
  const ClaimId b = report(objs(20, 2), 10 * kNsPerSec);
  EXPECT_EQ(ctl().set_layers(b, 3, 0), -EINVAL);
  EXPECT_EQ(ctl().set_layers(b, 2, TimeNs{1} << 62), -EOVERFLOW);
  ASSERT_EQ(ctl().cancel(b), 0);
  EXPECT_EQ(ctl().set_layers(b, 2, 0), -EINVAL);  // ended
}

}  // namespace
}  // namespace tempo
