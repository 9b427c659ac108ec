// A real-device stack for tempo-replay: the object store on this machine's disk (the SSD
// tier, io_uring O_DIRECT), a DRAM arena fast tier, the uring device, the provider and the
// controller on the wall clock. One thread: a RealtimeLoop runs the engine's timed work,
// the controller's tick and the device's completions (its eventfd).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "controller/periodic_tick.h"
#include "core/realtime_loop.h"
#include "serving_stack.h"
#include "store/object_store.h"
#include "study/dax_l1.h"
#include "uring/uring_device.h"

namespace tempo {

struct UringBackendOptions {
  std::string store_dir;  // created on first use and kept: later runs reuse its objects
  uint64_t fast_tier_bytes = 0;
  uint32_t queue_depth = 16;
  uint32_t request_bytes = 4u << 20;
  double staging_rate_bps = 0;  // reported by the device's info()
};

// The store and the device, opened once and shared by the runs of an experiment (mapping and
// prefaulting a multi-GiB arena per run would dominate); each run starts from an empty
// fast tier.
class UringBackend {
 public:
  static int create(const UringBackendOptions& options, std::unique_ptr<UringBackend>* out,
                    std::string* error);
  const Clock& clock() const { return clock_; }
  ObjectStore& store() { return *store_; }
  UringDevice& device() { return *device_; }

 private:
  UringBackend() = default;
  MonotonicClock clock_;
  std::unique_ptr<ObjectStore> store_;
  std::unique_ptr<UringDevice> device_;  // declared after the store it reads
};

class UringServingStack final : public ServingStack {
 public:
  // A run on `backend` (which outlives it): empties the fast tier, then builds the provider
  // and controller. Throws std::invalid_argument for an invalid configuration.
  UringServingStack(UringBackend& backend, const ProviderConfig& provider,
                    const ControllerConfig& controller);
  ~UringServingStack() override;

  Scheduler& scheduler() override { return loop_; }
  Device& device() override { return *device_; }
  Provider& provider() override { return *provider_; }
  Controller& controller() override { return *controller_; }
  // Writes the object to the store unless the store already holds it at that size. Its
  // bytes are a function of the key, so any later read can be checked.
  int preload(const KvObject& object, std::string* error) override;
  void run(const std::function<bool()>& done) override;
  // Copies the objects' fast-tier extents into a host buffer (the GPU copy's stand-in).
  uint64_t copy_out(std::span<const ObjectKey> keys) override;
  // dax-l1: reads every object through the device memory path, granule by granule.
  int read_ordinary(std::span<const ObjectKey> keys, bool dax_l1,
                    std::function<void(int)> done) override;

  uint64_t preloaded_bytes_written() const { return written_; }

 private:
  UringBackend& backend_;
  UringDevice* device_;
  RealtimeLoop loop_;
  std::unique_ptr<Provider> provider_;
  std::unique_ptr<Controller> controller_;
  std::unique_ptr<PeriodicTick> tick_;
  DaxL1Reader dax_l1_;
  std::vector<std::byte> sink_;  // where copy_out and dax-l1 reads land
  uint64_t written_ = 0;
};

// The bytes tempo-replay stores for an object: a pattern derived from its key.
void fill_object_pattern(ObjectKey key, std::span<std::byte> out);

}  // namespace tempo
