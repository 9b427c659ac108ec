#include "provider/provider.h"

#include <gtest/gtest.h>

#include <cerrno>

#include "core/event_queue.h"
#include "device/sim_device.h"

namespace tempo {
namespace {

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
  Provider prov;
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

}  // namespace
}  // namespace tempo
