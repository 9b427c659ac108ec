#include "device/sim_device.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "core/event_queue.h"

namespace tempo {
namespace {

struct Recorder : DeviceObserver {
  std::vector<StageCompletion> done;
  std::vector<ObjectKey> resident, evicted;
  void on_stage_complete(const StageCompletion& c) override { done.push_back(c); }
  void on_resident(ObjectKey k) override { resident.push_back(k); }
  void on_evicted(ObjectKey k) override { evicted.push_back(k); }
};

class SimDeviceTest : public ::testing::Test {
 protected:
  // 1000 B fast tier, 1000 B/s aggregate, 2 slots, no latency, 200 B/s demand reads.
  SimDeviceConfig cfg() { return SimDeviceConfig{1000, 1000.0, 2, 0, 200.0, "lru"}; }
  void make(SimDeviceConfig c) {
    dev = std::make_unique<SimDevice>(events, c);
    dev->set_observer(&rec);
  }
  VirtualClock clock;
  EventQueue events{clock};
  Recorder rec;
  std::unique_ptr<SimDevice> dev;
};

TEST_F(SimDeviceTest, OneStageTakesBytesOverRate) {
  make(cfg());
  ASSERT_EQ(dev->add_object(1, 500), 0);
  ASSERT_EQ(dev->stage(1), 0);
  EXPECT_EQ(dev->residency(1), Residency::kStaging);
  EXPECT_EQ(dev->pin_count(1), 1u);
  events.run_all();
  ASSERT_EQ(rec.done.size(), 1u);
  EXPECT_EQ(rec.done[0].completed, 500 * kNsPerMs);
  EXPECT_EQ(rec.done[0].status, 0);
  EXPECT_EQ(dev->residency(1), Residency::kResident);
  EXPECT_EQ(dev->pin_count(1), 1u);
  EXPECT_EQ(dev->stats().staged_bytes, 500u);
}

TEST_F(SimDeviceTest, ConcurrentStagesShareTheAggregateRate) {
  make(cfg());
  dev->add_object(1, 500);
  dev->add_object(2, 1000 - 500);
  dev->add_object(3, 250);
  // Capacity 1000: stage 1 (500) and 3 (250) together; each gets 500 B/s.
  ASSERT_EQ(dev->stage(1), 0);
  ASSERT_EQ(dev->stage(3), 0);
  events.run_all();
  ASSERT_EQ(rec.done.size(), 2u);
  EXPECT_EQ(rec.done[0].key, 3u);
  EXPECT_EQ(rec.done[0].completed, 500 * kNsPerMs);  // 250 B at 500 B/s
  EXPECT_EQ(rec.done[1].key, 1u);
  EXPECT_EQ(rec.done[1].completed, 750 * kNsPerMs);  // 250 B left, then alone at 1000 B/s
}

TEST_F(SimDeviceTest, SlotsQueueOperationsFifoAndLatencyIsPaidPerOperation) {
  auto c = cfg();
  c.staging_slots = 1;
  c.op_latency_ns = 100 * kNsPerMs;
  make(c);
  dev->add_object(1, 500);
  dev->add_object(2, 400);
  dev->stage(1);
  dev->stage(2);
  events.run_all();
  ASSERT_EQ(rec.done.size(), 2u);
  EXPECT_EQ(rec.done[0].completed, 600 * kNsPerMs);
  EXPECT_EQ(rec.done[1].completed, 1100 * kNsPerMs);
  EXPECT_EQ(rec.done[1].submitted, 0);
}

TEST_F(SimDeviceTest, DemandReadsAreCappedAndContendWithStaging) {
  make(cfg());
  dev->add_object(1, 800);
  dev->add_object(2, 100);
  dev->stage(1);
  TimeNs demand_done = -1;
  const ObjectKey keys[] = {2};
  ASSERT_EQ(dev->demand_read(keys,
                             [&](int st) {
                               EXPECT_EQ(st, 0);
                               demand_done = clock.now();
                             }),
            0);
  events.run_all();
  // Demand gets its 200 B/s cap and staging the other 800 B/s: the 100 B demand read ends
  // at 0.5 s; staging has moved 400 B by then and moves the last 400 B at 1000 B/s.
  EXPECT_EQ(demand_done, 500 * kNsPerMs);
  ASSERT_EQ(rec.done.size(), 1u);
  EXPECT_EQ(rec.done[0].completed, 900 * kNsPerMs);
  // The demand read cached object 2 unpinned.
  EXPECT_EQ(dev->residency(2), Residency::kResident);
  EXPECT_EQ(dev->pin_count(2), 0u);
  EXPECT_EQ(rec.resident, std::vector<ObjectKey>{2});
  EXPECT_EQ(dev->stats().demand_bytes, 100u);
}

TEST_F(SimDeviceTest, LruEvictsOnlyUnpinnedObjects) {
  make(cfg());
  for (ObjectKey k = 1; k <= 3; ++k) dev->add_object(k, 400);
  dev->stage(1);
  dev->stage(2);
  events.run_all();
  ASSERT_EQ(dev->stage(3), -ENOSPC);  // 1 and 2 pinned: nothing evictable
  ASSERT_EQ(dev->unpin(1), 0);
  ASSERT_EQ(dev->unpin(2), 0);
  const ObjectKey hit[] = {1};
  dev->demand_read(hit, [](int) {});  // touches 1: 2 is now least recent
  events.run_all();
  ASSERT_EQ(dev->stage(3), 0);
  EXPECT_EQ(rec.evicted, std::vector<ObjectKey>{2});
  EXPECT_EQ(dev->residency(1), Residency::kResident);
  EXPECT_EQ(dev->stats().evictions, 1u);
  EXPECT_EQ(dev->recount_used_bytes(), 800u);
}

TEST_F(SimDeviceTest, InjectedStageErrorLeavesNoPinAndFreesSpace) {
  make(cfg());
  dev->add_object(1, 500);
  dev->inject_stage_error(1, -EIO);
  dev->stage(1);
  events.run_all();
  ASSERT_EQ(rec.done.size(), 1u);
  EXPECT_EQ(rec.done[0].status, -EIO);
  EXPECT_EQ(dev->residency(1), Residency::kAbsent);
  EXPECT_EQ(dev->pin_count(1), 0u);
  EXPECT_EQ(dev->stats().pins, 0u);
  EXPECT_EQ(dev->stats().resident_bytes, 0u);
  EXPECT_EQ(dev->stage(1), 0);  // the error was one-shot
}

TEST_F(SimDeviceTest, BadInputGetsErrnoAndChangesNothing) {
  make(cfg());
  EXPECT_EQ(dev->add_object(1, 0), -EINVAL);
  ASSERT_EQ(dev->add_object(1, 300), 0);
  EXPECT_EQ(dev->add_object(1, 300), -EEXIST);
  dev->add_object(9, 5000);
  EXPECT_EQ(dev->stage(9), -ENOSPC);  // larger than the fast tier
  EXPECT_EQ(dev->stage(42), -ENOENT);
  EXPECT_EQ(dev->pin(42), -ENOENT);
  EXPECT_EQ(dev->unpin(42), -ENOENT);
  EXPECT_EQ(dev->pin(1), -EAGAIN);  // not resident
  EXPECT_EQ(dev->unpin(1), -EINVAL);
  const ObjectKey bad[] = {1, 42};
  EXPECT_EQ(dev->demand_read(bad, [](int) {}), -ENOENT);
  dev->stage(1);
  EXPECT_EQ(dev->stage(1), -EBUSY);
  events.run_all();
  EXPECT_EQ(dev->stage(1), -EBUSY);
  EXPECT_EQ(dev->stats().demand_reads, 0u);
  EXPECT_EQ(dev->stats().pins, 1u);
  EXPECT_EQ(dev->unpin(1), 0);
  EXPECT_EQ(dev->unpin(1), -EINVAL);
  EXPECT_EQ(dev->stats().pins, 0u);
}

TEST_F(SimDeviceTest, InvalidConfigurationIsEinvalWithTheReason) {
  std::string why;
  EXPECT_EQ(SimDevice::validate(cfg(), std::nullopt, &why), 0);
  auto c = cfg();
  c.staging_slots = 0;
  EXPECT_EQ(SimDevice::validate(c, std::nullopt, &why), -EINVAL);
  EXPECT_EQ(why, "sim device: staging_slots is 0");
  c = cfg();
  c.eviction = "min";  // the study's, not the fast tier's
  EXPECT_EQ(SimDevice::validate(c, std::nullopt, &why), -EINVAL);
  EXPECT_EQ(why, "sim device: eviction policy 'min' is not one a fast tier runs");
}

// A configuration no caller validated is a defect: the device says why and aborts.
TEST_F(SimDeviceTest, AnUnvalidatedConfigurationAborts) {
  auto c = cfg();
  c.staging_rate_bps = 0;
  EXPECT_DEATH(SimDevice(events, c), "sim device: staging_rate <= 0");
}

TEST_F(SimDeviceTest, TheRemoteSourceHasItsOwnSlotsLatencyAndRate) {
  // The pool: 2 slots, 400 B/s, 50 ms before a request's bytes flow.
  dev = std::make_unique<SimDevice>(events, cfg(),
                                    SimRemote{{2, 400.0, 50 * kNsPerMs}, {2, 400.0, 0}});
  dev->set_observer(&rec);
  ASSERT_EQ(dev->add_object(1, 500), 0);
  ASSERT_EQ(dev->add_object(11, 200, Source::kRemote), 0);
  ASSERT_EQ(dev->add_object(12, 200, Source::kRemote), 0);
  EXPECT_EQ(dev->stage_source(1), Source::kLocal);
  EXPECT_EQ(dev->stage_source(11), Source::kRemote);
  EXPECT_EQ(dev->remote_info().latency_ns, 0);  // what it reports, not what it does
  ASSERT_EQ(dev->stage(1), 0);
  ASSERT_EQ(dev->stage(11), 0);
  ASSERT_EQ(dev->stage(12), 0);
  events.run_all();
  ASSERT_EQ(rec.done.size(), 3u);
  // The SSD read has the local 1000 B/s alone: 0.5 s. The pool reads wait 50 ms, then
  // share 400 B/s: 200 B each at 200 B/s, 1 s.
  EXPECT_EQ(rec.done[0].key, 1u);
  EXPECT_EQ(rec.done[0].completed, 500 * kNsPerMs);
  EXPECT_EQ(rec.done[1].completed, 1050 * kNsPerMs);
  EXPECT_EQ(rec.done[2].completed, 1050 * kNsPerMs);
}

TEST_F(SimDeviceTest, RemoteObjectsNeedARemoteSource) {
  make(cfg());
  EXPECT_EQ(dev->add_object(11, 200, Source::kRemote), -EINVAL);
  for (const SimRemote& bad :
       {SimRemote{{0, 400.0, 0}, {1, 400.0, 0}}, SimRemote{{1, 400.0, 0}, {1, 0.0, 0}},
        SimRemote{{1, 400.0, -1}, {1, 400.0, 0}}}) {
    std::string why;
    EXPECT_EQ(SimDevice::validate(cfg(), bad, &why), -EINVAL);
    EXPECT_EQ(why, "sim device: remote slots 0, rate <= 0 or latency < 0");
  }
}

// A shared pool whose objects appear while the devices run.
struct Catalogue final : RemoteCatalogue {
  std::unordered_map<ObjectKey, uint64_t> held;
  int64_t size(ObjectKey key) const override {
    auto it = held.find(key);
    return it == held.end() ? -ENOENT : static_cast<int64_t>(it->second);
  }
};

TEST_F(SimDeviceTest, CatalogueObjectsAppearAndAreKeptLocallyOnceRead) {
  Catalogue pool;
  // The pool: 2 slots, 400 B/s, 50 ms; a copy of what is read from it is kept.
  dev = std::make_unique<SimDevice>(
      events, cfg(), SimRemote{{2, 400.0, 50 * kNsPerMs}, {2, 400.0, 50 * kNsPerMs}, &pool, true});
  dev->set_observer(&rec);
  EXPECT_EQ(dev->object_size(5), -ENOENT);
  EXPECT_EQ(dev->stage(5), -ENOENT);
  pool.held[5] = 200;  // another host's write-through ended
  EXPECT_EQ(dev->object_size(5), 200);
  EXPECT_EQ(dev->stage_source(5), Source::kRemote);
  EXPECT_FALSE(dev->holds_locally(5));
  EXPECT_EQ(dev->pin(5), -EAGAIN);
  ASSERT_EQ(dev->stage(5), 0);
  events.run_all();
  // 50 ms, then 200 B at 400 B/s.
  ASSERT_EQ(rec.done.size(), 1u);
  EXPECT_EQ(rec.done[0].completed, 550 * kNsPerMs);
  EXPECT_EQ(rec.done[0].status, 0);
  EXPECT_EQ(dev->remote_read_bytes(), 200u);
  EXPECT_TRUE(dev->holds_locally(5));
  EXPECT_EQ(dev->stage_source(5), Source::kLocal);
  // Evicted, it is staged again from the SSD tier: 200 B at 1000 B/s, no latency.
  ASSERT_EQ(dev->unpin(5), 0);
  dev->drop_unpinned();
  ASSERT_EQ(dev->stage(5), 0);
  events.run_all();
  ASSERT_EQ(rec.done.size(), 2u);
  EXPECT_EQ(rec.done[1].completed - rec.done[1].submitted, 200 * kNsPerMs);
  EXPECT_EQ(dev->remote_read_bytes(), 200u);
  EXPECT_EQ(dev->recount_used_bytes(), 200u);
}

TEST_F(SimDeviceTest, WithoutKeepLocalEveryReadIsRemote) {
  Catalogue pool;
  pool.held[5] = 200;
  dev = std::make_unique<SimDevice>(
      events, cfg(), SimRemote{{2, 400.0, 50 * kNsPerMs}, {2, 400.0, 50 * kNsPerMs}, &pool});
  dev->set_observer(&rec);
  ASSERT_EQ(dev->stage(5), 0);
  events.run_all();
  ASSERT_EQ(dev->unpin(5), 0);
  dev->drop_unpinned();
  EXPECT_FALSE(dev->holds_locally(5));
  ASSERT_EQ(dev->stage(5), 0);
  events.run_all();
  ASSERT_EQ(rec.done.size(), 2u);
  EXPECT_EQ(rec.done[1].completed - rec.done[1].submitted, 550 * kNsPerMs);
  EXPECT_EQ(dev->remote_read_bytes(), 400u);
}

TEST_F(SimDeviceTest, ADemandReadOfBothSourcesEndsWithTheSlower) {
  Catalogue pool;
  pool.held[5] = 200;
  dev = std::make_unique<SimDevice>(
      events, cfg(), SimRemote{{2, 400.0, 50 * kNsPerMs}, {2, 400.0, 50 * kNsPerMs}, &pool, true});
  dev->set_observer(&rec);
  ASSERT_EQ(dev->add_object(1, 100), 0);
  const ObjectKey keys[] = {1, 5};
  TimeNs done = -1;
  int calls = 0;
  ASSERT_EQ(dev->demand_read(keys,
                             [&](int st) {
                               EXPECT_EQ(st, 0);
                               ++calls;
                               done = events.now();
                             }),
            0);
  events.run_all();
  // Both parts capped at 200 B/s: the SSD's 100 B in 0.5 s; the pool's 50 ms, then 200 B
  // in 1 s.
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(done, 1050 * kNsPerMs);
  EXPECT_EQ(dev->residency(5), Residency::kResident);
  EXPECT_TRUE(dev->holds_locally(5));
  EXPECT_EQ(dev->stats().demand_bytes, 300u);
  EXPECT_EQ(dev->remote_read_bytes(), 200u);
  const ObjectKey missing[] = {1, 9};
  EXPECT_EQ(dev->demand_read(missing, [](int) {}), -ENOENT);
}

TEST_F(SimDeviceTest, AddingAPoolObjectLocallyKeepsACopy) {
  Catalogue pool;
  pool.held[5] = 200;
  dev = std::make_unique<SimDevice>(events, cfg(), SimRemote{{2, 400.0, 0}, {2, 400.0, 0}, &pool});
  EXPECT_EQ(dev->add_object(5, 300), -EEXIST);  // not the pool's size
  EXPECT_FALSE(dev->holds_locally(5));
  EXPECT_EQ(dev->add_object(5, 200), 0);
  EXPECT_TRUE(dev->holds_locally(5));
  EXPECT_EQ(dev->stage_source(5), Source::kLocal);
  EXPECT_EQ(dev->add_object(5, 200), -EEXIST);
  EXPECT_EQ(dev->add_object(5, 200, Source::kRemote), -EEXIST);
}

}  // namespace
}  // namespace tempo
