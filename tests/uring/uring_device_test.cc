#include "uring/uring_device.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <numeric>
#include <random>

#include "device_fixture.h"

namespace tempo {
namespace {

using test::object_bytes;

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;

// A fault hook that completes every read longer than 8 KiB only halfway (4 KiB aligned):
// the device resubmits the rest, which then completes after later reads.
int halve_long_reads(const IoRequest& r, int res) {
  return res == static_cast<int>(r.len) && r.len > 8192 ? static_cast<int>(r.len / 2 / 4096 * 4096)
                                                        : res;
}

class UringDeviceTest : public test::DeviceFixture {
 protected:
  void SetUp() override { open_store(); }  // skips without io_uring

  std::vector<StageCompletion> completions() {
    std::lock_guard lock(obs_.mu_);
    return obs_.completions;
  }
  const StageCompletion* completion_of(ObjectKey key) {
    for (const auto& c : obs_.completions)
      if (c.key == key) return &c;
    return nullptr;
  }
};

TEST_F(UringDeviceTest, ThousandsOfStagedObjectsEqualWhatWasPut) {
  std::mt19937_64 rng(3);
  uint64_t total = 0;
  for (ObjectKey k = 1; k <= 2000; ++k) {
    put(k, 1 + rng() % (256 * kKiB));
    total += sizes_[k];
  }
  open_device(options(1024 * kMiB));
  for (ObjectKey k = 1; k <= 2000; ++k) ASSERT_EQ(dev_->stage(k), 0) << k;
  ASSERT_TRUE(drive_until([&] { return obs_.completion_count() == 2000; }));
  EXPECT_TRUE(dev_->idle());
  for (const auto& c : completions()) {
    ASSERT_EQ(c.status, 0) << c.key;
    EXPECT_EQ(c.bytes, sizes_[c.key]);
    EXPECT_LE(c.submitted, c.completed);
  }
  for (ObjectKey k = 1; k <= 2000; ++k) {
    ASSERT_EQ(dev_->residency(k), Residency::kResident);
    ASSERT_EQ(read_back(k), object_bytes(k, sizes_[k])) << k;
  }
  DeviceStats s = dev_->stats();
  EXPECT_EQ(s.staged_ops, 2000u);
  EXPECT_EQ(s.staged_bytes, total);
  EXPECT_EQ(s.resident_bytes, total);
  EXPECT_EQ(s.pins, 2000u);
  EXPECT_EQ(s.pinned_bytes, total);
  EXPECT_EQ(s.stage_errors, 0u);
  EXPECT_EQ(dev_->uring_stats().checksum_errors, 0u);
  for (ObjectKey k = 1; k <= 2000; ++k) ASSERT_EQ(dev_->unpin(k), 0);
  s = dev_->stats();
  EXPECT_EQ(s.pins, 0u);
  EXPECT_EQ(s.pinned_bytes, 0u);
}

TEST_F(UringDeviceTest, StagePinUnpinFollowTheDeviceContract) {
  put(1, 100 * kKiB);
  open_device(options(8 * kMiB));
  EXPECT_EQ(dev_->info().kind, "uring");
  EXPECT_EQ(dev_->info().capacity_bytes, 8 * kMiB);
  EXPECT_EQ(dev_->info().staging_slots, 16u);
  EXPECT_EQ(dev_->object_size(1), static_cast<int64_t>(100 * kKiB));
  EXPECT_EQ(dev_->object_size(2), -ENOENT);
  EXPECT_EQ(dev_->stage(2), -ENOENT);
  EXPECT_EQ(dev_->pin(2), -ENOENT);
  EXPECT_EQ(dev_->unpin(2), -ENOENT);
  EXPECT_EQ(dev_->pin(1), -EAGAIN);
  ASSERT_EQ(dev_->stage(1), 0);
  EXPECT_EQ(dev_->stage(1), -EBUSY);
  EXPECT_EQ(dev_->pin_count(1), 1u);
  ASSERT_TRUE(drive_until([&] { return obs_.completion_count() == 1; }));
  EXPECT_EQ(dev_->stage(1), -EBUSY);
  ASSERT_EQ(dev_->pin(1), 0);
  EXPECT_EQ(dev_->pin_count(1), 2u);
  EXPECT_EQ(dev_->unpin(1), 0);
  EXPECT_EQ(dev_->unpin(1), 0);
  EXPECT_EQ(dev_->unpin(1), -EINVAL);
  std::vector<std::span<const std::byte>> ext;
  EXPECT_EQ(dev_->resident_extents(1, &ext), -EPERM);
  EXPECT_EQ(dev_->resident_extents(2, &ext), -ENOENT);
  ASSERT_EQ(dev_->pin(1), 0);
  ASSERT_EQ(dev_->resident_extents(1, &ext), 0);
  ASSERT_EQ(ext.size(), 1u);
  EXPECT_EQ(ext[0].size(), 100 * kKiB);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(ext[0].data()) % 4096, 0u);
}

TEST_F(UringDeviceTest, UnpinnedObjectsAreEvictedLeastRecentlyUsedFirst) {
  for (ObjectKey k = 1; k <= 5; ++k) put(k, kMiB);
  open_device(options(4 * kMiB));
  for (ObjectKey k = 1; k <= 4; ++k) ASSERT_EQ(dev_->stage(k), 0);
  ASSERT_TRUE(drive_until([&] { return obs_.completion_count() == 4; }));
  for (ObjectKey k = 1; k <= 4; ++k) ASSERT_EQ(dev_->unpin(k), 0);
  // Touch 1 so 2 becomes the least recently used.
  ASSERT_EQ(dev_->pin(1), 0);
  ASSERT_EQ(dev_->unpin(1), 0);
  ASSERT_EQ(dev_->stage(5), 0);
  ASSERT_TRUE(drive_until([&] { return obs_.completion_count() == 5; }));
  EXPECT_EQ(obs_.evicted, std::vector<ObjectKey>{2});
  EXPECT_EQ(dev_->residency(2), Residency::kAbsent);
  EXPECT_EQ(dev_->stats().evictions, 1u);
  EXPECT_EQ(dev_->stats().evicted_bytes, kMiB);
  // Everything pinned: nothing can make room, and nothing leaks.
  for (ObjectKey k : {1, 3, 4}) ASSERT_EQ(dev_->pin(k), 0);
  EXPECT_EQ(dev_->stage(2), -ENOSPC);
  EXPECT_EQ(dev_->fast_tier_stats().space.used_bytes, 4 * kMiB);
  EXPECT_EQ(dev_->stats().resident_bytes, 4 * kMiB);
  ASSERT_EQ(dev_->unpin(3), 0);
  dev_->drop_unpinned();
  EXPECT_EQ(dev_->residency(3), Residency::kAbsent);
  EXPECT_EQ(dev_->residency(4), Residency::kResident);
}

TEST_F(UringDeviceTest, InjectedReadErrorFailsOnlyThatStageAndLeaksNothing) {
  for (ObjectKey k = 0; k < 6; ++k) put(k, 300 * kKiB);
  open_device(options(16 * kMiB));
  const uint64_t bad = store_->lookup(3)->offset;
  std::atomic<int> injected{0};
  dev_->set_fault_hook([&](const IoRequest& r, int res) {
    if (r.offset == bad) {
      ++injected;
      return -EIO;
    }
    return res;
  });
  for (ObjectKey k = 0; k < 6; ++k) ASSERT_EQ(dev_->stage(k), 0);
  ASSERT_TRUE(drive_until([&] { return obs_.completion_count() == 6; }));
  EXPECT_EQ(injected.load(), 1);
  for (const auto& c : completions()) EXPECT_EQ(c.status, c.key == 3 ? -EIO : 0) << c.key;
  EXPECT_EQ(dev_->residency(3), Residency::kAbsent);
  EXPECT_EQ(dev_->pin_count(3), 0u);
  const DeviceStats s = dev_->stats();
  EXPECT_EQ(s.stage_errors, 1u);
  EXPECT_EQ(s.pins, 5u);
  EXPECT_EQ(s.pinned_bytes, 5 * 300 * kKiB);
  EXPECT_EQ(s.resident_bytes, 5 * 300 * kKiB);
  EXPECT_EQ(dev_->fast_tier_stats().space.used_bytes, 5 * 300 * kKiB);
  EXPECT_EQ(dev_->uring_stats().read_errors, 1u);
  EXPECT_TRUE(dev_->idle());
  // The store lease was returned: deleting the object frees its extent at once.
  const uint64_t used = store_->space().used_bytes;
  ASSERT_EQ(store_->remove(3), 0);
  EXPECT_EQ(store_->space().used_bytes, used - 300 * kKiB);
  put(3, 300 * kKiB);
  dev_->set_fault_hook({});
  ASSERT_EQ(dev_->stage(3), 0);
  ASSERT_TRUE(drive_until([&] { return obs_.completion_count() == 7; }));
  EXPECT_EQ(completions().back().status, 0);
  EXPECT_EQ(read_back(3), object_bytes(3, 300 * kKiB));
}

TEST_F(UringDeviceTest, ShortReadsAreCompletedByResubmittingTheRest) {
  for (ObjectKey k = 0; k < 20; ++k) put(k, 3 * kMiB + 5000);
  open_device(options(128 * kMiB));
  dev_->set_fault_hook(halve_long_reads);
  for (ObjectKey k = 0; k < 20; ++k) ASSERT_EQ(dev_->stage(k), 0);
  ASSERT_TRUE(drive_until([&] { return obs_.completion_count() == 20; }));
  for (const auto& c : completions()) ASSERT_EQ(c.status, 0);
  for (ObjectKey k = 0; k < 20; ++k) ASSERT_EQ(read_back(k), object_bytes(k, 3 * kMiB + 5000));
  EXPECT_GT(dev_->uring_stats().short_reads, 20u);
}

TEST_F(UringDeviceTest, ShortReadWithoutProgressIsAnError) {
  for (ObjectKey k = 0; k < 3; ++k) put(k, 2 * kMiB);
  open_device(options(16 * kMiB));
  const uint64_t bad = store_->lookup(1)->offset + kMiB;
  dev_->set_fault_hook([&](const IoRequest& r, int res) { return r.offset == bad ? 0 : res; });
  for (ObjectKey k = 0; k < 3; ++k) ASSERT_EQ(dev_->stage(k), 0);
  ASSERT_TRUE(drive_until([&] { return obs_.completion_count() == 3; }));
  for (const auto& c : completions()) EXPECT_EQ(c.status, c.key == 1 ? -EIO : 0);
  EXPECT_EQ(dev_->stats().pins, 2u);
  EXPECT_EQ(dev_->fast_tier_stats().space.used_bytes, 4 * kMiB);
}

TEST_F(UringDeviceTest, CorruptDataFailsVerificationAndQuarantinesTheObject) {
  for (ObjectKey k = 0; k < 4; ++k) put(k, 64 * kKiB);
  open_device(options(4 * kMiB));
  int fd = ::open((dir_.path() + "/store/data").c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  const uint8_t junk = 0xee;
  ASSERT_EQ(pwrite(fd, &junk, 1, static_cast<off_t>(store_->lookup(2)->offset + 100)), 1);
  close(fd);
  for (ObjectKey k = 0; k < 4; ++k) ASSERT_EQ(dev_->stage(k), 0);
  ASSERT_TRUE(drive_until([&] { return obs_.completion_count() == 4; }));
  for (const auto& c : completions()) EXPECT_EQ(c.status, c.key == 2 ? -EBADMSG : 0);
  EXPECT_EQ(dev_->uring_stats().checksum_errors, 1u);
  ASSERT_TRUE(store_->quarantined(2).has_value());
  EXPECT_EQ(dev_->stage(2), -EBADMSG);
  EXPECT_EQ(dev_->object_size(2), -ENOENT);
  EXPECT_EQ(dev_->stats().pins, 3u);
}

TEST_F(UringDeviceTest, VerificationHashesReadsAsTheyCompleteInObjectOrder) {
  // Objects of four 1 MiB reads, every read split in two so that the rest of each one
  // completes after later reads: the bytes are hashed in object order all the same.
  constexpr uint64_t kSize = 3 * kMiB + 5000;
  for (ObjectKey k = 0; k < 4; ++k) put(k, kSize);
  open_device(options(64 * kMiB));
  int fd = ::open((dir_.path() + "/store/data").c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  const uint8_t junk = 0xee;
  // Object 1: its padding past the object's end changes, which no checksum covers.
  ASSERT_EQ(pwrite(fd, &junk, 1, static_cast<off_t>(store_->lookup(1)->offset + kSize + 10)), 1);
  // Object 2: one byte in its last read.
  ASSERT_EQ(pwrite(fd, &junk, 1, static_cast<off_t>(store_->lookup(2)->offset + 3 * kMiB + 100)),
            1);
  close(fd);
  dev_->set_fault_hook(halve_long_reads);
  for (ObjectKey k = 0; k < 4; ++k) ASSERT_EQ(dev_->stage(k), 0);
  ASSERT_TRUE(drive_until([&] { return obs_.completion_count() == 4; }));
  for (const auto& c : completions()) EXPECT_EQ(c.status, c.key == 2 ? -EBADMSG : 0) << c.key;
  EXPECT_EQ(dev_->uring_stats().checksum_errors, 1u);
  EXPECT_GT(dev_->uring_stats().short_reads, 4u);
  for (ObjectKey k : {0, 1, 3}) EXPECT_EQ(read_back(k), object_bytes(k, kSize));
}

TEST_F(UringDeviceTest, DemandReadCachesWhatWasMissingAndReportsThroughTheCallback) {
  for (ObjectKey k = 0; k < 3; ++k) put(k, 200 * kKiB);
  open_device(options(16 * kMiB));
  ASSERT_EQ(dev_->stage(0), 0);
  ASSERT_TRUE(drive_until([&] { return obs_.completion_count() == 1; }));
  const std::vector<ObjectKey> keys{0, 1, 2};
  int status = 1;
  ASSERT_EQ(dev_->demand_read(keys, [&](int s) { status = s; }), 0);
  ASSERT_TRUE(drive_until([&] { return status != 1; }));
  EXPECT_EQ(status, 0);
  EXPECT_EQ(obs_.resident, (std::vector<ObjectKey>{1, 2}));
  const DeviceStats s = dev_->stats();
  EXPECT_EQ(s.demand_reads, 1u);
  EXPECT_EQ(s.demand_bytes, 2 * 200 * kKiB);
  EXPECT_EQ(dev_->residency(1), Residency::kResident);
  EXPECT_EQ(dev_->pin_count(1), 0u);
  ASSERT_EQ(dev_->pin(2), 0);
  EXPECT_EQ(read_back(2), object_bytes(2, 200 * kKiB));
  // All hits: no SSD read, the callback still comes from the driving context.
  status = 1;
  ASSERT_EQ(dev_->demand_read(keys, [&](int st) { status = st; }), 0);
  EXPECT_EQ(status, 1);
  ASSERT_TRUE(drive_until([&] { return status != 1; }));
  EXPECT_EQ(status, 0);
  EXPECT_EQ(dev_->stats().demand_bytes, 2 * 200 * kKiB);
  const std::vector<ObjectKey> unknown{1, 99};
  EXPECT_EQ(dev_->demand_read(unknown, [](int) {}), -ENOENT);
}

TEST_F(UringDeviceTest, DemandReadErrorReachesTheCaller) {
  put(1, 64 * kKiB);
  open_device(options(4 * kMiB));
  dev_->set_fault_hook([](const IoRequest&, int) { return -EIO; });
  const std::vector<ObjectKey> keys{1};
  int status = 1;
  ASSERT_EQ(dev_->demand_read(keys, [&](int s) { status = s; }), 0);
  ASSERT_TRUE(drive_until([&] { return status != 1; }));
  EXPECT_EQ(status, -EIO);
  EXPECT_EQ(dev_->residency(1), Residency::kAbsent);
  EXPECT_TRUE(dev_->idle());
  EXPECT_EQ(dev_->fast_tier_stats().space.used_bytes, 0u);
}

TEST_F(UringDeviceTest, AdmitPlacesCheckedBytesResidentAndUnpinned) {
  put(7, 64 * kKiB);
  put(8, 8 * kKiB);
  open_device(options(4 * kMiB));
  const auto want = object_bytes(7, 64 * kKiB);
  EXPECT_EQ(dev_->admit(9, want), -ENOENT);
  EXPECT_EQ(dev_->admit(7, std::span(want).first(4096)), -EINVAL);
  auto corrupt = object_bytes(8, 8 * kKiB);
  corrupt[100] ^= std::byte{1};
  EXPECT_EQ(dev_->admit(8, corrupt), -EBADMSG);
  EXPECT_EQ(dev_->uring_stats().checksum_errors, 1u);
  EXPECT_EQ(dev_->residency(8), Residency::kAbsent);

  ASSERT_EQ(dev_->admit(7, want), 0);
  EXPECT_EQ(dev_->residency(7), Residency::kResident);
  EXPECT_EQ(dev_->pin_count(7), 0u);
  EXPECT_EQ(dev_->stats().resident_bytes, 64 * kKiB);
  EXPECT_EQ(dev_->stats().demand_bytes, 64 * kKiB);
  EXPECT_EQ(dev_->admit(7, want), -EEXIST);
  EXPECT_EQ(dev_->stage(7), -EBUSY);
  ASSERT_EQ(dev_->pin(7), 0);
  EXPECT_EQ(read_back(7), want);
  ASSERT_EQ(dev_->unpin(7), 0);
  dev_->process_completions();
  EXPECT_EQ(obs_.resident, std::vector<ObjectKey>{7});
  dev_->drop_unpinned();
  EXPECT_EQ(dev_->residency(7), Residency::kAbsent);
  EXPECT_EQ(dev_->fast_tier_stats().space.used_bytes, 0u);
}

TEST_F(UringDeviceTest, RequestsSplitAtRequestSizeWithAndWithoutRegisteredBuffers) {
  put(1, 3 * kMiB);
  put(2, 3 * kMiB + 4096);
  for (bool registered : {true, false}) {
    UringDeviceOptions o = options(64 * kMiB);
    o.register_buffers = registered;
    open_device(o);
    // Registration pins the arena: root, or a memlock limit that covers it.
    rlimit lim{};
    getrlimit(RLIMIT_MEMLOCK, &lim);
    const bool can_pin = geteuid() == 0 || lim.rlim_cur >= 64 * kMiB;
    EXPECT_EQ(dev_->uring_stats().registered_buffers, registered && can_pin);
    obs_.completions.clear();
    ASSERT_EQ(dev_->stage(1), 0);
    ASSERT_EQ(dev_->stage(2), 0);
    ASSERT_TRUE(drive_until([&] { return obs_.completion_count() == 2; }));
    EXPECT_EQ(dev_->uring_stats().requests, 3u + 4u);
    EXPECT_EQ(read_back(1), object_bytes(1, 3 * kMiB));
    EXPECT_EQ(read_back(2), object_bytes(2, 3 * kMiB + 4096));
    dev_.reset();
  }
}

TEST_F(UringDeviceTest, BadOptionsAreClearErrors) {
  std::string err;
  std::unique_ptr<UringDevice> d;
  UringDeviceOptions o = options(4 * kMiB);
  o.request_bytes = 1000;
  EXPECT_EQ(UringDevice::create(*store_, o, clock_, &d, &err), -EINVAL);
  o = options(4 * kMiB);
  o.eviction = "nope";
  EXPECT_EQ(UringDevice::create(*store_, o, clock_, &d, &err), -EINVAL);
  EXPECT_EQ(err, "unknown eviction policy \"nope\"");
  o = options(0);
  EXPECT_EQ(UringDevice::create(*store_, o, clock_, &d, &err), -EINVAL);
}

}  // namespace
}  // namespace tempo
