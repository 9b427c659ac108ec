// Several threads stage, pin, unpin, retrieve, demand-read and admit on one device while
// a driver thread delivers completions; the accounting must balance afterwards. Runs under
// ThreadSanitizer (label "concurrent").
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>

#include "device_fixture.h"
#include "store/checksum.h"

namespace tempo {
namespace {

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;
constexpr ObjectKey kObjects = 200;

class UringStressTest : public test::DeviceFixture {};

TEST_F(UringStressTest, ConcurrentClientsKeepTheAccountingExact) {
  open_store();
  if (IsSkipped()) return;
  std::mt19937_64 rng(11);
  std::unordered_map<ObjectKey, uint64_t> sums;
  for (ObjectKey k = 0; k < kObjects; ++k) {
    put(k, 16 * kKiB + rng() % (256 * kKiB));
    sums[k] = checksum64(test::object_bytes(k, sizes_[k]).data(), sizes_[k]);
  }
  open_device(options(16 * kMiB));

  std::atomic<bool> stop{false};
  std::thread driver([&] {
    while (!stop.load()) dev_->wait(2 * kNsPerMs);
  });
  std::atomic<uint64_t> stages_ok{0}, demand_calls{0}, demand_done{0}, bad_bytes{0}, retrievals{0},
      admitted{0}, bad_admits{0};
  auto worker = [&](uint64_t seed) {
    std::mt19937_64 r(seed);
    std::vector<ObjectKey> held;  // one entry per pin this thread holds
    for (int i = 0; i < 1500; ++i) {
      const ObjectKey k = r() % kObjects;
      switch (r() % 6) {
        case 0:
          if (dev_->stage(k) == 0) {
            ++stages_ok;
            held.push_back(k);
          }
          break;
        case 1:
          if (dev_->pin(k) == 0) held.push_back(k);
          break;
        case 2:
          if (!held.empty()) {
            const size_t j = r() % held.size();
            ASSERT_EQ(dev_->unpin(held[j]), 0);
            held[j] = held.back();
            held.pop_back();
          }
          break;
        case 3:
          if (!held.empty()) {
            // Retrieval of an object this thread holds a pin on, once it is resident.
            const ObjectKey h = held[r() % held.size()];
            std::vector<std::span<const std::byte>> ext;
            if (dev_->resident_extents(h, &ext) == 0) {
              Checksum64Stream sum;
              for (auto e : ext) sum.update(e.data(), e.size());
              if (sum.digest() != sums[h]) ++bad_bytes;
              ++retrievals;
            }
          }
          break;
        case 4: {
          const std::vector<ObjectKey> keys{k, (k + 1) % kObjects};
          if (dev_->demand_read(keys, [&](int s) {
                if (s == 0) ++demand_done;
              }) == 0)
            ++demand_calls;
          break;
        }
        case 5: {
          // An ordinary read done by the caller, its bytes handed to the device.
          const int a = dev_->admit(k, test::object_bytes(k, sizes_[k]));
          if (a == 0)
            ++admitted;
          else if (a != -EEXIST && a != -ENOSPC)
            ++bad_admits;
          break;
        }
      }
    }
    for (ObjectKey h : held) ASSERT_EQ(dev_->unpin(h), 0);
  };
  std::vector<std::thread> workers;
  for (uint64_t t = 0; t < 4; ++t) workers.emplace_back(worker, 100 + t);
  for (auto& w : workers) w.join();
  const TimeNs deadline = clock_.now() + 30 * kNsPerSec;
  while ((!dev_->idle() || demand_done.load() < demand_calls.load()) && clock_.now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  stop = true;
  driver.join();
  dev_->process_completions();

  EXPECT_EQ(bad_bytes.load(), 0u);
  EXPECT_EQ(bad_admits.load(), 0u);
  EXPECT_GT(admitted.load(), 0u);
  EXPECT_GT(retrievals.load(), 0u);
  EXPECT_EQ(demand_done.load(), demand_calls.load());
  const DeviceStats s = dev_->stats();
  EXPECT_EQ(s.pins, 0u);
  EXPECT_EQ(s.pinned_bytes, 0u);
  EXPECT_EQ(s.staged_ops, stages_ok.load());
  EXPECT_EQ(s.stage_errors, 0u);
  EXPECT_GT(s.evictions, 0u);
  {
    std::lock_guard lock(obs_.mu_);
    EXPECT_EQ(obs_.completions.size(), stages_ok.load());
  }
  uint64_t resident = 0;
  for (ObjectKey k = 0; k < kObjects; ++k) {
    EXPECT_EQ(dev_->pin_count(k), 0u);
    if (dev_->residency(k) == Residency::kResident) resident += sizes_[k];
  }
  EXPECT_EQ(s.resident_bytes, resident);
  // With every pin returned, the whole fast tier can be reclaimed: nothing leaked.
  dev_->drop_unpinned();
  EXPECT_EQ(dev_->stats().resident_bytes, 0u);
  EXPECT_EQ(dev_->fast_tier_stats().space.used_bytes, 0u);
  EXPECT_EQ(dev_->fast_tier_stats().objects, 0u);
  // Every store lease was returned: deleting the objects frees all their space.
  for (ObjectKey k = 0; k < kObjects; ++k) ASSERT_EQ(store_->remove(k), 0);
  EXPECT_EQ(store_->space().used_bytes, 0u);
}

}  // namespace
}  // namespace tempo
