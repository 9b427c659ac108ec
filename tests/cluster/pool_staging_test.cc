// The uring device's staging path over a cluster tier, without a cluster: an in-memory
// ClusterTier with the same contract (pieces filled in order, completions announced on an
// eventfd, errors as negative errnos) drives the device's pool path under the sanitizers.
// The real RADOS tier under the same path is cluster_capi_test.cc.
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "../uring/device_fixture.h"
#include "cluster/cluster_tier.h"

namespace tempo::test {
namespace {

class MemoryTier final : public ClusterTier {
 public:
  MemoryTier() : fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}
  ~MemoryTier() override { close(fd_); }

  std::string describe() const override { return "memory"; }
  int put_async(ObjectKey key, std::span<const std::byte> data) override {
    std::lock_guard lock(mu_);
    objects_[key].assign(data.begin(), data.end());
    return 0;
  }
  int flush(TimeNs) override { return 0; }
  int64_t stat(ObjectKey key) override {
    std::lock_guard lock(mu_);
    ++stats_calls;
    auto it = objects_.find(key);
    return it == objects_.end() ? -ENOENT : static_cast<int64_t>(it->second.size());
  }
  void stat_many(std::span<const ObjectKey> keys, std::span<int64_t> sizes) override {
    batches.emplace_back(keys.begin(), keys.end());
    ClusterTier::stat_many(keys, sizes);
  }
  int read_async(ObjectKey key, std::span<const std::span<std::byte>> out, uint64_t tag) override {
    std::lock_guard lock(mu_);
    held_.push_back({key, {out.begin(), out.end()}, tag});
    ++reads;
    if (!hold) complete_locked();
    return 0;
  }
  int completion_fd() const override { return fd_; }
  size_t reap(std::vector<ClusterRead>* out) override {
    uint64_t n = 0;
    [[maybe_unused]] ssize_t r = read(fd_, &n, sizeof n);
    std::lock_guard lock(mu_);
    out->insert(out->end(), done_.begin(), done_.end());
    const size_t taken = done_.size();
    done_.clear();
    return taken;
  }
  int remove(ObjectKey key) override {
    std::lock_guard lock(mu_);
    return objects_.erase(key) ? 0 : -ENOENT;
  }
  ClusterTierStats stats() const override { return {}; }

  // Completes the reads held so far (into the caller's pieces, or with `fail`).
  void release() {
    std::lock_guard lock(mu_);
    complete_locked();
  }

  bool hold = false;  // reads wait for release()
  int fail = 0;       // a negative errno every read completes with
  int stats_calls = 0;
  int reads = 0;
  std::vector<std::vector<ObjectKey>> batches;  // the keys of each stat_many

 private:
  struct Read {
    ObjectKey key;
    std::vector<std::span<std::byte>> out;
    uint64_t tag;
  };
  void complete_locked() {
    for (Read& r : held_) {
      int64_t status = fail;
      if (status == 0) {
        const std::vector<std::byte>& bytes = objects_.at(r.key);
        size_t at = 0;
        for (auto piece : r.out) {
          std::memcpy(piece.data(), bytes.data() + at, piece.size());
          at += piece.size();
        }
        status = static_cast<int64_t>(at);
      }
      done_.push_back({r.tag, r.key, status, 0, 0});
    }
    held_.clear();
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(fd_, &one, sizeof one);
  }

  int fd_;
  std::mutex mu_;
  std::map<ObjectKey, std::vector<std::byte>> objects_;
  std::vector<Read> held_;
  std::vector<ClusterRead> done_;
};

class PoolStaging : public DeviceFixture {
 protected:
  void SetUp() override {
    open_store();
    if (IsSkipped()) return;
    UringDeviceOptions o = options(16u << 20);
    o.cluster = &pool_;
    o.keep_local = keep_local_;
    open_device(o);
  }
  void pool_put(ObjectKey key, size_t size) {
    const auto bytes = object_bytes(key, size);
    ASSERT_EQ(pool_.put_async(key, bytes), 0);
  }

