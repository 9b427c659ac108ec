// The uring device behind the C ABI: an ObjectStore (uring.store_path) read with io_uring
// into a DRAM or Device-DAX fast tier, on the monotonic clock. An event-loop thread waits
// (epoll) on the device's completion eventfd, the controller's tick timer and a stop
// eventfd, and takes the instance mutex to deliver completions and ticks. With
// `cluster.backend` set, a cluster tier lies below the store: puts write through to it,
// and the device stages what the store lacks from it (Documentation/cluster.md).
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "cluster/cluster_tier.h"
#include "instance/instance.h"
#include "store/object_store.h"
#include "uring/uring_device.h"

namespace tempo {

class UringInstance final : public ControllerInstance {
 public:
  // 0, or a negative errno with `error` saying why (store, fast tier or ring setup).
  static int create(const Settings& settings, std::unique_ptr<Instance>* out, std::string* error);
  ~UringInstance() override;

  std::string_view device_kind() const override { return "uring"; }
  int extents(ClaimId id, std::vector<std::span<const std::byte>>* out) override;
  // Refuses to replace an object (-EEXIST): objects are read-only while they may be reused.
  // Written through to the cluster tier without waiting for it.
  int store_put(ObjectKey key, std::span<const std::byte> data) override;

 private:
  UringInstance() = default;
  bool advance_locked(std::unique_lock<std::mutex>& lock, TimeNs deadline) override;
  void loop();

  MonotonicClock clock_;
  std::unique_ptr<ObjectStore> store_;
  std::unique_ptr<ClusterTier> cluster_;  // null without cluster.backend
  std::unique_ptr<UringDevice> device_;
  std::unique_ptr<Provider> provider_;
  std::unique_ptr<Controller> controller_;
  int epoll_fd_ = -1;
  int timer_fd_ = -1;
  int stop_fd_ = -1;
  std::thread thread_;
};

}  // namespace tempo
