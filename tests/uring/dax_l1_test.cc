// The dax-l1 baseline (study/dax_l1.h) over a real uring device and object store.
#include "baselines/dax_l1.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>

#include "device_fixture.h"

namespace tempo {
namespace {

using test::object_bytes;

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kFastTier = 4 << 20;

using DaxL1Test = test::DeviceFixture;

TEST_F(DaxL1Test, FetchesOnlyTheGranulesAReadTouchesThenHits) {
  open_store();  // skips without io_uring
  if (IsSkipped()) return;
  put(7, 64 * kKiB);
  open_device(options(kFastTier));
  DaxL1Reader dax(*store_, *dev_);
  const auto want = object_bytes(7, 64 * kKiB);
  std::vector<std::byte> out(10);
  ASSERT_EQ(dax.read(7, 5000, out), 10);
  EXPECT_TRUE(std::equal(out.begin(), out.end(), want.begin() + 5000));
  EXPECT_EQ(dax.stats().granule_fetches, 1u);
  EXPECT_EQ(dev_->residency(7), Residency::kAbsent);
  out.resize(8192);
  ASSERT_EQ(dax.read(7, 4096, out), 8192);  // granule 1 again, granule 2 new
  EXPECT_TRUE(std::equal(out.begin(), out.end(), want.begin() + 4096));
  EXPECT_EQ(dax.stats().granule_fetches, 2u);
  std::vector<std::byte> all(64 * kKiB);
  ASSERT_EQ(dax.read(7, 0, all), static_cast<int64_t>(64 * kKiB));
  EXPECT_EQ(all, want);
  EXPECT_EQ(dax.stats().granule_fetches, 16u);
  EXPECT_EQ(dax.stats().bytes_fetched, 64 * kKiB);
  // Every granule fetched: the device holds the object, unpinned, and counts its bytes.
  EXPECT_EQ(dev_->residency(7), Residency::kResident);
  EXPECT_EQ(dev_->pin_count(7), 0u);
  EXPECT_EQ(dev_->stats().demand_bytes, 64 * kKiB);
  std::vector<std::byte> tail(6000);
  ASSERT_EQ(dax.read(7, 58 * kKiB, tail), 6000);
  EXPECT_TRUE(std::equal(tail.begin(), tail.end(), want.begin() + 58 * kKiB));
  EXPECT_EQ(dax.stats().granule_fetches, 16u);  // resident: no more fetches
  EXPECT_EQ(dax.stats().hits, 1u);
  dev_->process_completions();
  EXPECT_EQ(obs_.resident, std::vector<ObjectKey>{7});
  EXPECT_EQ(dax.read(7, 60 * kKiB, all), -EINVAL);
  EXPECT_EQ(dax.read(8, 0, out), -ENOENT);
}

TEST_F(DaxL1Test, AnObjectBeingStagedIsNotReadAndAnEvictedOneIsFetchedAgain) {
  open_store();
  if (IsSkipped()) return;
  put(1, 16 * kKiB);
  open_device(options(kFastTier));
  DaxL1Reader dax(*store_, *dev_, 8192);
  std::vector<std::byte> out(16 * kKiB);
  ASSERT_EQ(dev_->stage(1), 0);
  EXPECT_EQ(dax.read(1, 0, out), -EAGAIN);
  ASSERT_TRUE(drive_until([&] { return dev_->residency(1) == Residency::kResident; }));
  ASSERT_EQ(dev_->unpin(1), 0);
  ASSERT_EQ(dax.read(1, 0, out), static_cast<int64_t>(16 * kKiB));
  EXPECT_EQ(out, object_bytes(1, 16 * kKiB));
  EXPECT_EQ(dax.stats().granule_fetches, 0u);
  dev_->drop_unpinned();
  ASSERT_EQ(dax.read(1, 0, out), static_cast<int64_t>(16 * kKiB));
  EXPECT_EQ(out, object_bytes(1, 16 * kKiB));
  EXPECT_EQ(dax.stats().granule_fetches, 2u);  // 8 KiB granules
  EXPECT_EQ(dev_->residency(1), Residency::kResident);
}

}  // namespace
}  // namespace tempo
