#include "provider/provider.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <map>

#include "core/event_queue.h"
#include "device/sim_device.h"

namespace tempo {
namespace {

// The claim book a Provider on its own needs (the controller's Claims hold these records):
// one ClaimStaging per id, and the provider's calls by id. A record is made on first use,
// untracked, so an id never tracked reaches the provider as a record it does not track.
class Book {
 public:
  Book(Device& device, const Clock& clock, ProviderConfig config) : p_(device, clock, config) {}

  int track(ClaimId id, const Manifest& m) { return p_.track(rec(id), id, m); }
  int untrack(ClaimId id) { return p_.untrack(rec(id)); }
  std::optional<TimeNs> ttr(ClaimId id, TtrMode mode) { return p_.ttr(rec(id), mode); }
  bool ttr_at_least(ClaimId id, TimeNs threshold, TtrMode mode) {
    return p_.ttr_at_least(rec(id), threshold, mode);
  }
  int set_layers(ClaimId id, uint32_t groups, TimeNs per_group_ns) {
    return p_.set_layers(rec(id), groups, per_group_ns);
  }
  std::optional<TimeNs> lead_ttr(ClaimId id, TtrMode mode) { return p_.lead_ttr(rec(id), mode); }
  std::optional<TimeNs> reference_ttr(ClaimId id) { return p_.reference_ttr(rec(id)); }
  CommitResult commit(ClaimId id) { return p_.commit(rec(id)); }
  int64_t release(ClaimId id) { return p_.release(rec(id)); }
  bool committed(ClaimId id) { return rec(id).committed(); }

  void set_listener(ProviderListener* listener) { p_.set_listener(listener); }
  const CapacityLedger& ledger() const { return p_.ledger(); }
  ProviderStats stats() const { return p_.stats(); }
  double effective_rate_bps() const { return p_.effective_rate_bps(); }
  const LatencyRateEstimator& remote_estimator() const { return p_.remote_estimator(); }
  uint64_t recompute_ledger_bytes() const { return p_.recompute_ledger_bytes(); }
  uint64_t held_pins() const { return p_.held_pins(); }

 private:
  ClaimStaging& rec(ClaimId id) { return book_.try_emplace(id).first->second; }