  MemoryTier pool_;  // outlives the device
  bool keep_local_ = false;
};

TEST_F(PoolStaging, AnObjectOnlyThePoolHoldsIsStagedIntoTheFastTier) {
  const size_t size = (3u << 20) + 5;
  pool_put(7, size);
  EXPECT_EQ(dev_->object_size(7), static_cast<int64_t>(size));
  EXPECT_EQ(dev_->object_size(7), static_cast<int64_t>(size));
  EXPECT_EQ(pool_.stats_calls, 1);  // remembered
  EXPECT_EQ(dev_->object_size(8), -ENOENT);
  EXPECT_EQ(dev_->stage(8), -ENOENT);
  ASSERT_EQ(dev_->stage(7), 0);
  EXPECT_EQ(dev_->stage(7), -EBUSY);
  ASSERT_TRUE(drive_until([&] { return obs_.completion_count() == 1; }));
  EXPECT_EQ(obs_.completions[0].key, 7u);
  EXPECT_EQ(obs_.completions[0].status, 0);
  EXPECT_EQ(obs_.completions[0].bytes, size);
  EXPECT_EQ(dev_->residency(7), Residency::kResident);
  EXPECT_EQ(read_back(7), object_bytes(7, size));
  EXPECT_EQ(dev_->uring_stats().pool_stages, 1u);
  EXPECT_EQ(dev_->stats().staged_bytes, size);
  EXPECT_TRUE(dev_->idle());
  EXPECT_FALSE(store_->lookup(7));  // not kept without keep_local
  ASSERT_EQ(dev_->unpin(7), 0);
  EXPECT_EQ(dev_->stats().pinned_bytes, 0u);
}

TEST_F(PoolStaging, SizesOfManyObjectsAreAskedOfThePoolInOneBatch) {
  put(1, 4096);
  pool_put(2, 8192);
  pool_put(3, 4096 + 1);
  ASSERT_EQ(dev_->object_size(2), 8192);  // remembered
  const ObjectKey keys[] = {1, 2, 3, 4, 5};
  int64_t sizes[5] = {};
  dev_->object_sizes(keys, sizes);
  // The store answers for 1, the remembered size for 2; 3, 4 and 5 go to the pool at once.
  EXPECT_EQ(sizes[0], 4096);
  EXPECT_EQ(sizes[1], 8192);
  EXPECT_EQ(sizes[2], 4096 + 1);
  EXPECT_EQ(sizes[3], -ENOENT);
  EXPECT_EQ(sizes[4], -ENOENT);
  ASSERT_EQ(pool_.batches.size(), 1u);
  EXPECT_EQ(pool_.batches[0], (std::vector<ObjectKey>{3, 4, 5}));
  dev_->object_sizes(keys, sizes);  // 3 remembered now; the misses are asked again
  ASSERT_EQ(pool_.batches.size(), 2u);
  EXPECT_EQ(pool_.batches[1], (std::vector<ObjectKey>{4, 5}));
}

TEST_F(PoolStaging, TheLocalStoreIsReadFirst) {
  put(3, 64 << 10);
  ASSERT_EQ(pool_.put_async(3, object_bytes(4, 64 << 10)), 0);  // other bytes under key 3
  ASSERT_EQ(dev_->stage(3), 0);
  ASSERT_TRUE(drive_until([&] { return obs_.completion_count() == 1; }));
  EXPECT_EQ(read_back(3), object_bytes(3, 64 << 10));
  EXPECT_EQ(pool_.stats_calls, 0);
  EXPECT_EQ(pool_.reads, 0);
}

TEST_F(PoolStaging, AFailedPoolReadLeavesNothingBehindAndAsksThePoolAgain) {
  pool_put(9, 1u << 20);
  pool_.fail = -ETIMEDOUT;
  ASSERT_EQ(dev_->stage(9), 0);
  ASSERT_TRUE(drive_until([&] { return obs_.completion_count() == 1; }));
  EXPECT_EQ(obs_.completions[0].status, -ETIMEDOUT);
  EXPECT_EQ(dev_->residency(9), Residency::kAbsent);
  const DeviceStats s = dev_->stats();
  EXPECT_EQ(s.stage_errors, 1u);
  EXPECT_EQ(s.resident_bytes, 0u);
  EXPECT_EQ(s.pinned_bytes, 0u);
  EXPECT_EQ(s.pins, 0u);
  EXPECT_EQ(dev_->uring_stats().pool_stage_errors, 1u);
  EXPECT_EQ(dev_->fast_tier_stats().objects, 0u);
  EXPECT_EQ(pool_.stats_calls, 1);
  pool_.fail = 0;
  ASSERT_EQ(dev_->stage(9), 0);  // the size is asked again
  EXPECT_EQ(pool_.stats_calls, 2);
  ASSERT_TRUE(drive_until([&] { return obs_.completion_count() == 2; }));
  EXPECT_EQ(obs_.completions[1].status, 0);
  EXPECT_EQ(read_back(9), object_bytes(9, 1u << 20));
}

TEST_F(PoolStaging, TheDeviceWaitsForPoolReadsIntoItsFastTierBeforeGoing) {
  pool_put(5, 2u << 20);
  pool_.hold = true;
  ASSERT_EQ(dev_->stage(5), 0);
  EXPECT_FALSE(dev_->idle());
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    pool_.release();
  });
  dev_.reset();  // must not free the arena while the read may still write into it
  later.join();
  std::vector<ClusterRead> left;
  EXPECT_EQ(pool_.reap(&left), 0u);  // the device took the completion
}

class KeepLocal : public PoolStaging {
 protected:
  KeepLocal() { keep_local_ = true; }
};

TEST_F(KeepLocal, WhatIsStagedFromThePoolIsWrittenToTheStore) {
  pool_put(11, 300000);
  ASSERT_EQ(dev_->stage(11), 0);
  ASSERT_TRUE(drive_until([&] { return obs_.completion_count() == 1; }));
  EXPECT_EQ(obs_.completions[0].status, 0);
  const auto info = store_->lookup(11);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->size, 300000u);
  EXPECT_EQ(info->checksum, checksum64(object_bytes(11, 300000).data(), 300000));
  EXPECT_EQ(dev_->uring_stats().kept_local, 1u);
  EXPECT_EQ(dev_->uring_stats().keep_local_errors, 0u);
}

}  // namespace
}  // namespace tempo::test
