#include "kmod/kmod_device.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/tempo.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "kmod_test_env.h"

namespace tempo {
namespace {

struct Recorder final : DeviceObserver {
  std::vector<StageCompletion> completions;
  std::vector<ObjectKey> resident;
  std::vector<ObjectKey> evicted;
  void on_stage_complete(const StageCompletion& c) override { completions.push_back(c); }
  void on_resident(ObjectKey key) override { resident.push_back(key); }
  void on_evicted(ObjectKey key) override { evicted.push_back(key); }
};

// Kernel-wide pin count, read through a separate fd.
uint64_t kernel_pins() {
  const int fd = open(testing::kmod_dev_path().c_str(), O_RDONLY | O_CLOEXEC);
  tempo_stats s{};
  if (fd < 0 || ioctl(fd, TEMPO_IOC_STATS, &s) != 0) ADD_FAILURE() << std::strerror(errno);
  if (fd >= 0) close(fd);
  return s.pins;
}

// Stages `count` extents from `first` on through another fd, unpinned, `batch` per call, and
// reads their completions there: evictions caused by someone else.
void stage_elsewhere(uint64_t e, uint64_t first, uint64_t count, uint32_t batch) {
  const int fd = open(testing::kmod_dev_path().c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  std::vector<tempo_range> ranges;
  for (uint64_t i = 0; i < count; ++i) ranges.push_back({(first + i) * e, e});
  for (uint64_t at = 0; at < count; at += batch) {
    tempo_stage st{};
    st.ranges = reinterpret_cast<uintptr_t>(ranges.data() + at);
    st.nr_ranges = static_cast<uint32_t>(std::min<uint64_t>(batch, count - at));
    st.ticket = at + 1;
    ASSERT_EQ(ioctl(fd, TEMPO_IOC_STAGE, &st), 0) << std::strerror(errno);
    tempo_completion c{};
    ASSERT_EQ(read(fd, &c, sizeof(c)), static_cast<ssize_t>(sizeof(c)));  // blocking fd
    ASSERT_EQ(c.kind, TEMPO_REC_STAGE);
    ASSERT_EQ(c.status, 0);
  }
  close(fd);
}

TEST(KmodDeviceOpen, MissingNodeIsENOENT) {
  std::unique_ptr<KmodDevice> dev;
  std::string error;
  EXPECT_EQ(KmodDevice::open({.path = "/nonexistent/tempo0"}, &dev, &error), -ENOENT);
  EXPECT_EQ(dev, nullptr);
  EXPECT_NE(error.find("/nonexistent/tempo0"), std::string::npos);
}

TEST(KmodDeviceOpen, OtherDeviceIsENOTTY) {
  std::unique_ptr<KmodDevice> dev;
  std::string error;
  EXPECT_EQ(KmodDevice::open({.path = "/dev/null"}, &dev, &error), -ENOTTY);
  EXPECT_NE(error.find("not a tempo device"), std::string::npos);
}

class KmodDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TEMPO_REQUIRE_KMOD();
    std::string error;
    ASSERT_EQ(KmodDevice::open({.path = testing::kmod_dev_path()}, &dev_, &error), 0) << error;
    ASSERT_EQ(dev_->reset(), 0);
    // The RESET's own record, before anything is watched.
    ASSERT_GE(dev_->process_completions(), 0);
    e_ = dev_->geometry().extent_bytes;
    dev_->set_observer(&rec_);
  }
  void TearDown() override {
    if (dev_) dev_->set_observer(nullptr);
  }
  // Polls until `n` stage completions arrived (10 s at most).
  void wait_completions(size_t n) {
    for (int i = 0; i < 100 && rec_.completions.size() < n; ++i)
      ASSERT_GE(dev_->wait(kNsPerSec / 10), 0);
    ASSERT_EQ(rec_.completions.size(), n);
  }

