// A store on the build directory's disk with deterministic objects, a uring device over it,
// and an observer that records what the device reports.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <vector>

#include "../store/test_util.h"
#include "core/clock.h"
#include "uring/uring_device.h"

namespace tempo::test {

class RecordingObserver : public DeviceObserver {
 public:
  void on_stage_complete(const StageCompletion& c) override {
    std::lock_guard lock(mu_);
    completions.push_back(c);
  }
  void on_resident(ObjectKey key) override {
    std::lock_guard lock(mu_);
    resident.push_back(key);
  }
  void on_evicted(ObjectKey key) override {
    std::lock_guard lock(mu_);
    evicted.push_back(key);
  }
  size_t completion_count() {
    std::lock_guard lock(mu_);
    return completions.size();
  }

  std::mutex mu_;
  std::vector<StageCompletion> completions;
  std::vector<ObjectKey> resident;
  std::vector<ObjectKey> evicted;
};

class DeviceFixture : public ::testing::Test {
 protected:
  void open_store() {
    if (!io_uring_usable()) GTEST_SKIP() << "io_uring is not available to this process";
    ASSERT_FALSE(dir_.path().empty());
    ObjectStoreOptions o;
    o.dir = dir_.path() + "/store";
    ASSERT_EQ(ObjectStore::open(o, &store_), 0);
  }
  void put(ObjectKey key, size_t size) {
    ASSERT_EQ(store_->put(key, object_bytes(key, size)), 0);
    sizes_[key] = size;
  }
  void open_device(UringDeviceOptions o) {
    std::string err;
    ASSERT_EQ(UringDevice::create(*store_, o, clock_, &dev_, &err), 0) << err;
    dev_->set_observer(&obs_);
  }
  static UringDeviceOptions options(uint64_t fast_bytes) {
    UringDeviceOptions o;
    o.fast_tier.bytes = fast_bytes;
    o.fast_tier.prefault = false;
    o.request_bytes = 1u << 20;
    return o;
  }
  // Drives completions until `pred` holds (or 20 s pass).
  template <typename Pred>
  bool drive_until(Pred pred) {
    const TimeNs deadline = clock_.now() + 20 * kNsPerSec;
    while (!pred()) {
      if (clock_.now() > deadline) return false;
      dev_->wait(10 * kNsPerMs);
    }
    return true;
  }
  // The object's bytes as the device holds them (the caller holds a pin).
  std::vector<std::byte> read_back(ObjectKey key) {
    std::vector<std::span<const std::byte>> ext;
    EXPECT_EQ(dev_->resident_extents(key, &ext), 0);
    std::vector<std::byte> out;
    for (auto e : ext) out.insert(out.end(), e.begin(), e.end());
    return out;
  }

  ScratchDir dir_;
  MonotonicClock clock_;
  std::unique_ptr<ObjectStore> store_;
  std::unique_ptr<UringDevice> dev_;
  RecordingObserver obs_;
  std::unordered_map<ObjectKey, size_t> sizes_;
};

}  // namespace tempo::test