  Provider p_;
  std::map<ClaimId, ClaimStaging> book_;  // declared after p_: records go first
};

struct Events : ProviderListener {
  std::vector<ClaimId> ready, failed;
  int progress = 0;
  void on_claim_ready(ClaimId id) override { ready.push_back(id); }
  void on_claim_failed(ClaimId id, int) override { failed.push_back(id); }
  void on_staging_progress(bool) override { ++progress; }
};

// Device: 10,000 B fast tier, 1000 B/s, 2 slots, no latency. Provider: 5000 B budget,
// calibrated at the device's true rate; TempoKV-Static at 500 B/s.
class ProviderTest : public ::testing::Test {
 protected:
  ProviderTest()
      : dev(events, SimDeviceConfig{10'000, 1000.0, 2, 0, 200.0, "lru"}),
        prov(dev, clock, ProviderConfig{5000, 1000.0, 500.0, 2 * kNsPerSec, 0}) {
    prov.set_listener(&ev);
    for (ObjectKey k = 1; k <= 9; ++k) dev.add_object(k, 500);
  }
  static Manifest objs(std::initializer_list<ObjectKey> keys) {
    Manifest m;
    for (ObjectKey k : keys) m.push_back({k, 500});
    return m;
  }
  void check_ledger() {
    EXPECT_EQ(prov.ledger().bytes(), prov.recompute_ledger_bytes());
    EXPECT_LE(prov.ledger().bytes(), prov.ledger().budget());
  }

  VirtualClock clock;
  EventQueue events{clock};
  SimDevice dev;
  Book prov;
  Events ev;
};

TEST_F(ProviderTest, TtrIsWhenTheLastObjectLandsNotASum) {
  ASSERT_EQ(prov.track(1, objs({1, 2})), 0);
  // Two 500 B reads in two slots share 1000 B/s: both land at 1 s.
  EXPECT_EQ(prov.ttr(1, TtrMode::kStateAware), kNsPerSec);
  // A third read waits for a slot, then has the device alone: 1.5 s, when the last lands.
  ASSERT_EQ(prov.track(2, objs({1, 2, 3})), 0);
  EXPECT_EQ(prov.ttr(2, TtrMode::kStateAware), 1500 * kNsPerMs);
  // TempoKV-Static: the claim alone, 1500 B at 500 B/s.
  EXPECT_EQ(prov.ttr(2, TtrMode::kStatic), 3 * kNsPerSec);
  EXPECT_EQ(dev.stats().staged_ops, 0u);  // metadata only
  EXPECT_EQ(prov.ledger().bytes(), 0u);
}

TEST_F(ProviderTest, CoveredByInFlightStagingMeansNonZeroTtrAndNoNewReads) {
  prov.track(1, objs({1, 2}));
  ASSERT_EQ(prov.commit(1).status, 0);
  prov.track(2, objs({1, 2}));
  EXPECT_EQ(prov.ttr(2, TtrMode::kStateAware), kNsPerSec);
  events.run_until(400 * kNsPerMs);
  EXPECT_EQ(prov.ttr(2, TtrMode::kStateAware), 600 * kNsPerMs);
  const CommitResult r = prov.commit(2);
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.new_bytes, 0u);  // coalesced: nothing more reserved
  EXPECT_FALSE(r.ready);
  EXPECT_EQ(prov.stats().stage_submitted, 2u);
  events.run_all();
  EXPECT_EQ(ev.ready, (std::vector<ClaimId>{1, 2}));
  EXPECT_EQ(clock.now(), kNsPerSec);
  check_ledger();
}

TEST_F(ProviderTest, TtrFollowsTheQueueAheadOfTheClaim) {
  prov.track(1, objs({1, 2, 3, 4}));
  prov.commit(1);  // 2000 B queued ahead
  prov.track(2, objs({5}));
  // Slots 2: objects 1,2 end at 1 s, 3,4 at 2 s, then 5 alone: 2.5 s.
  EXPECT_EQ(prov.ttr(2, TtrMode::kStateAware), 2500 * kNsPerMs);
  EXPECT_EQ(prov.ttr(2, TtrMode::kStatic), kNsPerSec);  // blind to the queue
  EXPECT_TRUE(prov.ttr_at_least(2, 2500 * kNsPerMs, TtrMode::kStateAware));
  EXPECT_FALSE(prov.ttr_at_least(2, 2501 * kNsPerMs, TtrMode::kStateAware));
  EXPECT_TRUE(prov.ttr_at_least(2, 100 * kNsPerMs, TtrMode::kStateAware));
  EXPECT_FALSE(prov.ttr_at_least(2, 10 * kNsPerSec, TtrMode::kStateAware));
}

TEST_F(ProviderTest, SharedObjectsAreReservedOnceAndStayProtectedAfterOneRelease) {
  prov.track(1, objs({1, 2}));
  prov.track(2, objs({2, 3}));
  EXPECT_EQ(prov.commit(1).new_bytes, 1000u);
  EXPECT_EQ(prov.commit(2).new_bytes, 500u);  // object 2 is already reserved
  EXPECT_EQ(prov.ledger().bytes(), 1500u);
  check_ledger();
  events.run_all();
  EXPECT_EQ(prov.release(1), 500);  // only object 1 is freed
  EXPECT_EQ(prov.ledger().bytes(), 1000u);
  EXPECT_EQ(dev.pin_count(2), 1u);
  EXPECT_EQ(dev.pin_count(1), 0u);
  EXPECT_EQ(dev.residency(1), Residency::kResident);  // released, not evicted
  EXPECT_EQ(prov.release(2), 1000);
  EXPECT_EQ(prov.ledger().bytes(), 0u);
  EXPECT_EQ(dev.stats().pins, 0u);
  check_ledger();
}

TEST_F(ProviderTest, ResidentUnprotectedObjectsNeedProtectionNotReads) {
  prov.track(1, objs({1}));
  prov.commit(1);
  events.run_all();
  prov.release(1);
  prov.track(2, objs({1}));
  EXPECT_EQ(prov.ttr(2, TtrMode::kStateAware), 0);
  EXPECT_EQ(prov.ttr(2, TtrMode::kStatic), 0);
  const CommitResult r = prov.commit(2);
  EXPECT_TRUE(r.ready);
  EXPECT_EQ(r.new_bytes, 500u);
  EXPECT_EQ(prov.stats().stage_submitted, 1u);
  EXPECT_EQ(dev.pin_count(1), 1u);
}

TEST_F(ProviderTest, BudgetRefusesWithoutChangingAnything) {
  prov.track(1, objs({1, 2, 3, 4, 5, 6, 7, 8}));  // 4000 B
  prov.track(2, objs({8, 9, 1, 2}));              // 1000 B new beyond claim 1
  prov.track(3, objs({9, 5}));
  ASSERT_EQ(prov.commit(1).status, 0);
  const CommitResult r = prov.commit(2);
  EXPECT_EQ(r.status, 0);  // exactly fits: 4000 + 500 (object 9) = 4500
  prov.track(4, Manifest{{1, 500}});
  dev.add_object(10, 600);
  prov.track(5, Manifest{{10, 600}});
  const CommitResult full = prov.commit(5);
  EXPECT_EQ(full.status, -ENOSPC);
  EXPECT_EQ(full.needed_bytes, 600u);
  EXPECT_EQ(prov.ledger().bytes(), 4500u);
  EXPECT_FALSE(prov.committed(5));
  EXPECT_EQ(prov.stats().capacity_deferrals, 1u);
  check_ledger();
}

TEST_F(ProviderTest, InvalidObjectsAreRefusedAtCommit) {
  prov.track(1, Manifest{{77, 500}});
  EXPECT_EQ(prov.commit(1).status, -ENOENT);
  prov.track(2, Manifest{{1, 400}});  // the SSD tier holds 500 B under this key
  EXPECT_EQ(prov.commit(2).status, -EINVAL);
  EXPECT_EQ(prov.ledger().bytes(), 0u);
  EXPECT_EQ(prov.track(3, Manifest{}), -EINVAL);
  EXPECT_EQ(prov.track(3, Manifest{{1, 0}}), -EINVAL);
  EXPECT_EQ(prov.track(2, objs({1})), -EEXIST);
  EXPECT_EQ(prov.release(2), -EINVAL);  // never committed
  EXPECT_EQ(prov.release(99), -ENOENT);
  EXPECT_EQ(prov.untrack(99), -ENOENT);
}

TEST_F(ProviderTest, StagingFailureReportsTheClaimAndLeaksNothing) {
  dev.inject_stage_error(2, -EIO);
  prov.track(1, objs({1, 2}));
  prov.commit(1);
  events.run_all();
  EXPECT_EQ(ev.failed, std::vector<ClaimId>{1});
  EXPECT_TRUE(ev.ready.empty());
  EXPECT_EQ(prov.release(1), 1000);
  EXPECT_EQ(prov.ledger().bytes(), 0u);
  EXPECT_EQ(dev.stats().pins, 0u);
  EXPECT_EQ(prov.held_pins(), 0u);
}

TEST_F(ProviderTest, ReleaseDuringStagingHoldsTheReservationUntilTheReadEnds) {
  prov.track(1, objs({1}));
  prov.commit(1);
  events.run_until(100 * kNsPerMs);
  EXPECT_EQ(prov.release(1), 0);  // staging still holds it
  EXPECT_EQ(prov.ledger().bytes(), 500u);
  events.run_all();
  EXPECT_EQ(prov.ledger().bytes(), 0u);
  EXPECT_EQ(dev.pin_count(1), 0u);
  check_ledger();
}

TEST_F(ProviderTest, LearnsTheRateAndIntegratesTheLedger) {
  prov.track(1, objs({1, 2}));
  prov.commit(1);
  events.run_all();  // 1000 B over 1 s of active time at the true rate
  EXPECT_DOUBLE_EQ(prov.effective_rate_bps(), 1000);
  events.run_until(3 * kNsPerSec);
  prov.release(1);
  // 1000 B held from 0 to 3 s.
  EXPECT_DOUBLE_EQ(prov.stats().ledger_byte_seconds, 3000);
}

TEST_F(ProviderTest, BudgetMustBeBelowCapacity) {
  EXPECT_THROW(Provider(dev, clock, ProviderConfig{10'000, 1000.0, 500.0, kNsPerSec, 0}),
               std::invalid_argument);
}

// The same device with a cluster pool beside the SSD: 4 slots, 400 B/s, 50 ms per request,
// reported as it is. Objects 11-14: 200 B in the pool.
class MixedSourceTest : public ::testing::Test {
 protected:
  MixedSourceTest()
      : dev(events, SimDeviceConfig{10'000, 1000.0, 2, 0, 200.0, "lru"},
            SimRemote{{4, 400.0, 50 * kNsPerMs}, {4, 400.0, 50 * kNsPerMs}}),
        prov(dev, clock, ProviderConfig{5000, 1000.0, 500.0, 2 * kNsPerSec, 0}) {
    prov.set_listener(&ev);
    for (ObjectKey k = 1; k <= 4; ++k) dev.add_object(k, 500);
    for (ObjectKey k = 11; k <= 14; ++k) dev.add_object(k, 200, Source::kRemote);
  }
  Manifest objs(std::initializer_list<ObjectKey> keys) {
    Manifest m;
    for (ObjectKey k : keys) m.push_back({k, static_cast<uint64_t>(dev.object_size(k))});
    return m;
  }
  VirtualClock clock;
  EventQueue events{clock};
  SimDevice dev;
  Book prov;
  Events ev;
};

TEST_F(MixedSourceTest, AMixedClaimIsReadyWhenItsSlowestSourceIs) {
  ASSERT_EQ(prov.track(1, objs({1, 11, 2, 12})), 0);
  // SSD: objects 1 and 2, 500 B each, share 1000 B/s in two slots: both land at 1 s.
  // Pool: 11 and 12 wait 50 ms, then 200 B each share 400 B/s: 1.05 s. The claim: 1.05 s.
  EXPECT_EQ(prov.ttr(1, TtrMode::kStateAware), 1050 * kNsPerMs);
  EXPECT_EQ(prov.reference_ttr(1), 1050 * kNsPerMs);
  ASSERT_EQ(prov.track(2, objs({1, 2})), 0);
  EXPECT_EQ(prov.ttr(2, TtrMode::kStateAware), kNsPerSec);
  ASSERT_EQ(prov.track(3, objs({11, 12, 13})), 0);
  // Three pool reads in four slots share 400 B/s: 600 B by 1.5 s, after 50 ms.
  EXPECT_EQ(prov.ttr(3, TtrMode::kStateAware), 1550 * kNsPerMs);
  EXPECT_TRUE(prov.ttr_at_least(3, 1550 * kNsPerMs, TtrMode::kStateAware));
  EXPECT_FALSE(prov.ttr_at_least(3, 1551 * kNsPerMs, TtrMode::kStateAware));
  // The SSD queue does not delay the pool: a local backlog leaves claim 3 where it was.
  ASSERT_EQ(prov.track(4, objs({3, 4})), 0);
  ASSERT_EQ(prov.commit(4).status, 0);
  EXPECT_EQ(prov.ttr(1, TtrMode::kStateAware), 2 * kNsPerSec);  // its SSD reads now wait
  EXPECT_EQ(prov.ttr(3, TtrMode::kStateAware), 1550 * kNsPerMs);
  // Committed, the mixed claim lands when the projection said (the backlog is done first).
  events.run_all();
  ev.ready.clear();
  ASSERT_EQ(prov.ttr(1, TtrMode::kStateAware), 1050 * kNsPerMs);
  const TimeNs at = clock.now();
  ASSERT_EQ(prov.commit(1).status, 0);
  events.run_all();
  EXPECT_EQ(ev.ready, (std::vector<ClaimId>{1}));
  EXPECT_EQ(clock.now() - at, 1050 * kNsPerMs);
  EXPECT_EQ(prov.stats().remote_outstanding_ops, 0u);
}

TEST_F(MixedSourceTest, CoveredPoolReadsKeepTheirProgressWithoutANewLatency) {
  ASSERT_EQ(prov.track(1, objs({11})), 0);
  ASSERT_EQ(prov.commit(1).status, 0);
  ASSERT_EQ(prov.track(2, objs({11})), 0);
  // Covered by the read in flight: 200 B at 400 B/s, no new request.
  EXPECT_EQ(prov.ttr(2, TtrMode::kStateAware), 500 * kNsPerMs);
  events.run_until(300 * kNsPerMs);
  EXPECT_EQ(prov.ttr(2, TtrMode::kStateAware), 200 * kNsPerMs);
  EXPECT_EQ(prov.reference_ttr(2), 200 * kNsPerMs);
}

TEST(MixedSource, ThePoolsRateAndLatencyAreLearnedFromItsOwnCompletions) {
  VirtualClock clock;
  EventQueue events{clock};
  // The pool does 400 B/s after 50 ms; it reports 200 B/s after 10 ms.
  SimDevice dev(events, SimDeviceConfig{100'000, 1000.0, 2, 0, 200.0, "lru"},
                SimRemote{{4, 400.0, 50 * kNsPerMs}, {4, 200.0, 10 * kNsPerMs}});
  Book prov(dev, clock, ProviderConfig{50'000, 1000.0, 500.0, 2 * kNsPerSec, 0});
  Events ev;
  prov.set_listener(&ev);
  EXPECT_DOUBLE_EQ(prov.remote_estimator().rate_bps(), 200);
  EXPECT_EQ(prov.remote_estimator().latency_ns(), 10 * kNsPerMs);
  for (ObjectKey k = 1; k <= 40; ++k) {
    const uint64_t bytes = k % 2 ? 200 : 800;
    dev.add_object(k, bytes, Source::kRemote);
    ASSERT_EQ(prov.track(k, Manifest{{k, bytes}}), 0);
    ASSERT_EQ(prov.commit(k).status, 0);
    events.run_all();  // one at a time
  }
  EXPECT_NEAR(prov.remote_estimator().rate_bps(), 400, 0.5);
  EXPECT_NEAR(static_cast<double>(prov.remote_estimator().latency_ns()), 50e6, 0.05e6);
  EXPECT_DOUBLE_EQ(prov.stats().remote_rate_bps, prov.remote_estimator().rate_bps());
  // The SSD's rate learned nothing from the pool.
  EXPECT_DOUBLE_EQ(prov.effective_rate_bps(), 1000);
}

TEST_F(ProviderTest, ALayerWiseClaimLeadsWithTheGroupThatIsLatestForItsNeed) {
  prov.track(1, objs({1, 2, 3, 4}));
  // Two slots at 1000 B/s: objects 1 and 2 land at 1 s, 3 and 4 at 2 s.
  EXPECT_EQ(prov.ttr(1, TtrMode::kStateAware), 2 * kNsPerSec);
  // Four groups (one object each) needed 400 ms apart: max(1 - 0, 1 - 0.4, 2 - 0.8,
  // 2 - 1.2) = 1.2 s.
  ASSERT_EQ(prov.set_layers(1, 4, 400 * kNsPerMs), 0);
  EXPECT_EQ(prov.lead_ttr(1, TtrMode::kStateAware), 1200 * kNsPerMs);
  EXPECT_EQ(prov.ttr(1, TtrMode::kStateAware), 2 * kNsPerSec);  // readiness is unchanged
  EXPECT_TRUE(prov.ttr_at_least(1, 1200 * kNsPerMs, TtrMode::kStateAware));
  EXPECT_FALSE(prov.ttr_at_least(1, 1201 * kNsPerMs, TtrMode::kStateAware));
  // Two groups (1, 2 | 3, 4) 1.5 s apart: max(1, 2 - 1.5) = 1 s.
  ASSERT_EQ(prov.set_layers(1, 2, 1500 * kNsPerMs), 0);
  EXPECT_EQ(prov.lead_ttr(1, TtrMode::kStateAware), kNsPerSec);
  // One group: the claim's TTR; the static policy ignores layers.
  ASSERT_EQ(prov.set_layers(1, 1, kNsPerSec), 0);
  EXPECT_EQ(prov.lead_ttr(1, TtrMode::kStateAware), 2 * kNsPerSec);
  EXPECT_EQ(prov.lead_ttr(1, TtrMode::kStatic), prov.ttr(1, TtrMode::kStatic));
  // After time passes with a backlog committed, the groups move with the queue.
  prov.track(2, objs({5, 6}));
  ASSERT_EQ(prov.commit(2).status, 0);  // 5 and 6 land at 1 s
  ASSERT_EQ(prov.set_layers(1, 4, 400 * kNsPerMs), 0);
  events.run_until(500 * kNsPerMs);
  // From 0.5 s: 5, 6 end at 1 s; 1, 2 at 2 s; 3, 4 at 3 s (from now: 0.5, 1.5, 2.5):
  // max(1.5, 1.5 - 0.4, 2.5 - 0.8, 2.5 - 1.2) = 1.7 s.
  EXPECT_EQ(prov.lead_ttr(1, TtrMode::kStateAware), 1700 * kNsPerMs);
}

TEST_F(ProviderTest, LayerGroupsAreChecked) {
  prov.track(1, objs({1, 2}));
  EXPECT_EQ(prov.set_layers(9, 2, 0), -ENOENT);
  EXPECT_EQ(prov.set_layers(1, 0, 0), -EINVAL);
  EXPECT_EQ(prov.set_layers(1, 3, 0), -EINVAL);  // more groups than objects
  EXPECT_EQ(prov.set_layers(1, 2, -1), -EINVAL);
  EXPECT_EQ(prov.set_layers(1, 2, TimeNs{1} << 62), -EOVERFLOW);
  EXPECT_EQ(prov.lead_ttr(1, TtrMode::kStateAware), kNsPerSec);  // unchanged
  ASSERT_EQ(prov.commit(1).status, 0);
  EXPECT_EQ(prov.set_layers(1, 2, 0), -EBUSY);
}

}  // namespace
}  // namespace tempo