  std::unique_ptr<KmodDevice> dev_;
  Recorder rec_;
  uint64_t e_ = 0;
};

TEST_F(KmodDeviceTest, GeometryAndInfo) {
  const KmodGeometry& g = dev_->geometry();
  EXPECT_GT(g.size, 0u);
  EXPECT_EQ(g.size % g.extent_bytes, 0u);
  EXPECT_EQ(g.fast_bytes % g.extent_bytes, 0u);
  EXPECT_LE(g.pin_limit_bytes, g.fast_bytes);
  const DeviceInfo in = dev_->info();
  EXPECT_EQ(in.kind, "kmod");
  EXPECT_EQ(in.capacity_bytes, g.fast_bytes);
  EXPECT_EQ(in.staging_slots, 8u);
}

TEST_F(KmodDeviceTest, RegisterValidatesPlacement) {
  EXPECT_EQ(dev_->register_object(1, 4096, e_), -EINVAL);  // not extent aligned
  EXPECT_EQ(dev_->register_object(1, 0, 0), -EINVAL);
  EXPECT_EQ(dev_->register_object(1, dev_->geometry().size, e_), -ERANGE);
  EXPECT_EQ(dev_->register_object(1, dev_->geometry().size - e_, e_ + 1), -ERANGE);
  ASSERT_EQ(dev_->register_object(1, 2 * e_, e_ + 100), 0);  // extents 2 and 3
  EXPECT_EQ(dev_->register_object(1, 8 * e_, e_), -EEXIST);
  EXPECT_EQ(dev_->register_object(2, 3 * e_, e_), -EBUSY);  // shares extent 3
  EXPECT_EQ(dev_->register_object(2, e_, 2 * e_), -EBUSY);  // runs into extent 2
  EXPECT_EQ(dev_->register_object(2, e_, e_), 0);
  uint64_t at = 0;
  ASSERT_EQ(dev_->add_object(3, 100, &at), 0);
  EXPECT_EQ(at, 4 * e_);
  EXPECT_EQ(dev_->object_size(1), static_cast<int64_t>(e_ + 100));
  EXPECT_EQ(dev_->object_size(9), -ENOENT);
  EXPECT_EQ(dev_->unregister_object(9), -ENOENT);
  EXPECT_EQ(dev_->unregister_object(2), 0);
  EXPECT_EQ(dev_->object_size(2), -ENOENT);
}

TEST_F(KmodDeviceTest, StageCompletesThroughThePollableFdWithAPin) {
  ASSERT_EQ(dev_->add_object(7, 2 * e_ + 4096), 0);
  EXPECT_EQ(dev_->residency(7), Residency::kAbsent);
  const uint64_t pins0 = kernel_pins();
  ASSERT_EQ(dev_->stage(7), 0);
  EXPECT_EQ(dev_->stage(7), -EBUSY);  // staging
  pollfd p{dev_->completion_fd(), POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 10000), 1);
  // The completion may need more than one poll when records trail the wakeup.
  for (int i = 0; i < 100 && rec_.completions.empty(); ++i)
    ASSERT_GE(dev_->wait(kNsPerSec / 10), 0);
  ASSERT_EQ(rec_.completions.size(), 1u);
  const StageCompletion& c = rec_.completions[0];
  EXPECT_EQ(c.key, 7u);
  EXPECT_EQ(c.bytes, 2 * e_ + 4096);
  EXPECT_EQ(c.status, 0);
  EXPECT_GT(c.submitted, 0);
  EXPECT_GE(c.completed, c.submitted);
  EXPECT_EQ(dev_->residency(7), Residency::kResident);
  EXPECT_EQ(dev_->pin_count(7), 1u);
  EXPECT_EQ(kernel_pins(), pins0 + 3);  // one per extent
  EXPECT_EQ(dev_->stage(7), -EBUSY);    // resident
  EXPECT_EQ(dev_->unregister_object(7), -EBUSY);
  const DeviceStats s = dev_->stats();
  EXPECT_EQ(s.staged_ops, 1u);
  EXPECT_EQ(s.staged_bytes, 2 * e_ + 4096);
  EXPECT_EQ(s.pinned_bytes, 3 * e_);
  EXPECT_EQ(dev_->unpin(7), 0);
  EXPECT_EQ(dev_->pin_count(7), 0u);
  EXPECT_EQ(dev_->unpin(7), -EINVAL);
  EXPECT_EQ(kernel_pins(), pins0);
  EXPECT_TRUE(dev_->idle());
  EXPECT_EQ(dev_->stage(99), -ENOENT);
}

TEST_F(KmodDeviceTest, PinNeedsResidencyAndCounts) {
  ASSERT_EQ(dev_->add_object(1, e_), 0);
  EXPECT_EQ(dev_->pin(1), -EAGAIN);
  EXPECT_EQ(dev_->pin(2), -ENOENT);
  EXPECT_EQ(dev_->unpin(2), -ENOENT);
  ASSERT_EQ(dev_->stage(1), 0);
  wait_completions(1);
  EXPECT_EQ(dev_->pin(1), 0);
  EXPECT_EQ(dev_->pin(1), 0);
  EXPECT_EQ(dev_->pin_count(1), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(dev_->unpin(1), 0);
  EXPECT_EQ(dev_->pin_count(1), 0u);
  EXPECT_EQ(dev_->reset(), 0);  // unpinned: dropped
  EXPECT_EQ(dev_->residency(1), Residency::kAbsent);
}

TEST_F(KmodDeviceTest, DemandReadFillsAndReportsResidentAfterPoll) {
  ASSERT_EQ(dev_->add_object(1, 2 * e_), 0);
  ASSERT_EQ(dev_->add_object(2, e_), 0);
  ASSERT_EQ(dev_->stage(2), 0);
  wait_completions(1);
  int status = 1;
  const ObjectKey keys[] = {1, 2};
  ASSERT_EQ(dev_->demand_read(keys, [&status](int s) { status = s; }), 0);
  EXPECT_EQ(status, 1);  // never inline: only from process_completions()
  for (int i = 0; i < 100 && status == 1; ++i) ASSERT_GE(dev_->wait(kNsPerSec / 10), 0);
  EXPECT_EQ(status, 0);
  EXPECT_EQ(rec_.resident, std::vector<ObjectKey>{1});  // 2 was resident already
  EXPECT_EQ(dev_->residency(1), Residency::kResident);
  EXPECT_EQ(dev_->pin_count(1), 0u);
  const DeviceStats s = dev_->stats();
  EXPECT_EQ(s.demand_reads, 1u);
  EXPECT_EQ(s.demand_bytes, 2 * e_);
  const ObjectKey unknown[] = {1, 42};
  EXPECT_EQ(dev_->demand_read(unknown, [](int) {}), -ENOENT);
  EXPECT_EQ(dev_->unpin(2), 0);
}

TEST_F(KmodDeviceTest, StagedBytesEqualTheDisk) {
  const std::string disk = testing::kmod_disk_path();
  if (disk.empty()) GTEST_SKIP() << "TEMPO_KMOD_DISK (the backing disk) is not set";
  uint64_t at = 0;
  ASSERT_EQ(dev_->add_object(1, 3 * e_ - 512, &at), 0);
  ASSERT_EQ(dev_->stage(1), 0);
  wait_completions(1);
  ASSERT_EQ(rec_.completions[0].status, 0);
  std::span<const std::byte> data;
  ASSERT_EQ(dev_->object_data(1, &data), 0);
  ASSERT_EQ(data.size(), 3 * e_ - 512);
  const int fd = open(disk.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
  ASSERT_GE(fd, 0) << disk << ": " << std::strerror(errno);
  void* buf = nullptr;
  ASSERT_EQ(posix_memalign(&buf, 4096, 3 * e_), 0);
  ASSERT_EQ(pread(fd, buf, 3 * e_, static_cast<off_t>(at)), static_cast<ssize_t>(3 * e_));
  close(fd);
  EXPECT_EQ(std::memcmp(data.data(), buf, data.size()), 0);
  free(buf);
  EXPECT_EQ(dev_->unpin(1), 0);
}

// Every unpinned extent the kernel evicts reaches the observer as its object's key: here
// by this fd's own staging (LRU first), then by another fd's.
TEST_F(KmodDeviceTest, LruEvictionsReachTheObserver) {
  const uint64_t n = dev_->geometry().fast_bytes / e_;
  for (uint64_t i = 0; i <= n; ++i) ASSERT_EQ(dev_->add_object(100 + i, e_), 0);
  // 100 first: when the tier is full, it is the least recently used.
  for (uint64_t i = 0; i <= n; ++i) {
    ASSERT_EQ(dev_->stage(100 + i), 0);
    wait_completions(i + 1);
    ASSERT_EQ(dev_->unpin(100 + i), 0);
  }
  for (int i = 0; i < 50 && rec_.evicted.empty(); ++i) ASSERT_GE(dev_->wait(kNsPerSec / 10), 0);
  EXPECT_EQ(rec_.evicted, std::vector<ObjectKey>{100});
  EXPECT_EQ(dev_->residency(100), Residency::kAbsent);
  EXPECT_EQ(dev_->residency(101), Residency::kResident);
  // Another fd fills the tier from beyond our objects: every one of ours leaves.
  rec_.evicted.clear();
  ASSERT_NO_FATAL_FAILURE(stage_elsewhere(e_, n + 2, n, 16));
  for (int i = 0; i < 50 && rec_.evicted.size() < n; ++i) ASSERT_GE(dev_->wait(kNsPerSec / 10), 0);
  std::vector<ObjectKey> want;
  for (uint64_t i = 1; i <= n; ++i) want.push_back(100 + i);
  std::sort(rec_.evicted.begin(), rec_.evicted.end());
  EXPECT_EQ(rec_.evicted, want);
}

// RESET (by anyone) drops every unpinned extent: the unpinned object is reported, the pinned
// one is not.
TEST_F(KmodDeviceTest, ResetReportsUnpinnedObjectsOnly) {
  ASSERT_EQ(dev_->add_object(1, e_), 0);
  ASSERT_EQ(dev_->add_object(2, 2 * e_), 0);
  ASSERT_EQ(dev_->stage(1), 0);
  ASSERT_EQ(dev_->stage(2), 0);
  wait_completions(2);
  ASSERT_EQ(dev_->unpin(2), 0);
  const int fd = open(testing::kmod_dev_path().c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ioctl(fd, TEMPO_IOC_RESET, 0), 0);
  close(fd);
  for (int i = 0; i < 50 && rec_.evicted.empty(); ++i) ASSERT_GE(dev_->wait(kNsPerSec / 10), 0);
  EXPECT_EQ(rec_.evicted, std::vector<ObjectKey>{2});
  EXPECT_EQ(dev_->residency(1), Residency::kResident);
  EXPECT_EQ(dev_->unpin(1), 0);
}

// Notices the kernel had to drop (its per-fd queue of 512 was full) come as one LOST record:
// every object is queried again, and the one evicted after the drop is reported.
TEST_F(KmodDeviceTest, LostNoticesResyncEveryObject) {
  ASSERT_EQ(dev_->add_object(1, e_), 0);
  ASSERT_EQ(dev_->stage(1), 0);
  wait_completions(1);
  const uint64_t n = dev_->geometry().fast_bytes / e_;
  // Pinned through the flood: more than 512 notices of other extents fill our queue.
  const uint64_t flood = std::max<uint64_t>(n, 600);
  ASSERT_NO_FATAL_FAILURE(stage_elsewhere(e_, 16, flood, 32));
  ASSERT_EQ(dev_->unpin(1), 0);
  // Its eviction comes while the queue is full: dropped, only LOST tells.
  ASSERT_NO_FATAL_FAILURE(stage_elsewhere(e_, 16 + flood, n, 64));
  EXPECT_EQ(dev_->residency(1), Residency::kAbsent);
  for (int i = 0; i < 50 && rec_.evicted.empty(); ++i) ASSERT_GE(dev_->wait(kNsPerSec / 10), 0);
  EXPECT_EQ(rec_.evicted, std::vector<ObjectKey>{1});
}

// The bytes of an object this fd pins, in the device mapping; the errors otherwise.
TEST_F(KmodDeviceTest, ResidentExtentsNeedResidencyAndOwnPin) {
  ASSERT_EQ(dev_->add_object(1, e_ + 4096), 0);
  std::vector<std::span<const std::byte>> out;
  EXPECT_EQ(dev_->resident_extents(9, &out), -ENOENT);
  EXPECT_EQ(dev_->resident_extents(1, &out), -EAGAIN);
  ASSERT_EQ(dev_->stage(1), 0);
  wait_completions(1);
  ASSERT_EQ(dev_->resident_extents(1, &out), 0);
  ASSERT_EQ(out.size(), 1u);
  std::span<const std::byte> data;
  ASSERT_EQ(dev_->object_data(1, &data), 0);
  EXPECT_EQ(out[0].data(), data.data());
  EXPECT_EQ(out[0].size(), e_ + 4096);
  ASSERT_EQ(dev_->unpin(1), 0);
  EXPECT_EQ(dev_->resident_extents(1, &out), -EPERM);
}

TEST_F(KmodDeviceTest, PinLimitAndSpaceErrorsPassThrough) {
  const KmodGeometry& g = dev_->geometry();
  ASSERT_EQ(dev_->add_object(1, g.pin_limit_bytes + e_), 0);
  ASSERT_EQ(dev_->add_object(2, g.fast_bytes + e_), 0);
  EXPECT_EQ(dev_->stage(1), -EDQUOT);
  EXPECT_EQ(dev_->stage(2), -E2BIG);
  EXPECT_EQ(dev_->residency(1), Residency::kAbsent);
  EXPECT_TRUE(dev_->idle());
}

TEST_F(KmodDeviceTest, ClosingTheDeviceDropsItsPins) {
  const uint64_t pins0 = kernel_pins();
  ASSERT_EQ(dev_->add_object(1, 2 * e_), 0);
  ASSERT_EQ(dev_->add_object(2, e_), 0);
  ASSERT_EQ(dev_->stage(1), 0);
  ASSERT_EQ(dev_->stage(2), 0);
  wait_completions(2);
  ASSERT_EQ(dev_->pin(2), 0);
  EXPECT_EQ(kernel_pins(), pins0 + 4);
  dev_->set_observer(nullptr);
  dev_.reset();
  EXPECT_EQ(kernel_pins(), pins0);
}

// Several threads stage, pin and unpin their own objects while an event-loop thread waits
// on completion_fd() and delivers: every stage completes, every pin is returned.
TEST_F(KmodDeviceTest, ConcurrentCallersWithAPollingLoop) {
  constexpr int kThreads = 4, kPerThread = 4, kRounds = 40;
  for (int i = 0; i < kThreads * kPerThread; ++i) ASSERT_EQ(dev_->add_object(100 + i, e_), 0);
  struct Counter final : DeviceObserver {
    std::atomic<int> ok{0}, failed{0};
    void on_stage_complete(const StageCompletion& c) override { (c.status ? failed : ok)++; }
    void on_resident(ObjectKey) override {}
    void on_evicted(ObjectKey) override {}
  } counter;
  dev_->set_observer(&counter);
  const uint64_t pins0 = kernel_pins();
  std::atomic<bool> stop{false};
  std::thread loop([&] {
    while (!stop) EXPECT_GE(dev_->wait(10 * kNsPerMs), 0);
  });
  std::atomic<int> staged{0}, errors{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        const ObjectKey k = 100 + t * kPerThread + round % kPerThread;
        // Resident already: pin it instead (it may be evicted meanwhile: then stage).
        int r = dev_->stage(k);
        if (r == 0) ++staged;
        while (r == -EBUSY || r == -EAGAIN) {
          r = dev_->pin(k);
          if (r == -EAGAIN && (r = dev_->stage(k)) == 0) ++staged;
          if (r == -EBUSY) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        if (r != 0) {
          ++errors;
          continue;
        }
        for (int i = 0; i < 5000 && dev_->pin_count(k) == 0; ++i)
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        for (int i = 0; i < 5000 && dev_->residency(k) != Residency::kResident; ++i)
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        if (dev_->residency(k) != Residency::kResident || dev_->unpin(k) != 0) ++errors;
      }
    });
  }
  for (std::thread& w : workers) w.join();
  for (int i = 0; i < 500 && !dev_->idle(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  stop = true;
  loop.join();
  dev_->set_observer(&rec_);
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(counter.failed.load(), 0);
  EXPECT_EQ(counter.ok.load(), staged.load());
  EXPECT_GT(staged.load(), 0);
  EXPECT_TRUE(dev_->idle());
  EXPECT_EQ(kernel_pins(), pins0);
}

}  // namespace
}  // namespace tempo
